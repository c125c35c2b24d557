'use strict';
const { DepthLimitedParser } = require('./depth-limited-parser');

/** Elements whose content a reader never sees as text. */
const INVISIBLE = new Set(['script', 'style', 'noscript', 'template', 'svg', 'math', 'iframe', 'object', 'canvas']);

/**
 * Phrasing elements a browser lays out inside the line: "Tues<span>day</span>", a drop cap's
 * "<span>T</span>he" or "finan<wbr>cial" read as one word. Every other tag (blocks, br, img, form
 * controls, unknown elements) separates words.
 */
const INLINE = new Set(['a', 'abbr', 'b', 'bdi', 'bdo', 'cite', 'code', 'data', 'del', 'dfn', 'em', 'font', 'i', 'ins', 'kbd', 'mark', 'q', 's', 'samp', 'small', 'span', 'strike', 'strong', 'sub', 'sup', 'time', 'tt', 'u', 'var', 'wbr']);

/** Soft hyphen, zero-width space, word joiner and BOM: places a line may (not) break, never shown inside a word. */
const INVISIBLE_IN_WORDS = /[\u00ad\u200b\u2060\ufeff]/g;

/**
 * The text a reader sees on an HTML page: entities decoded, tags other than inline ones turned into word breaks,
 * invisible elements and characters dropped, whitespace collapsed. Linear in the page (DepthLimitedParser bounds the
 * parser's nesting).
 * @param {string} html
 * @returns {string}
 */
function visibleText(html) {
  /** @type {string[]} */
  const parts = [];
  let hidden = 0;
  const parser = new DepthLimitedParser(
    {
      onopentagname(name) {
        if (INVISIBLE.has(name)) hidden++;
        if (!INLINE.has(name)) parts.push(' ');
      },
      onclosetag(name) {
        if (INVISIBLE.has(name) && hidden > 0) hidden--;
        if (!INLINE.has(name)) parts.push(' ');
      },
      ontext(text) {
        if (hidden === 0) parts.push(text);
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  return parts.join('').replace(INVISIBLE_IN_WORDS, '').replace(/\s+/g, ' ').trim();
}

module.exports = { visibleText };
