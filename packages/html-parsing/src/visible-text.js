'use strict';
const { DepthLimitedParser } = require('./depth-limited-parser');

/** Elements whose content a reader never sees as text. */
const INVISIBLE = new Set(['script', 'style', 'noscript', 'template', 'svg', 'math', 'iframe', 'object', 'canvas']);

/**
 * The text a reader sees on an HTML page: entities decoded, tags turned into word breaks, invisible elements dropped,
 * whitespace collapsed. Linear in the page (DepthLimitedParser bounds the parser's nesting).
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
        parts.push(' ');
      },
      onclosetag(name) {
        if (INVISIBLE.has(name) && hidden > 0) hidden--;
        parts.push(' ');
      },
      ontext(text) {
        if (hidden === 0) parts.push(text);
      },
    },
    { decodeEntities: true, lowerCaseTags: true },
  );
  parser.write(html);
  parser.end();
  return parts.join('').replace(/\s+/g, ' ').trim();
}

module.exports = { visibleText };
