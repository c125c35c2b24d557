import { dirname } from 'node:path';
import fc from 'fast-check';
import sanitizeHtml from 'sanitize-html';
import { CARD_SANITIZE_OPTIONS, CARD_WELL_FORMED_OPTIONS as WELL_FORMED, MAX_NESTING_DEPTH, cardTextFromHtml } from '../src/domain/rules';
import { wellFormedHtml } from '../src/domain/well-formed-html';

/** sanitize-html keeping every element and attribute: the parse it is given, written out again. */
const KEEP_EVERYTHING: sanitizeHtml.IOptions = { allowedTags: false, allowedAttributes: false, allowVulnerableTags: true, disallowedTagsMode: 'discard' };

const TOKENS = [
  '<p>', '</p>', '<P class="a" CLASS=b>', '<b>', '</b>', '<i>', '</I>', '<strong>', '</strong>', '<em>', '</em>', '<span style="x">', '</span>',
  '<div id=d>', '</div>', '<h2>', '</h2>', '<ul>', '</ul>', '<ol>', '</ol>', '<li>', '</li>', '<blockquote>', '</blockquote>', '<br>', '<br/>',
  '</br>', '<hr>', '<img src=x alt="a &amp; b">', '<a href="https://e.com/?a=1&amp;b=2">', '<a href=\'https://e.com/"q"\'>', '<a href=//x>',
  '<a href="javascript:x()">', '<a href="https://e.com/&quot;x&quot">', '<a HREF=https://e.com/&copy>', '</a>', '<table>', '<tr>', '<td>',
  '</td>', '</table>', '<select>', '<option>', '</option>', '<svg>', '</svg>', '<path d="1"/>', '<b/>', '<math>', '<mi>', '</mi>',
  '<title>', '</title>', '<script>if (a < b) x("</p>")</script>', '<style>p{}</style>', '<!-- c -->', '<!doctype html>', '<?xml v?>',
  '<![CDATA[d]]>', '</nope>', '</>', '< b', '<', '>', '&', '&amp; ', '&amp', '&am', '&lt;', '&#60', '&#x3c;', '&notin;', '&notit;',
  '&nbsp;', ';', 'word ', 'more words ', '"quoted" ', "it's ", '\n', '\r', '\t', '\u0000',
  // Markup a person would not write but a parser must read somehow.
  '<a <b>', '<a =x>', '<a "x=1>', "<a x='<'>", '<a x=&amp>', '<a x="&quot">', '<a x="&#34">', '<a x="&">', '<a\nhref="https://a">', '<a/b>',
  '<script>', '</script>', '<style>', '</style', '</title >', '<foreignObject>', '</foreignObject>', '<desc>', '<x-y:z>', '</x-y:z>', '&#',
  '&#x', '&#0;', '&#128;', '&#xD800;', '&ampx', '&AMP;', '<!-->', '<!--->', '<!-- -- -->', '</b x>', '<li/>', '<p/>', '<input value="v">',
  '<!', '<?', '</ ', '<1>', '<#>',
];
/** How a document may stop short: inside a tag, an attribute, an entity, a comment or a declaration. */
const ENDINGS = ['', '<b', '<b x', '<a href="https', '&am', '&#x', '<!-- c', '</b', '<script>x', '<title>a<', '<a x=y', '<!doctype', '<?&#6', '<'];

const documents = fc
  .tuple(fc.array(fc.constantFrom(...TOKENS), { maxLength: 120 }), fc.constantFrom(...ENDINGS))
  .map(([tokens, ending]) => tokens.join('') + ending);

/**
 * What sanitize-html's own parser (htmlparser2 8, a different copy from the one the services use) does while
 * `run` runs: end tags read, open elements searched for them (it searches from the innermost one), deepest nesting.
 */
