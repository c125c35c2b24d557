import { DepthLimitedParser, MAX_PARSER_DEPTH } from '@cards/html-parsing';

/** Elements whose content htmlparser2 9 reads as text up to their end tag (no tags in it). */
const TEXT_ONLY = new Set(['script', 'style', 'title', 'textarea']);
/**
 * Of those, the ones htmlparser2 8 (sanitize-html's) reads so too: their text is written as it came. Other text that
 * was read as text only has `<` written `&lt;` (a textarea's, or a title's unwrapped past the depth limit), or it
 * could become thousands of tags for the next parser.
 */
const TEXT_ONLY_IN_BOTH = new Set(['script', 'style', 'title']);
/** Between two pieces of text, so that what was between them in the input (now dropped) still separates them. */
const TEXT_BREAK = '<!---->';

export interface WellFormedHtmlOptions {
  /** Elements opened this deep or deeper lose their tags (their text stays). */
  maxDepth: number;
  /** Elements whose text is dropped when they lose their tags past `maxDepth` (what the sanitizer drops with them). */
  hiddenContent: ReadonlySet<string>;
}

interface OpenElement {
  name: string;
  written: boolean;
  hidden: boolean;
}

/**
 * The same document as HTML in which every end tag closes the innermost open element and at most `maxDepth`
 * elements are open: implied end tags written out (those of elements open at the end left to the end), stray end
 * tags, comments and declarations dropped, elements nested `maxDepth` deep or deeper unwrapped. Text and attribute
 * values are copied as written (entities left for the next parser to decode), so htmlparser2 reading the result
 * sees the elements, attributes and text it sees in `html` whenever `html` nests less deeply (up to how a textarea's
 * content is read). Linear in the input (DepthLimitedParser); a parser that searches its open elements for every end
 * tag reads the result in linear time too.
 */
export function wellFormedHtml(html: string, options: WellFormedHtmlOptions): string {
  const out: string[] = [];
  const open: OpenElement[] = [];
  let hidden = 0;
  let afterText = false;
  let textEnd = 0;
  let ending = false;
  // A start tag cut off by the end of the input is reported by name only and, unless the parser keeps it beside
  // its stack (past its depth limit), closed at the end like any other: that close is not the enclosing element's.
  let cutOff = false;
  const parser: DepthLimitedParser = new DepthLimitedParser(
    {
      onopentagname(name) {
        cutOff = !parser.isVoidElement(name) && open.length < MAX_PARSER_DEPTH;
      },
      onopentag(name, attribs) {
        cutOff = false;
        const write = open.length < options.maxDepth;
        if (write) {
          out.push(`<${name}${attributes(attribs)}>`);
          afterText = false;
        }
        if (parser.isVoidElement(name)) return;
        const element = { name, written: write, hidden: !write && options.hiddenContent.has(name) };
        if (element.hidden) hidden++;
        open.push(element);
      },
      onclosetag(name) {
        if (cutOff) {
          cutOff = false;
          return;
        }
        if (parser.isVoidElement(name)) return;
        const element = open.pop();
        if (!element) return;
        if (element.hidden) hidden--;
        // Elements still open at the end are left for the next parser to close there too (the text before them then
        // ends the input as it did: htmlparser2 8 drops a trailing `&#x`, for one).
        if (element.written && !ending) {
          out.push(`</${element.name}>`);
          afterText = false;
        }
      },
      ontext(text) {
        if (hidden > 0) return;
        const inside = open.at(-1);
        if (inside?.written && TEXT_ONLY_IN_BOTH.has(inside.name)) {
          out.push(text);
          return;
        }
        if (afterText) out.push(TEXT_BREAK);
        if (ending) {
          // Text that only the end of the input ends (the rest of a cut-off declaration, instruction or `<`) is read
          // as written, entities not decoded and `<` not starting a tag: it is written so that it reads so again.
          out.push(text.replaceAll('&', '&amp;').replaceAll('<', '&lt;'));
        } else {
          out.push(inside && TEXT_ONLY.has(inside.name) ? text.replaceAll('<', '&lt;') : text);
        }
        afterText = true;
        textEnd = parser.endIndex + 1;
      },
    },
    { decodeEntities: false },
  );
  parser.write(html);
  ending = true;
  parser.end();
  // Text that something dropped here followed must not end the document (an entity there would read differently).
  if (afterText && textEnd < html.length) out.push(TEXT_BREAK);
  return out.join('');
}

function attributes(attribs: Record<string, string>): string {
  let out = '';
  for (const [name, value] of Object.entries(attribs)) out += ` ${name}="${value.replaceAll('"', '&quot;')}"`;
  return out;
}
