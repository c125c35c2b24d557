/**
 * HTML from outside (a paste, the HTML view, a stored card) read without a Content-Security-Policy refusal.
 *
 * The page's CSP (style-src 'self', no inline script) refuses style attributes and event handlers in every document
 * the page parses, inert ones too (a DOMParser document, a template, document.implementation's documents), and logs a
 * refusal for each. So the HTML is first read by the small tokenizer below, which follows the HTML standard's tag and
 * attribute states (quoted values holding '>', '<span/style=...>', comments, raw-text elements), and written out again
 * with only the attributes the card editor reads: href, start, dir, and style and class renamed to data-pasted-*, which
 * nothing applies or runs. Every tag the browser's parser then sees is one this writer wrote, every other '<' is
 * written as '&lt;', so no attribute reaches the parser that was not chosen here, whatever the tokenizer made of it.
 */

/** Elements whose content is not text to keep (the cards service's sanitizer removes the first four with their text). */
const DROPPED_WITH_CONTENT = new Set(['script', 'style', 'textarea', 'title', 'iframe', 'noembed', 'noframes']);
/** Elements whose start and end tags are not written (their content is): they would change how the rest parses. */
const NOT_WRITTEN = new Set(['html', 'head', 'body', 'meta', 'link', 'base', 'svg', 'math', 'template', 'img', 'image', 'object', 'embed', 'input', 'select', 'button', 'option', 'optgroup', 'datalist', 'video', 'audio', 'source', 'track', 'picture', 'canvas']);
/**
 * Elements written as a <div>: blocks whose own tags would change how the rest parses (a form in a form is dropped) or
 * hide their text from the editor (ProseMirror skips a <noscript>), whose text still stands apart from its neighbours'.
 */
const WRITTEN_AS_DIV = new Set(['form', 'noscript']);
/**
 * The attribute of a <span> written for a block the browser's parser would not keep where the cards service does
 * (blocks-apart.ts, @cards/card-rules SEPARATED_BLOCK_TAGS), its value the element's name: an xmp or a plaintext (the
 * browser reads the rest as raw text; the service reads it as HTML), a frameset or frame (ignored in a body), and a
 * table's parts outside a table (caption, thead, tbody, tfoot, tr, td, th: the browser drops their tags, which glued
 * "<td>Year</td><td>Rate</td>" into "YearRate"). A span, not a div, so it stays in a paragraph as the service keeps it
 * (a line of it). No attribute from the input is written under this name (KEPT_ATTRIBUTES), so only this writer sets it.
 */
export const SEPARATED_BLOCK = 'data-separated-block';
const WRITTEN_AS_SEPARATED_SPAN = new Set(['xmp', 'plaintext', 'frameset', 'frame']);
const TABLE_PARTS = new Set(['caption', 'thead', 'tbody', 'tfoot', 'tr', 'td', 'th']);
/** Void elements among those written as a span: the span is closed at once. */
const VOID_SEPARATED = new Set(['frame']);
/**
 * Elements whose text the cards service drops with them (rules.ts NON_TEXT_TAGS beyond the raw-text ones above: an
 * option) or drops in blocks-apart.ts (a ruby's rp), which end where htmlparser2, the service's parser, ends them
 * (OpenElements): "<select><option>A<option>B</select>" keeps neither A nor B, text after an unclosed option in a
 * paragraph goes up to the paragraph's end. Nothing of them is written.
 */
const HIDDEN_WITH_CONTENT = new Set(['option', 'rp']);
/** A ruby's annotation: written as its text in parentheses after the base, as the cards service writes it ("漢字(kanji)"). */
const ANNOTATION = 'rt';
const KEPT_ATTRIBUTES: Record<string, string> = { href: 'href', start: 'start', dir: 'dir', style: 'data-pasted-style', class: 'data-pasted-class', 'data-pm-slice': 'data-pm-slice' };
const TAG_NAME = /^[a-z][a-z0-9:_-]*$/;

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f';
const isLetter = (c: string | undefined) => c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));

interface Tag {
  name: string;
  end: boolean;
  attributes: [string, string][];
  /** Index just past the tag's '>'; -1 when the input ends inside the tag (the standard then drops it). */
  next: number;
}