function sanitizerParserWork(run: () => void): { endTags: number; searched: number; deepest: number } {
  const { Parser } = require(require.resolve('htmlparser2', { paths: [dirname(require.resolve('sanitize-html'))] })) as {
    Parser: { prototype: Record<string, (...args: number[]) => void> };
  };
  type Internals = { stack: string[]; getSlice(start: number, end: number): string };
  const work = { endTags: 0, searched: 0, deepest: 0 };
  const close = Parser.prototype.onclosetag!;
  const open = Parser.prototype.onopentagname!;
  const closeSpy = jest.spyOn(Parser.prototype, 'onclosetag').mockImplementation(function (this: Internals, start: number, end: number) {
    const position = this.stack.lastIndexOf(this.getSlice(start, end).toLowerCase());
    work.endTags++;
    work.searched += position < 0 ? this.stack.length : this.stack.length - position;
    close.call(this, start, end);
  });
  const openSpy = jest.spyOn(Parser.prototype, 'onopentagname').mockImplementation(function (this: Internals, start: number, end: number) {
    open.call(this, start, end);
    work.deepest = Math.max(work.deepest, this.stack.length);
  });
  try {
    run();
  } finally {
    closeSpy.mockRestore();
    openSpy.mockRestore();
  }
  return work;
}

describe('wellFormedHtml before sanitize-html', () => {
  it('gives the same card HTML as sanitize-html on the raw input, for documents nested less than the limit', () => {
    fc.assert(
      fc.property(documents, (html) => {
        expect(sanitizeHtml(wellFormedHtml(html, WELL_FORMED), CARD_SANITIZE_OPTIONS)).toBe(sanitizeHtml(html, CARD_SANITIZE_OPTIONS));
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps every element, attribute and piece of text: sanitize-html allowing everything gives the same HTML', () => {
    fc.assert(
      fc.property(documents, (html) => {
        expect(sanitizeHtml(wellFormedHtml(html, WELL_FORMED), KEEP_EVERYTHING)).toBe(sanitizeHtml(html, KEEP_EVERYTHING));
      }),
      { numRuns: 1000 },
    );
  });

  it("hands sanitize-html's parser only end tags of the innermost open element, so it never searches its open elements", () => {
    fc.assert(
      fc.property(documents, (html) => {
        const work = sanitizerParserWork(() => sanitizeHtml(wellFormedHtml(html, WELL_FORMED), CARD_SANITIZE_OPTIONS));
        expect(work.searched).toBe(work.endTags);
      }),
      { numRuns: 200 },
    );
  });

  it('20,000 unclosed tags and 20,000 stray end tags: the same card, and each end tag costs the sanitizer one look', () => {
    const text = Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ');
    const html = `<p>${text}</p>${'<b>'.repeat(20_000)}${'</i>'.repeat(20_000)}`;
    let card: ReturnType<typeof cardTextFromHtml> | undefined;
    const work = sanitizerParserWork(() => (card = cardTextFromHtml(html)));
    // Unfixed, sanitize-html's parser read 20,001 end tags and searched 400 million open elements for them.
    expect(work).toEqual({ endTags: 1, searched: 1, deepest: MAX_NESTING_DEPTH });
    expect(card).toEqual({ cardHtml: `<p>${text}</p>${'<b>'.repeat(MAX_NESTING_DEPTH)}${'</b>'.repeat(MAX_NESTING_DEPTH)}`, content: text });
  });

  it('past the limit: tags unwrapped, their text kept (a title\'s `<` as text), the content of scripts, styles, textareas and options dropped', () => {
    const deep = '<div>'.repeat(MAX_NESTING_DEPTH);
    const html = `${deep}<b>kept</b><script>a<b</script><style>p{}</style><option>o<i>i</i></option><title>t &amp; <b>t</title>&amp<br>;end`;
    // The elements still open at the end are left open, for the next parser to close at the end too.
    expect(wellFormedHtml(html, WELL_FORMED)).toBe(`${deep}kept<!---->t &amp; &lt;b>t<!---->&amp<!---->;end`);
  });

  it('copies text and attribute values as written, quoting attributes again', () => {
    expect(wellFormedHtml(`<A HREF='x"y' title=a&amp;b data-x>a &amp b &lt; c < d<!-- x -->e</a>f`, WELL_FORMED)).toBe(
      '<a href="x&quot;y" title="a&amp;b" data-x="">a &amp b &lt; c <!---->< d<!---->e</a>f',
    );
  });
});