/** Reads the tag starting at html[at] ('<' then a letter, or '</' then a letter). */
function readTag(html: string, at: number): Tag {
  const end = html[at + 1] === '/';
  let i = at + (end ? 2 : 1);
  let name = '';
  while (i < html.length && !isSpace(html[i]) && html[i] !== '/' && html[i] !== '>') name += html[i++];
  const attributes: [string, string][] = [];
  for (;;) {
    while (isSpace(html[i]) || html[i] === '/') i++;
    if (i >= html.length) return { name: name.toLowerCase(), end, attributes, next: -1 };
    if (html[i] === '>') return { name: name.toLowerCase(), end, attributes, next: i + 1 };
    // Attribute name: a first '=' belongs to it.
    let attribute = html[i++]!;
    while (i < html.length && !isSpace(html[i]) && html[i] !== '/' && html[i] !== '>' && html[i] !== '=') attribute += html[i++];
    while (isSpace(html[i])) i++;
    let value = '';
    if (html[i] === '=') {
      i++;
      while (isSpace(html[i])) i++;
      const quote = html[i];
      if (quote === '"' || quote === "'") {
        const close = html.indexOf(quote, i + 1);
        if (close < 0) return { name: name.toLowerCase(), end, attributes, next: -1 };
        value = html.slice(i + 1, close);
        i = close + 1;
      } else {
        while (i < html.length && !isSpace(html[i]) && html[i] !== '>') value += html[i++];
      }
    }
    attributes.push([attribute.toLowerCase(), value]);
  }
}

/** Where the raw text of a <name> element ends: its '</name' followed by a space, '/' or '>' (or the input's end). */
function rawTextEnd(html: string, from: number, name: string): number {
  const lower = html.toLowerCase();
  for (let i = lower.indexOf(`</${name}`, from); i >= 0; i = lower.indexOf(`</${name}`, i + 1)) {
    const after = lower[i + 2 + name.length];
    if (after === undefined || isSpace(after) || after === '/' || after === '>') return i;
  }
  return html.length;
}

const escapeText = (text: string) => text.replace(/</g, '&lt;').replace(/>/g, '&gt;');
const escapeAttribute = (value: string) => value.replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const FORM_TAGS = new Set(['input', 'option', 'optgroup', 'select', 'button', 'datalist', 'textarea']);
const P_TAG = new Set(['p']);
const DD_DT = new Set(['dd', 'dt']);
const RT_RP = new Set(['rt', 'rp']);
/** htmlparser2's (9) implied ends: a start tag of the key closes the innermost open elements while they are in the set. */
const IMPLIES_CLOSE: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['tr', new Set(['tr', 'th', 'td'])],
  ['th', new Set(['th'])],
  ['td', new Set(['thead', 'th', 'td'])],
  ['body', new Set(['head', 'link', 'script'])],
  ['li', new Set(['li'])],
  ...['p', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'address', 'article', 'aside', 'blockquote', 'details', 'div', 'dl', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'header', 'hr', 'main', 'nav', 'ol', 'pre', 'section', 'table', 'ul'].map((tag) => [tag, P_TAG] as const),
  ...['select', 'input', 'output', 'button', 'datalist', 'textarea'].map((tag) => [tag, FORM_TAGS] as const),
  ['option', new Set(['option'])],
  ['optgroup', new Set(['optgroup', 'option'])],
  ['dd', DD_DT],
  ['dt', DD_DT],
  ['rt', RT_RP],
  ['rp', RT_RP],
  ['tbody', new Set(['thead', 'tbody'])],
  ['tfoot', new Set(['thead', 'tbody'])],
]);
/** htmlparser2's void elements: never open. */
const PARSER_VOID = new Set(['area', 'base', 'basefont', 'br', 'col', 'command', 'embed', 'frame', 'hr', 'img', 'input', 'isindex', 'keygen', 'link', 'meta', 'param', 'source', 'track', 'wbr']);

/**
 * The elements htmlparser2 (the cards service's parser) holds open, by name, to know where it ends an option, an rp or
 * an rt whose end tag is left out: a start tag closes what IMPLIES_CLOSE says, an end tag closes the innermost element of
 * its name and every element inside it (none open: ignored), the end of the input closes all. Linear: an end tag of an
 * element not open is found so by a count, and each element is closed once.
 */
class OpenElements {
  private readonly names: string[] = [];
  private readonly counts = new Map<string, number>();

  get depth(): number {
    return this.names.length;
  }

  /** A start tag: `closed` is called for each element it closes (innermost first, with its depth); then it is open. */
  open(name: string, closed: (name: string, depth: number) => void): void {
    const implied = IMPLIES_CLOSE.get(name);
    while (implied && this.names.length > 0 && implied.has(this.names[this.names.length - 1]!)) this.pop(closed);
    if (PARSER_VOID.has(name)) return;
    this.names.push(name);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
  }

  /** An end tag: closes the innermost open element of that name and those inside it, or nothing. */
  close(name: string, closed: (name: string, depth: number) => void): void {
    if (!this.counts.get(name)) return;
    for (;;) if (this.pop(closed) === name) return;
  }

  /** The end of the input: every element closes. */
  closeAll(closed: (name: string, depth: number) => void): void {
    while (this.names.length > 0) this.pop(closed);
  }

  private pop(closed: (name: string, depth: number) => void): string {
    const name = this.names.pop()!;
    this.counts.set(name, this.counts.get(name)! - 1);
    closed(name, this.names.length);
    return name;
  }
}

/**
 * The HTML written out again with only the kept attributes (style and class renamed), without comments, scripts, style
 * sheets and the other elements in DROPPED_WITH_CONTENT (with their content), without the tags of NOT_WRITTEN, with
 * those of WRITTEN_AS_DIV written as <div>, the blocks the browser would not keep (SEPARATED_BLOCK) as marked spans, an
 * option's and an rp's content left out and an rt's written in parentheses (where the cards service's parser ends them).
 */
export function inertHtml(html: string): string {
  let out = '';
  let i = 0;
  // Tables open (by their tags): a table's part is written as itself only in one.
  let tables = 0;
  const open = new OpenElements();
  // The depth of the open option or rp whose content is being left out (-1: none), and of the open rts written so far.
  let hiddenAt = -1;
  const annotations: number[] = [];
  const closed = (name: string, depth: number) => {
    if (depth === hiddenAt) hiddenAt = -1;
    else if (name === ANNOTATION && annotations[annotations.length - 1] === depth) {
      annotations.pop();
      out += ')';
    }
  };
  while (i < html.length) {
    const lt = html.indexOf('<', i);
    if (lt < 0) {
      if (hiddenAt < 0) out += escapeText(html.slice(i));
      break;
    }
    if (hiddenAt < 0) out += escapeText(html.slice(i, lt));
    const next = html[lt + 1];
    if (isLetter(next) || (next === '/' && isLetter(html[lt + 2]))) {
      const tag = readTag(html, lt);
      if (tag.next < 0) break;
      i = tag.next;
      if (tag.end) open.close(tag.name, closed);
      else {
        open.open(tag.name, closed);
        if (hiddenAt < 0 && HIDDEN_WITH_CONTENT.has(tag.name)) hiddenAt = open.depth - 1;
        else if (hiddenAt < 0 && tag.name === ANNOTATION) {
          annotations.push(open.depth - 1);
          out += '(';
        }
      }
      if (!tag.end && DROPPED_WITH_CONTENT.has(tag.name)) {
        const close = rawTextEnd(html, i, tag.name);
        const after = close < html.length ? readTag(html, close).next : -1;
        i = after < 0 ? html.length : after;
        // Its raw text holds no tag: it is closed at its end tag, or at the input's end.
        if (after < 0) open.closeAll(closed);
        else open.close(tag.name, closed);
        continue;
      }
      if (hiddenAt >= 0 || NOT_WRITTEN.has(tag.name) || HIDDEN_WITH_CONTENT.has(tag.name) || tag.name === ANNOTATION || !TAG_NAME.test(tag.name)) continue;
      if (tag.name === 'table') tables = tag.end ? Math.max(0, tables - 1) : tables + 1;
      if (WRITTEN_AS_SEPARATED_SPAN.has(tag.name) || (tables === 0 && TABLE_PARTS.has(tag.name))) {
        if (tag.end) out += VOID_SEPARATED.has(tag.name) ? '' : '</span>';
        else out += `<span ${SEPARATED_BLOCK}="${tag.name}">${VOID_SEPARATED.has(tag.name) ? '</span>' : ''}`;
        continue;
      }
      const name = WRITTEN_AS_DIV.has(tag.name) ? 'div' : tag.name;
      if (tag.end) {
        out += `</${name}>`;
        continue;
      }
      out += `<${name}`;
      const written = new Set<string>();
      for (const [attribute, value] of tag.attributes) {
        const kept = KEPT_ATTRIBUTES[attribute];
        // The first of repeated attributes counts, as in the browser.
        if (kept && !written.has(kept)) out += ` ${kept}="${escapeAttribute(value)}"`;
        if (kept) written.add(kept);
      }
      out += '>';
    } else if (html.startsWith('<!--', lt)) {
      // A comment ends at '-->' (or abruptly at '<!-->' and '<!--->').
      if (html.startsWith('<!-->', lt)) i = lt + 5;
      else if (html.startsWith('<!--->', lt)) i = lt + 6;
      else {
        const close = html.indexOf('-->', lt + 4);
        i = close < 0 ? html.length : close + 3;
      }
    } else if (next === '!' || next === '?' || next === '/') {
      // A doctype, CDATA, a Word's conditional (<![if ...]>) or a stray '</...': a bogus comment up to the next '>'.
      const close = html.indexOf('>', lt);
      i = close < 0 ? html.length : close + 1;
    } else {
      if (hiddenAt < 0) out += '&lt;';
      i = lt + 1;
    }
  }
  // The input's end closes what is open: an rt's annotation ends there too.
  open.closeAll(closed);
  return out;
}

/** The body of an inert document (nothing in it runs or loads) holding the HTML as inertHtml writes it. */
export function parseInertHtml(html: string): HTMLElement {
  return new DOMParser().parseFromString(inertHtml(html), 'text/html').body;
}
