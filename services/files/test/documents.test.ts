import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_PARSER_DEPTH } from '@cards/html-parsing';
import { InvalidArgumentError } from '@cards/platform';
import { blocksFromHtml, blocksFromOdtContent, takeMarks } from '../src/adapters/documents/block-collector';
import { LibraryDocumentReader, hyperlinksIn } from '../src/adapters/documents/library-document-reader';
import { shortCause } from '../src/adapters/documents/reading-failure';
import { docxTextScan, odtTextPresence } from '../src/adapters/documents/text-presence';
import { splitIntoCards, textPresenceOf } from '../src/domain/card-splitter';
import { checkMagicBytes, checkMimeType, formatFromFileName } from '../src/domain/document-format';
import { UnreadableDocumentError } from '../src/domain/ports';
import { DEFAULT_PARSER_LIMITS } from '../src/adapters/documents/worker-parse';
import { deepestParserStack } from '../../../packages/html-parsing/test/parser-depth';
import { DRAWING_NAMESPACES, docxPackage, drawingTextBox, note, noteReference, numbered, numberingOf, pdfDocument, wp, type PdfLine } from './office-packages';

const FIXTURES = join(__dirname, '../../../test/fixtures/documents');
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const reader = new LibraryDocumentReader();
const docxHasText = (documentXml: string) => docxTextScan(documentXml) !== 'none';
const odtHasText = (contentXml: string) => odtTextPresence(contentXml) !== 'none';

describe('file type rules', () => {
  it('accepts the four extensions, case-insensitively, and refuses others', () => {
    expect(formatFromFileName('Report.DOCX')).toBe('docx');
    expect(formatFromFileName('a.b.odt')).toBe('odt');
    expect(formatFromFileName('x.doc')).toBe('doc');
    expect(formatFromFileName('x.pdf')).toBe('pdf');
    for (const bad of ['x.txt', 'pdf', 'x.pdf.exe', '', '../x.pdf', 'a\u0000.pdf']) expect(() => formatFromFileName(bad)).toThrow(InvalidArgumentError);
  });

  it('file names: at most 255 characters counted as code points; no DEL, C1 or bidirectional controls', () => {
    const emoji = '\u{1F600}';
    expect(formatFromFileName(` ${emoji.repeat(250)}.docx `)).toBe('docx');
    expect(() => formatFromFileName(`${emoji.repeat(251)}.docx`)).toThrow(/at most 255 characters/);
    for (const bad of ['a\u007fb.docx', 'a\u0085b.docx']) expect(() => formatFromFileName(bad)).toThrow(/control characters/);
    expect(() => formatFromFileName('x/y.docx')).toThrow('file_name: must not contain slashes');
    expect(formatFromFileName('Übersicht – 2024 «final» ☕.odt')).toBe('odt');
  });

  it('file names: no bidirectional embedding, override or isolate control, each named in the answer', () => {
    const named = {
      '\u202A': 'U+202A (left-to-right embedding)',
      '\u202B': 'U+202B (right-to-left embedding)',
      '\u202C': 'U+202C (pop directional formatting)',
      '\u202D': 'U+202D (left-to-right override)',
      '\u202E': 'U+202E (right-to-left override)',
      '\u2066': 'U+2066 (left-to-right isolate)',
      '\u2067': 'U+2067 (right-to-left isolate)',
      '\u2068': 'U+2068 (first strong isolate)',
      '\u2069': 'U+2069 (pop directional isolate)',
    };
    for (const [character, name] of Object.entries(named)) expect(() => formatFromFileName(`x${character}fdp.docx`)).toThrow(`file_name: must not contain ${name}`);
  });

  it('file names: no line or paragraph separator, direction mark or BOM inside, each named in the answer', () => {
    const named = { '\u2028': /U\+2028 \(line separator\)/, '\u2029': /U\+2029 \(paragraph separator\)/, '\u200F': /U\+200F \(right-to-left mark\)/, '\u061C': /U\+061C \(Arabic letter mark\)/, '\u200E': /U\+200E \(left-to-right mark\)/, '\uFEFF': /U\+FEFF \(byte order mark/ };
    for (const [character, message] of Object.entries(named)) expect(() => formatFromFileName(`report${character}2024.docx`)).toThrow(message);
    // Joiners stay allowed: emoji sequences and Persian words need them.
    expect(formatFromFileName('\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645 \u{1F469}\u200D\u{1F4BB}.pdf')).toBe('pdf');
  });

  it('MIME type must match the extension', () => {
    expect(checkMimeType('pdf', 'application/pdf')).toBe('application/pdf');
    expect(checkMimeType('doc', 'Application/MSWord; charset=binary')).toBe('application/msword');
    expect(() => checkMimeType('docx', 'application/pdf')).toThrow(/does not match a \.docx/);
  });

  it('magic bytes must match the format', () => {
    expect(() => checkMagicBytes('pdf', fixture('coffee.pdf'))).not.toThrow();
    expect(() => checkMagicBytes('doc', fixture('history.doc'))).not.toThrow();
    expect(() => checkMagicBytes('docx', fixture('energy.docx'))).not.toThrow();
    expect(() => checkMagicBytes('pdf', fixture('energy.docx'))).toThrow(/%PDF/);
    expect(() => checkMagicBytes('docx', fixture('coffee.pdf'))).toThrow(/zip/);
    expect(() => checkMagicBytes('doc', fixture('energy.docx'))).toThrow(/OLE/);
    expect(() => checkMagicBytes('pdf', fixture('coffee.pdf').subarray(0, 3000))).toThrow(/truncated/);
    expect(() => checkMagicBytes('doc', fixture('history.doc').subarray(0, 5000))).toThrow(/truncated/);
    expect(() => checkMagicBytes('pdf', Buffer.alloc(0))).toThrow(/empty/);
  });
});

describe('LibraryDocumentReader', () => {
  it('.docx (mammoth): headings, paragraphs and hyperlinks', async () => {
    const { blocks } = await reader.parse('docx', fixture('energy.docx'));
    expect(blocks.filter((b) => b.kind === 'heading').map((b) => b.text)).toEqual(['Solar Panels on Village Rooftops', 'Wind Turbines and Gearboxes', 'Short Remark', 'Pumped Hydro Storage']);
    expect(blocks[1]!.links).toEqual(['https://example.com/energy/solar-primer', 'https://example.org/energy/other']);
  });

  it('.odt (yauzl + htmlparser2): headings with levels, paragraphs and links', async () => {
    const { blocks } = await reader.parse('odt', fixture('marine.odt'));
    expect(blocks.filter((b) => b.kind === 'heading').map((b) => [b.text, b.level])).toEqual([
      ['Coral Reef Bleaching', 2],
      ['Kelp Forests', 2],
      ['Field Kit', 2],
      ['Plankton Sampling', 2],
    ]);
    const urchins = blocks.find((b) => b.text.startsWith('Sea urchins'))!;
    expect(urchins.links).toEqual(['https://example.com/marine/kelp-dives']);
    expect(urchins.html).toContain('<a href="https://example.com/marine/kelp-dives">kelp volunteer page</a>');
  });

  it('.doc (word-extractor): paragraphs and headings (by their paragraph styles), with hyperlink targets recovered from the field codes', async () => {
    const { blocks } = await reader.parse('doc', fixture('history.doc'));
    expect(blocks[0]).toMatchObject({ kind: 'heading', level: 2, text: 'Charters and Fairs' });
    expect(blocks.filter((b) => b.kind === 'heading').map((b) => b.text)).toEqual(['Charters and Fairs', 'Guilds and Apprentices', 'Aside', 'Plague and Recovery', 'Weights and Measures', 'Bridges and Tolls']);
    const towns = blocks.find((b) => b.text.startsWith('Many medieval towns'))!;
    expect(towns.links).toEqual(['https://example.com/history/charter-rolls']);
    // Anchored at the word where the paragraph shows the link's text, for a card cut from it.
    expect(towns.linkWords!.map((i) => towns.text.split(' ').slice(i, i + 2).join(' '))).toEqual(['charter rolls']);
  });

  it('.pdf (unpdf): paragraphs from line gaps, link annotations attached', async () => {
    const { blocks } = await reader.parse('pdf', fixture('coffee.pdf'));
    expect(blocks[0]!.text).toBe('Shade Grown Plantations');
    const shade = blocks.find((b) => b.text.startsWith('Coffee shrubs evolved'))!;
    expect(shade.text.endsWith('lists suitable companion trees for each altitude.')).toBe(true);
    expect(shade.links).toEqual(['https://example.com/coffee/shade-guide']);
    // Anchored at the word the link annotation starts on (its line is the one its box sits on, not the line above).
    expect(shade.linkWords!.map((i) => shade.text.split(' ').slice(i, i + 3).join(' '))).toEqual(['shade planting guide']);
    const drying = blocks.find((b) => b.links.includes('https://example.com/coffee/drying'))!;
    expect(drying.linkWords!.map((i) => drying.text.split(' ')[i])).toEqual(['drying']);
  });

  it('.pdf in two columns: the left column is read top to bottom, then the right, not row by row across both', async () => {
    // twocol.pdf (from the ingestion audit): 30 rows, each a sentence of six words "wN" in each column, the left column
    // holding w1246-w1251, w1258-w1263, ... and the right w1252-w1257, w1264-w1269, ...
    const { blocks } = await reader.parse('pdf', fixture('twocol.pdf'));
    const words = blocks.flatMap((b) => b.text.split(' ')).map((w) => Number(w.replace(/\D/g, '')));
    const column = (first: number) => Array.from({ length: 30 }, (_, row) => Array.from({ length: 6 }, (_, i) => first + row * 12 + i)).flat();
    expect(words).toEqual([...column(1246), ...column(1252)]);
    // The right column starts a new paragraph: its first line lies above the left column's last.
    expect(blocks.map((b) => b.text.split(' ')[0])).toEqual(['w1246', 'w1252']);
  });

  describe('.pdf pages', () => {
    // Words without digits (a running head's digits are its page number): "kpaa kpab ...".
    const line = (word: string, n = 8) => Array.from({ length: n }, (_, i) => `${word}${String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26))}`).join(' ');
    const body = (page: number, first: string, last: string): PdfLine[] => [
      { y: 700, text: first },
      ...Array.from({ length: 8 }, (_, i) => ({ y: 686 - i * 14, text: line(`p${'abc'[page]}l${'abcdefgh'[i]}`) })),
      { y: 574, text: last },
    ];
    const pageOf = (page: number, first: string, last: string) => ({
      lines: [{ y: 760, text: 'Annual Report of the Coastal Trust', size: 9 }, ...body(page, first, last), { y: 40, text: `Page ${page + 1} of 3`, size: 9 }],
    });

    it("running heads and feet (a title, the page number) are no text; a paragraph runs on over a page break, its hyphenated word whole", async () => {
      const pdf = pdfDocument([
        pageOf(0, 'Tides carry the sediment along the shore.', 'and the dunes behind them need the Begrün-'),
        { ...pageOf(1, 'dung with marram grass, which binds the sand.', 'The survey ends here.'), links: [{ rect: [72, 696, 110, 710], url: 'https://example.com/marram' }] },
        pageOf(2, 'Next season we count the nests.', 'Thanks to every volunteer.'),
      ]);
      const { blocks } = await reader.parse('pdf', pdf);
      expect(blocks.some((b) => /Annual Report|Page \d/.test(b.text))).toBe(false);
      expect(blocks.map((b) => b.text.replace(/ p[abc]l[a-h]\w+/g, ''))).toEqual([
        'Tides carry the sediment along the shore. and the dunes behind them need the Begründung with marram grass, which binds the sand. The survey ends here.',
        'Next season we count the nests. Thanks to every volunteer.',
      ]);
      // The link on the next page's first line is anchored at its word in the joined paragraph.
      const [joined] = blocks;
      expect(joined!.links).toEqual(['https://example.com/marram']);
      expect(joined!.linkWords!.map((i) => joined!.text.split(' ')[i])).toEqual(['Begründung']);
    });

    it('a paragraph that fills a whole page runs on over both its page breaks, past the first page\'s footnotes', async () => {
      // The middle page holds only the paragraph's middle: it was joined to the first page's paragraph, and the third page's
      // first line was then left a paragraph of its own (the middle page seemed to hold no paragraph to continue).
      const pdf = pdfDocument([
        { lines: [...body(0, 'Tides carry the sediment along the shore,', 'and the dunes behind them need'), { y: 80, text: '1 Measured in the spring survey.', size: 8 }] },
        { lines: body(1, 'marram grass, which binds the sand', 'along the whole of the coast, and') },
        { lines: body(2, 'the wardens plant more of it each year.', 'The survey ends here.') },
      ]);
      const { blocks } = await reader.parse('pdf', pdf);
      expect(blocks.map((b) => b.text.replace(/ p[abc]l[a-h]\w+/g, ''))).toEqual([
        'Tides carry the sediment along the shore, and the dunes behind them need marram grass, which binds the sand along the whole of the coast, and ' +
          'the wardens plant more of it each year. The survey ends here.',
        '1 Measured in the spring survey.',
      ]);
    });

    it('a footnote mark (raised, set smaller) stays in its line and paragraph', async () => {
      const pdf = pdfDocument([
        {
          lines: [
            { y: 700, text: 'Tides carry the sediment along the shore.' },
            { x: 290, y: 704, text: '1', size: 7 },
            { y: 686, text: 'and the dunes behind them need marram grass,' },
            { y: 672, text: 'which binds the sand.' },
          ],
        },
      ]);
      const { blocks } = await reader.parse('pdf', pdf);
      expect(blocks.map((b) => b.text.replace(/shore\. ?[1¹] /, 'shore.[1] '))).toEqual(['Tides carry the sediment along the shore.[1] and the dunes behind them need marram grass, which binds the sand.']);
    });

    it("a paragraph runs on over a page break past the page's footnotes (set smaller), which follow it", async () => {
      const pdf = pdfDocument([
        { lines: [...body(0, 'Tides carry the sediment along the shore,', 'and the dunes behind them need'), { y: 80, text: '1 Measured in the spring survey.', size: 8 }] },
        { lines: body(1, 'marram grass, which binds the sand.', 'The survey ends here.') },
      ]);
      const { blocks } = await reader.parse('pdf', pdf);
      expect(blocks.map((b) => b.text.replace(/ p[abc]l[a-h]\w+/g, ''))).toEqual([
        'Tides carry the sediment along the shore, and the dunes behind them need marram grass, which binds the sand. The survey ends here.',
        '1 Measured in the spring survey.',
      ]);
    });

    it('paragraphs set without space between them end at a short line that ends a sentence, or where the size changes', async () => {
      const at = (y: number, text: string) => ({ y, text });
      const pdf = pdfDocument([
        {
          lines: [
            { y: 715, text: 'Dune Survey', size: 15 },
            at(700, `${line('Pa', 10)} which`),
            at(686, 'ends here.'),
            at(672, `${line('Pb', 10)} and`),
            at(658, 'goes on, e.g.'),
            at(644, `stays one ${line('Pc', 9)}`),
            at(630, `${line('Pd', 10)} with`),
            at(616, 'no period'),
            at(602, `Still the same ${line('Pe', 8)}`),
          ],
        },
      ]);
      const { blocks } = await reader.parse('pdf', pdf);
      expect(blocks.map((b) => b.text.replace(/ ?P[a-e][a-z]{2}/g, '').trim())).toEqual(['Dune Survey', 'which ends here.', 'and goes on, e.g. stays one with no period Still the same']);
    });

    it('a line at the top of some pages only, or a long one, is text; a single page drops a head set smaller and apart, and its page number', async () => {
      const pdf = pdfDocument([
        { lines: [{ y: 760, text: 'Field Notes', size: 9 }, ...body(0, 'First page text.', 'Its end.')] },
        { lines: [{ y: 760, text: 'Appendix', size: 9 }, ...body(1, 'Second page text.', 'Its end.')] },
        { lines: [{ y: 760, text: 'Tables', size: 9 }, ...body(2, 'Third page text.', 'Its end.')] },
      ]);
      const heads = (await reader.parse('pdf', pdf)).blocks.map((b) => b.text.split(' ')[0]);
      expect(heads).toEqual(['Field', 'First', 'Appendix', 'Second', 'Tables', 'Third']);
      const single = pdfDocument([pageOf(0, 'Only page.', 'Its end.')]);
      // Nothing recurs on one page; its 9 pt head over 11 pt text and "Page 1 of 3" were kept as text before.
      expect((await reader.parse('pdf', single)).blocks.map((b) => b.text.split(' ')[0])).toEqual(['Only']);
    });
  });

  it('inspect refuses zip bombs, empty documents, and zips that are not the claimed format', async () => {
    await expect(reader.inspect('docx', fixture('bomb.docx'))).rejects.toThrow(/decompression bomb/);
    await expect(reader.inspect('odt', fixture('energy.docx'))).rejects.toThrow(/OpenDocument/);
    await expect(reader.inspect('docx', fixture('marine.odt'))).rejects.toThrow(/not a Word/);
    await expect(reader.inspect('docx', fixture('template.dotx'))).rejects.toThrow('base64_docx_file: the file is a Word template (.dotx), not a .docx document');
    await expect(reader.inspect('odt', fixture('template.ott'))).rejects.toThrow('base64_docx_file: the file is an OpenDocument text template (.ott), not an .odt document');
    const docx = fixture('energy.docx');
    await expect(reader.inspect('docx', docx.subarray(0, docx.length - 100))).rejects.toThrow(/corrupt or truncated/);
  });

  it.each([
    ['docx', 'empty.docx'],
    ['odt', 'empty.odt'],
    ['doc', 'empty.doc'],
    ['pdf', 'empty.pdf'],
    ['docx', 'whitespace.docx'],
    ['odt', 'whitespace.odt'],
    ['pdf', 'scan.pdf'],
    ['docx', 'invisible.docx'],
    ['odt', 'invisible.odt'],
    ['doc', 'invisible.doc'],
  ] as const)('inspect refuses a .%s with no text (%s) as empty', async (format, name) => {
    await expect(reader.inspect(format, fixture(name))).rejects.toThrow('base64_docx_file: the document is empty (no text)');
  });

  it.each([
    ['docx', 'energy.docx'],
    ['odt', 'marine.odt'],
    ['doc', 'history.doc'],
    ['pdf', 'coffee.pdf'],
    ['odt', 'short.odt'],
  ] as const)('inspect accepts a .%s with text (%s)', async (format, name) => {
    await expect(reader.inspect(format, fixture(name))).resolves.toBeUndefined();
  });

  it.each([
    ['docx', 'heading.docx'],
    ['odt', 'heading.odt'],
  ] as const)('inspect refuses a .%s whose only text is a heading (%s), which the ingestion makes no card of', async (format, name) => {
    await expect(reader.inspect(format, fixture(name))).rejects.toThrow('base64_docx_file: the document has only headings, no text under them to make cards from');
    const { blocks } = await reader.parse(format, fixture(name));
    expect(blocks.map((b) => b.kind)).toEqual(['heading']);
    expect(splitIntoCards({ blocks })).toEqual([]);
  });

  it('a .pdf has no headings for the ingestion: one whose only text was a heading is text like any other', async () => {
    await expect(reader.inspect('pdf', fixture('heading.pdf'))).resolves.toBeUndefined();
    expect((await reader.parse('pdf', fixture('heading.pdf'))).blocks).toEqual([{ kind: 'paragraph', text: 'Quarterly Report on Coastal Erosion', links: [], linkWords: [] }]);
  });

  it.each(['docx', 'odt', 'doc'] as const)('parse reads no block from a .%s of only zero-width characters and no-break spaces', async (format) => {
    expect((await reader.parse(format, fixture(`invisible.${format}`))).blocks).toEqual([]);
  });

  it('inspect refuses a .pdf or .doc its library cannot read, and accepts one whose check runs out of time', async () => {
    const pdf = fixture('coffee.pdf');
    const garbled = Buffer.concat([pdf.subarray(0, 20), Buffer.alloc(pdf.length - 40, 0x41), pdf.subarray(pdf.length - 20)]);
    await expect(reader.inspect('pdf', garbled)).rejects.toThrow(/the \.pdf document could not be read/);
    const impatient = new LibraryDocumentReader(undefined, { ...DEFAULT_PARSER_LIMITS, uploadCheckMs: 0 });
    await expect(impatient.inspect('pdf', fixture('scan.pdf'))).resolves.toBeUndefined();
  });

  it('the limit on the total of inflated bytes is enforced while inflating', async () => {
    const strict = new LibraryDocumentReader({ maxEntries: 100, maxTotalUncompressed: 10_000, maxRatio: 1000 });
    await expect(strict.inspect('odt', fixture('marine.odt'))).rejects.toThrow(/decompression bomb/);
  });

  it('parse of a corrupt document that passed inspection throws UnreadableDocumentError', async () => {
    await reader.inspect('docx', fixture('corrupt.docx'));
    await expect(reader.parse('docx', fixture('corrupt.docx'))).rejects.toBeInstanceOf(UnreadableDocumentError);
    const pdf = fixture('coffee.pdf');
    const garbled = Buffer.concat([pdf.subarray(0, 20), Buffer.alloc(pdf.length - 40, 0x41), pdf.subarray(pdf.length - 20)]);
    await expect(reader.parse('pdf', garbled)).rejects.toBeInstanceOf(UnreadableDocumentError);
  });

  it("a failed reading is one line for the uploader, for every library and the worker's time and memory limits; the library's text is its cause", async () => {
    const garbled = (name: string) => {
      const bytes = fixture(name);
      return Buffer.concat([bytes.subarray(0, 2000), Buffer.alloc(bytes.length - 4000, 0x41), bytes.subarray(bytes.length - 2000)]);
    };
    const failure = (format: 'docx' | 'doc' | 'odt' | 'pdf', bytes: Buffer, limits = DEFAULT_PARSER_LIMITS) =>
      new LibraryDocumentReader(undefined, limits).parse(format, bytes).then(
        () => {
          throw new Error(`the .${format} document was read`);
        },
        (err: UnreadableDocumentError) => err,
      );
    const damaged = /^the \.(docx|doc|odt|pdf) document could not be read: [^\n]{1,160}\. It may be damaged: open it in the program that made it, save it again and upload the new copy$/;
    const xml = await failure('docx', fixture('corrupt.docx'));
    expect(xml.message).toBe('the .docx document could not be read: its XML is malformed (element parse error: invalid tagName). It may be damaged: open it in the program that made it, save it again and upload the new copy');
    expect((xml.cause as Error).message).toMatch(/xmldom error\]\telement parse error: Error: invalid tagName:\n@#\[line/);
    for (const [format, bytes] of [['doc', garbled('history.doc')], ['pdf', garbled('coffee.pdf')], ['odt', fixture('marine.odt').subarray(0, 3000)]] as const) {
      expect((await failure(format, bytes)).message).toMatch(damaged);
    }
    expect((await failure('docx', fixture('energy.docx'), { ...DEFAULT_PARSER_LIMITS, timeoutMs: 0 })).message).toBe(
      'the .docx document could not be read within 0 ms, the time allowed for one document. Split it into smaller documents and upload those',
    );
    const memory = await failure('pdf', fixture('coffee.pdf'), { ...DEFAULT_PARSER_LIMITS, maxHeapMb: 2 });
    expect(memory.message).toBe('the .pdf document could not be read within 2 MB, the memory allowed for one document. Split it into smaller documents and upload those');
    expect(String((memory.cause as Error).cause)).toMatch(/memory limit/);
  });
});

describe('shortCause', () => {
  it('cuts a long cause to 160 characters counted as code points, never between the halves of an emoji', () => {
    const emoji = '\u{1F600}';
    expect(shortCause(emoji.repeat(160))).toBe(emoji.repeat(160));
    expect(shortCause(`a ${emoji.repeat(200)}`)).toBe(`a ${emoji.repeat(157)}…`);
  });
});

describe('inline HTML of blocks', () => {
  it('keeps links and emphasis, escapes text, and stays well-formed when the source is not', async () => {
    const { blocksFromHtml } = await import('../src/adapters/documents/block-collector');
    const [block] = blocksFromHtml('<p>a <strong>bold <em>both</strong> x</em> &lt;tag&gt; <a href="javascript:alert(1)">no</a> <a href="https://e.com/?a=1&amp;b=2">yes</a></p>');
    expect(block!.html).toBe('a <strong>bold <em>both</em></strong> x &lt;tag&gt; no <a href="https://e.com/?a=1&amp;b=2">yes</a>');
    expect(block!.links).toEqual(['https://e.com/?a=1&b=2']);
  });
});

describe('lists, tables and notes', () => {
  const texts = (blocks: { text: string }[]) => blocks.map((b) => b.text.replace(/w(\d+)(?: w\d+)+\./g, 'w$1…'));

  it('.odt: a list item is a paragraph with its place in its list, a table row one paragraph of its cells, a note at its citation in brackets', async () => {
    // structure.odt (from the ingestion audit): a text:list of three items, a table of one row of two cells, a footnote.
    const { blocks } = await reader.parse('odt', fixture('structure.odt'));
    const list = blocks.slice(blocks.findIndex((b) => b.text === 'ODT list') + 1, blocks.findIndex((b) => b.text === 'ODT table'));
    expect(texts(list)).toEqual(['w2146… w2158… w2170…', 'w2176… w2188… w2200…', 'w2206… w2218… w2230…']);
    expect(list.map((b) => b.list)).toEqual([1, 2, 3].map((number) => ({ ordered: false, level: 1, number })));
    // The cards hold it as one real list.
    const listCard = splitIntoCards({ blocks }).find((card) => card.text.includes('w2146'))!;
    expect(listCard.html).toMatch(/<ul><li>w2146 [^<]*<\/li><li>w2176 [^<]*<\/li><li>w2206 [^<]*<\/li><\/ul>/);
    const row = blocks[blocks.findIndex((b) => b.text === 'ODT table') + 1]!;
    expect(texts([row])).toEqual(['w2236… w2248… w2260… w2272… | w2276… w2288… w2300… w2312…']);
    const noted = blocks.find((b) => b.text.includes('ODTNOTE'))!;
    expect(noted.text).toContain('w2435. [1: ODTNOTE body.] w2436');
    expect(noted.html).toContain('w2435. [1: ODTNOTE body.] w2436');
    // Its words reach a card.
    expect(splitIntoCards({ blocks }).some((card) => card.text.includes('[1: ODTNOTE body.]'))).toBe(true);
  });

  it('.odt: a list numbered by its automatic list style is numbered, per level; a list header is no item', () => {
    const xml =
      '<office:document-content><office:automatic-styles><text:list-style style:name="L1"><text:list-level-style-number text:level="1"/>' +
      '<text:list-level-style-bullet text:level="2"/></text:list-style></office:automatic-styles><office:body><office:text>' +
      '<text:list text:style-name="L1"><text:list-header><text:p>Steps</text:p></text:list-header><text:list-item><text:p>Grind</text:p></text:list-item>' +
      '<text:list-item><text:p>Brew</text:p><text:list><text:list-item><text:p>hot</text:p></text:list-item></text:list></text:list-item></text:list>' +
      '<text:list><text:list-item><text:p>Plain</text:p></text:list-item></text:list></office:text></office:body></office:document-content>';
    const blocks = blocksFromOdtContent(xml);
    expect(blocks.map((b) => b.text)).toEqual(['Steps', 'Grind', 'Brew', 'hot', 'Plain']);
    expect(blocks.map((b) => b.list)).toEqual([
      undefined,
      { ordered: true, level: 1, number: 1 },
      { ordered: true, level: 1, number: 2 },
      { ordered: false, level: 2, number: 1 },
      { ordered: false, level: 1, number: 1 },
    ]);
  });

  it('.docx (mammoth HTML): list items with their places, nested lists, a paragraph inside an item, a table row per paragraph', () => {
    const html =
      '<ul><li>One</li><li><p><strong>Two</strong> too</p></li></ul><ol><li>First</li><li>Second<ol><li>Inner</li></ol></li></ol>' +
      '<table><tr><th><p>Name</p></th><th><p>Value</p></th></tr><tr><td><p>a</p><p>b</p></td><td></td><td><p>c</p></td></tr></table><p>After</p>';
    const blocks = blocksFromHtml(html);
    expect(blocks.map((b) => b.text)).toEqual(['One', 'Two too', 'First', 'Second', 'Inner', 'Name | Value', 'a b | | c', 'After']);
    expect(blocks[1]!.html).toBe('<strong>Two</strong> too');
    expect(blocks.map((b) => b.list && `${b.list.ordered ? 'ol' : 'ul'} ${b.list.level}.${b.list.number}`)).toEqual(
      ['ul 1.1', 'ul 1.2', 'ol 1.1', 'ol 1.2', 'ol 2.1', undefined, undefined, undefined],
    );
  });

  it("a table cell's paragraphs, headings and line breaks are lines of its row (as the web editor and the cards service write a table), .docx and .odt", () => {
    // Before, a cell's paragraphs were joined with a space ("a b | c"), a heading in a cell broke its row in two, and a
    // cell ending in an empty paragraph lost the " | " after it.
    const docx = blocksFromHtml(
      '<table><tr><td><p>a</p><p><strong>b</strong></p></td><td><p>c</p>after<br />line</td><td><h3>Head</h3><p>text</p></td></tr>' +
        '<tr><td><p>x</p><p></p></td><td>y</td></tr></table><p>one<br />line</p>',
    );
    // Outside a table a line break is a <br> too (word-readers.test.ts).
    expect(docx.map((b) => b.html)).toEqual(['a<br><strong>b</strong> | c<br>after<br>line | Head<br>text', 'x | y', 'one<br>line']);
    // The text: a line break is a space between words.
    expect(docx.map((b) => b.text)).toEqual(['a b | c after line | Head text', 'x | y', 'one line']);
    const odt = blocksFromOdtContent(
      '<office:text><table:table><table:table-row><table:table-cell><text:p>a</text:p><text:p>b<text:line-break/>c</text:p></table:table-cell>' +
        '<table:table-cell><text:h text:outline-level="2">d</text:h></table:table-cell></table:table-row></table:table><text:p>e<text:line-break/>f</text:p></office:text>',
    );
    expect(odt.map((b) => [b.kind, b.html])).toEqual([
      ['paragraph', 'a<br>b<br>c | d'],
      ['paragraph', 'e<br>f'],
    ]);
    // A card keeps the lines; a row cut between cards loses the line break at the cut.
    const words = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');
    const [card] = splitIntoCards({ blocks: blocksFromHtml(`<table><tr><td><p>${words('a', 60)}</p><p>${words('b', 30)}</p></td><td>c</td></tr></table>`) });
    expect(card!.html).toBe(`<p>${words('a', 60)}<br>${words('b', 30)} | c</p>`);
  });

  it("a table's empty cells keep their place in the row (as the cards service writes a table); a row without text is still left out, .docx and .odt", async () => {
    // Before, an empty cell was dropped with its separator, so the columns after it moved left ('Name | Rate', 'b | c').
    const tc = (text: string) => `<w:tc>${text ? wp(text) : '<w:p/>'}</w:tc>`;
    const tr = (...cells: string[]) => `<w:tr>${cells.map(tc).join('')}</w:tr>`;
    const docx = docxPackage({ body: `<w:tbl>${tr('Name', '', 'Rate')}${tr('', 'b', 'c')}${tr('', '', '')}${tr('x', '', '')}</w:tbl>${wp('After')}` });
    const { blocks } = await reader.parse('docx', docx);
    expect(blocks.map((b) => b.text)).toEqual(['Name | | Rate', '| b | c', 'x | |', 'After']);
    // The cards service's HTML for the same rows, whitespace collapsed: 'Name |  | Rate', ' | b | c', 'x |  | '.
    expect(blocks.map((b) => b.html)).toEqual(['Name | | Rate', '| b | c', 'x | |', 'After']);
    // Empty cells after a cell's line break take its place; ones with an empty paragraph or only a line break are empty.
    expect(blocksFromHtml('<table><tr><td><p>a</p><p></p></td><td><p></p></td><td><br></td><th>d</th></tr></table>').map((b) => b.html)).toEqual(['a | | | d']);
    const odt = blocksFromOdtContent(
      '<office:text><table:table><table:table-row><table:table-cell><text:p>Name</text:p></table:table-cell><table:table-cell><text:p/></table:table-cell>' +
        '<table:table-cell><text:p>Rate</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell table:number-columns-repeated="2"/>' +
        '<table:table-cell><text:p>c</text:p></table:table-cell></table:table-row><table:table-row><table:table-cell table:number-columns-repeated="3"><text:p/></table:table-cell>' +
        '</table:table-row></table:table><text:p>After</text:p></office:text>',
    );
    expect(odt.map((b) => b.html)).toEqual(['Name | | Rate', '| | c', 'After']);
    // A repeated cell counts as at most 64 cells.
    const repeated = blocksFromOdtContent('<office:text><table:table><table:table-row><table:table-cell table:number-columns-repeated="100000"/><table:table-cell><text:p>z</text:p></table:table-cell></table:table-row></table:table></office:text>');
    expect(repeated.map((b) => b.text)).toEqual([`${'| '.repeat(64)}z`]);
  });

  describe('a list item of several paragraphs is one item, and its list goes on after it', () => {
    const words = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');
    const shape = (html: string) => html.replace(/([a-z])\d+(?: [a-z]\d+)+/g, '$1…');
    const places = (blocks: { list?: { ordered: boolean; level: number; number: number; continues?: true } }[]) =>
      blocks.map((b) => b.list && `${b.list.ordered ? 'ol' : 'ul'} ${b.list.level}.${b.list.number}${b.list.continues ? '+' : ''}`);

    it('.docx: the paragraphs after an item without numbering, indented or in a list paragraph style, go in its li', async () => {
      // As Word writes it: Enter then Backspace over the number leaves the item's indentation (or its "List Paragraph"
      // style) on a paragraph without numbering; mammoth alone ends the list there and numbers the next item 1 again.
      const docx = docxPackage({
        numbering: numberingOf(1, ['decimal', 'bullet']),
        body:
          wp('Steps', '<w:pStyle w:val="Heading1"/>') +
          wp(words(30, 'a'), numbered(1)) +
          wp(words(20, 'b'), numbered(1)) +
          wp(words(10, 'c'), '<w:pStyle w:val="ListParagraph"/><w:ind w:left="720"/>') +
          wp(words(10, 'd'), '<w:ind w:left="720"/>') +
          wp(words(5, 'e'), numbered(1)) +
          wp(words(5, 'f'), numbered(1, 1)) +
          wp(words(5, 'g'), '<w:pStyle w:val="ListParagraph"/>') +
          wp(words(5, 'h'), numbered(1)) +
          wp(words(5, 'i')),
      });
      const { blocks } = await reader.parse('docx', docx);
      expect(places(blocks)).toEqual([undefined, 'ol 1.1', 'ol 1.2', 'ol 1.2+', 'ol 1.2+', 'ol 1.3', 'ul 2.1', 'ul 2.1+', 'ol 1.4', undefined]);
      const [card] = splitIntoCards({ blocks });
      expect(shape(card!.html)).toBe('<h1>Steps</h1>\n<ol><li>a…</li><li>b…<p>c…</p><p>d…</p></li><li>e…<ul><li>f…<p>g…</p></li></ul></li><li>h…</li></ol>\n<p>i…</p>');
      // The text one line per paragraph, as the cards service reads li and p.
      expect(shape(card!.text)).toBe('Steps\na…\nb…\nc…\nd…\ne…\nf…\ng…\nh…\ni…');
    });

    it('.docx: numbered items count on as Word numbers them: past a paragraph between them, a restarting instance from its start', async () => {
      // Word counts per numbering definition and level: numId 3 uses definition 1 but overrides its start (Word's
      // "Restart numbering"); an item of level 1 restarts level 2. mammoth numbers each list it writes from 1.
      const numbering = `${numberingOf(1, ['decimal', 'decimal'])}<w:num w:numId="3"><w:abstractNumId w:val="1"/><w:lvlOverride w:ilvl="0"><w:startOverride w:val="1"/></w:lvlOverride></w:num>`;
      const docx = docxPackage({
        numbering,
        body:
          wp('Steps', '<w:pStyle w:val="Heading1"/>') +
          wp(words(30, 'a'), numbered(1)) +
          wp(words(5, 'b'), numbered(1, 1)) +
          wp(words(5, 'c'), numbered(1)) +
          wp(words(5, 'd'), numbered(1, 1)) +
          wp(words(10, 'e')) +
          wp(words(5, 'f'), numbered(1)) +
          wp(words(10, 'g')) +
          wp(words(5, 'h'), numbered(3)) +
          wp(words(5, 'i'), numbered(3)),
      });
      const { blocks } = await reader.parse('docx', docx);
      expect(places(blocks)).toEqual([undefined, 'ol 1.1', 'ol 2.1', 'ol 1.2', 'ol 2.1', undefined, 'ol 1.3', undefined, 'ol 1.1', 'ol 1.2']);
      expect(blocks.some((b) => b.text.includes('\ue000') || b.html?.includes('\ue000'))).toBe(false);
      const [card] = splitIntoCards({ blocks });
      expect(shape(card!.html)).toBe('<h1>Steps</h1>\n<ol><li>a…<ol><li>b…</li></ol></li><li>c…<ol><li>d…</li></ol></li></ol>\n<p>e…</p>\n<ol start="3"><li>f…</li></ol>\n<p>g…</p>\n<ol><li>h…</li><li>i…</li></ol>');
    });

    it(".docx: a list in a list style (w:numStyleLink) counts from the style's definition's start; a w:lvlOverride's own w:lvl restarts at its w:start", async () => {
      // Definition 2 only links to the numbering style "StepsList", whose instance 4 uses definition 1 (start 5): Word shows
      // instance 3's items 5, 6 and the style's own instance counts on with them (7). Instance 6 overrides level 0 with a
      // whole level definition starting at 7 (as Word 2003 and other writers restart a list): 7, 8. Both read 1, 2.
      const numbering =
        '<w:abstractNum w:abstractNumId="1"><w:styleLink w:val="StepsList"/><w:lvl w:ilvl="0"><w:start w:val="5"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>' +
        '<w:abstractNum w:abstractNumId="2"><w:numStyleLink w:val="StepsList"/></w:abstractNum>' +
        `${numberingOf(5, ['decimal'])}<w:num w:numId="4"><w:abstractNumId w:val="1"/></w:num><w:num w:numId="3"><w:abstractNumId w:val="2"/></w:num>` +
        '<w:num w:numId="6"><w:abstractNumId w:val="5"/><w:lvlOverride w:ilvl="0"><w:lvl w:ilvl="0"><w:start w:val="7"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:lvlOverride></w:num>';
      const styles = '<w:style w:type="numbering" w:styleId="StepsList"><w:name w:val="Steps List"/><w:pPr><w:numPr><w:numId w:val="4"/></w:numPr></w:pPr></w:style>';
      const docx = docxPackage({
        numbering,
        styles,
        body:
          wp('Steps', '<w:pStyle w:val="Heading1"/>') +
          wp(words(30, 'a'), numbered(3)) +
          wp(words(5, 'b'), numbered(3)) +
          wp(words(5, 'c'), numbered(4)) +
          wp(words(20, 'd')) +
          wp(words(5, 'e'), numbered(5)) +
          wp(words(5, 'f'), numbered(6)) +
          wp(words(5, 'g'), numbered(6)),
      });
      const { blocks } = await reader.parse('docx', docx);
      expect(places(blocks)).toEqual([undefined, 'ol 1.5', 'ol 1.6', 'ol 1.7', undefined, 'ol 1.1', 'ol 1.7', 'ol 1.8']);
      const [card] = splitIntoCards({ blocks });
      expect(shape(card!.html)).toBe('<h1>Steps</h1>\n<ol start="5"><li>a…</li><li>b…</li><li>c…</li></ol>\n<p>d…</p>\n<ol><li>e…</li></ol><ol start="7"><li>f…</li><li>g…</li></ol>');
    });

    it("mammoth's HTML: a p after an item's first one, or text after a list inside the item, is more of that item", () => {
      const blocks = blocksFromHtml('<ol><li><p>One</p><p>One more</p></li><li>Two<ul><li>Inner</li></ul>Two again</li><li>Three</li></ol><p>After</p>');
      expect(blocks.map((b) => b.text)).toEqual(['One', 'One more', 'Two', 'Inner', 'Two again', 'Three', 'After']);
      expect(places(blocks)).toEqual(['ol 1.1', 'ol 1.1+', 'ol 1.2', 'ul 2.1', 'ol 1.2+', 'ol 1.3', undefined]);
    });

    it('.odt: a list item of two text:p, a list header after an item, and a list continuing the numbering of the one before', () => {
      const xml =
        '<office:document-content><office:automatic-styles><text:list-style style:name="L1"><text:list-level-style-number text:level="1"/>' +
        '</text:list-style></office:automatic-styles><office:body><office:text><text:h text:outline-level="2">Steps</text:h>' +
        `<text:list xml:id="list1" text:style-name="L1"><text:list-item><text:p>${words(30, 'a')}</text:p><text:p>${words(20, 'b')}</text:p></text:list-item>` +
        `<text:list-header><text:p>${words(10, 'c')}</text:p></text:list-header><text:list-item><text:p>${words(5, 'd')}</text:p></text:list-item></text:list>` +
        `<text:p>${words(5, 'e')}</text:p>` +
        `<text:list text:continue-numbering="true" text:style-name="L1"><text:list-item><text:p>${words(5, 'f')}</text:p></text:list-item></text:list>` +
        `<text:list text:continue-list="list1" text:style-name="L1"><text:list-item><text:p>${words(5, 'g')}</text:p></text:list-item></text:list>` +
        '</office:text></office:body></office:document-content>';
      const blocks = blocksFromOdtContent(xml);
      expect(places(blocks)).toEqual([undefined, 'ol 1.1', 'ol 1.1+', 'ol 1.1+', 'ol 1.2', undefined, 'ol 1.3', 'ol 1.4']);
      const [card] = splitIntoCards({ blocks });
      expect(shape(card!.html)).toBe('<h2>Steps</h2>\n<ol><li>a…<p>b…</p><p>c…</p></li><li>d…</li></ol>\n<p>e…</p>\n<ol start="3"><li>f…</li><li>g…</li></ol>');
    });

    it('.docx: a start or restart of 10^9 or more, below 1 or not a number leaves no mark in the text; the list counts on by itself', async () => {
      // The worker marks an item with Word's number only when an <ol start> can carry it (1 to 999,999,999).
      const numberingStarting = (start: string, override: string | null) =>
        `<w:abstractNum w:abstractNumId="1"><w:lvl w:ilvl="0"><w:start w:val="${start}"/><w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>` +
        `<w:num w:numId="2"><w:abstractNumId w:val="1"/>${override === null ? '' : `<w:lvlOverride w:ilvl="0"><w:startOverride w:val="${override}"/></w:lvlOverride>`}</w:num>`;
      const cases: [string, string | null, string[]][] = [
        ['999999999', null, ['ol 1.999999999', 'ol 1.1000000000']],
        ['1', '999999999', ['ol 1.999999999', 'ol 1.1000000000']],
        ['100000000000000000000', null, ['ol 1.1', 'ol 1.2']],
        ['1', '100000000000000000000', ['ol 1.1', 'ol 1.2']],
        ['-5', null, ['ol 1.1', 'ol 1.2']],
        ['1', '-5', ['ol 1.1', 'ol 1.2']],
        ['seven', null, ['ol 1.1', 'ol 1.2']],
        ['1', 'seven', ['ol 1.1', 'ol 1.2']],
      ];
      for (const [start, override, expected] of cases) {
        const docx = docxPackage({ numbering: numberingStarting(start, override), body: wp(words(50, 'a'), numbered(2)) + wp(words(50, 'b'), numbered(2)) });
        const { blocks } = await reader.parse('docx', docx);
        expect([start, override, blocks.map((b) => b.text.slice(0, 5))]).toEqual([start, override, ['a0 a1', 'b0 b1']]);
        expect([start, override, places(blocks)]).toEqual([start, override, expected]);
        const [card] = splitIntoCards({ blocks });
        expect(`${card!.text}${card!.html}`).not.toContain('\ue000');
      }
      // Whatever a mark holds, it is removed; only a number of 1 to 9 digits numbers its item.
      const blocks = blocksFromHtml('<ol><li>\ue000cards-item-number:100000000000000000000\ue001One</li><li>\ue000cards-item-number:-3\ue001Two</li><li>\ue000cards-item-number:7\ue001Three</li></ol>');
      expect(blocks.map((b) => b.text)).toEqual(['One', 'Two', 'Three']);
      expect(places(blocks)).toEqual(['ol 1.1', 'ol 1.2', 'ol 1.7']);
    });
  });

  describe("notes are the document's text", () => {
    const words = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');

    it('inspect accepts a .docx whose only text is in footnotes or endnotes, which the ingestion puts at their references', async () => {
      const footnotes = docxPackage({ body: `<w:p>${noteReference(1)}</w:p>`, footnotes: note(1, words(80, 'f')) });
      const endnotes = docxPackage({ body: `<w:p>${noteReference(1, 'endnote')}</w:p>`, endnotes: note(1, words(80, 'e'), 'endnote') });
      for (const docx of [footnotes, endnotes]) {
        await expect(reader.inspect('docx', docx)).resolves.toBeUndefined();
        expect(splitIntoCards(await reader.parse('docx', docx))).toHaveLength(1);
      }
      // Notes of no text leave a document of no text.
      const blank = docxPackage({ body: `<w:p>${noteReference(1)}</w:p>`, footnotes: note(1, '') });
      await expect(reader.inspect('docx', blank)).rejects.toThrow('base64_docx_file: the document is empty (no text)');
    });

    it("inspect accepts a .doc whose only text is a footnote and a text box: the note at its reference, the box after the body's text", async () => {
      // notes.doc (make-fixtures.sh, src/notes.fodt): an empty body but for a footnote's reference and a text box.
      await expect(reader.inspect('doc', fixture('notes.doc'))).resolves.toBeUndefined();
      const { blocks } = await reader.parse('doc', fixture('notes.doc'));
      expect(blocks.map((b) => b.text.split(' ').slice(0, 2).join(' '))).toEqual(['[1: Footnote', 'Boxed tbaa']);
      expect(splitIntoCards({ blocks })).toHaveLength(1);
    });

    it('.doc: footnotes and endnotes are put at their references, "[1: text]" as in a .docx, not after the body', async () => {
      // placed-notes.doc (make-fixtures.sh, src/placed-notes.fodt): a footnote of two paragraphs, one with a custom mark
      // ("*") and an endnote, each referenced inside a paragraph. Footnotes and endnotes are numbered as Word shows them,
      // each from 1; a custom mark is the note's mark.
      const { blocks } = await reader.parse('doc', fixture('placed-notes.doc'));
      expect(blocks.map((b) => b.text)).toEqual([
        'Dune grasses bind the sand of the foredune. [1: Marram grass, counted in May. Its roots reach two metres.] Storms still cut the dune face each winter.',
        'Wardens fence the paths [*: Chestnut paling, renewed yearly.] and plant new grass [i: Planting notes are kept at the visitor centre.] in spring.',
        'Visitors keep to the boardwalk.',
      ]);
      // As the .docx reading puts a note: the same text at the reference (a Word .docx numbers its notes from 1).
      const docx = blocksFromHtml(
        '<p>Dune grasses bind the sand of the foredune.<sup><a href="#footnote-1" id="footnote-ref-1">[1]</a></sup> Storms still cut the dune face each winter.</p>' +
          '<ol><li id="footnote-1"><p>Marram grass, counted in May.</p><p>Its roots reach two metres. <a href="#footnote-ref-1">↑</a></p></li></ol>',
      );
      expect(docx.map((b) => b.text)).toEqual([blocks[0]!.text]);
    });

    it('.docx: notes are labelled as the document shows them (footnotes and endnotes each from 1, in their number format: the endnote "i"; a custom mark once), as the .doc reading reads the same document', async () => {
      // placed-notes.docx (make-fixtures.sh, from src/placed-notes.fodt as placed-notes.doc): LibreOffice writes its notes
      // from id 2 (after the two separators), and the custom mark "*" after the reference (w:customMarkFollows) and again
      // at the start of the note. mammoth's ids made "[2: ...]" of the first footnote and "[3: * Chestnut ...]*" of the mark.
      const docx = await reader.parse('docx', fixture('placed-notes.docx'));
      const doc = await reader.parse('doc', fixture('placed-notes.doc'));
      expect(docx.blocks.map((b) => b.text)).toEqual([
        'Dune grasses bind the sand of the foredune. [1: Marram grass, counted in May. Its roots reach two metres.] Storms still cut the dune face each winter.',
        'Wardens fence the paths [*: Chestnut paling, renewed yearly.] and plant new grass [i: Planting notes are kept at the visitor centre.] in spring.',
        'Visitors keep to the boardwalk.',
      ]);
      expect(docx.blocks.map((b) => b.text)).toEqual(doc.blocks.map((b) => b.text));
      expect(docx.blocks[1]!.html).toBe('Wardens fence the paths [*: Chestnut paling, renewed yearly.] and plant new grass [i: Planting notes are kept at the visitor centre.] in spring.');
    });

    it('.docx: notes are numbered in the order of their references whatever their ids; a custom mark in its run is the label, not body text', async () => {
      const customReference = (id: number, mark: string) =>
        `<w:r><w:rPr><w:vertAlign w:val="superscript"/></w:rPr><w:footnoteReference w:customMarkFollows="true" w:id="${id}"/><w:t>${mark}</w:t></w:r>`;
      const customNote = (id: number, mark: string, text: string) => `<w:footnote w:id="${id}"><w:p><w:r><w:t>${mark}</w:t></w:r><w:r><w:t xml:space="preserve"> ${text}</w:t></w:r></w:p></w:footnote>`;
      const docx = docxPackage({
        body:
          `<w:p><w:r><w:t>Gulls</w:t></w:r>${noteReference(7)}<w:r><w:t xml:space="preserve"> and terns</w:t></w:r>${noteReference(4, 'endnote')}` +
          `<w:r><w:t xml:space="preserve"> and skuas</w:t></w:r>${customReference(5, '\u2020')}<w:r><w:t xml:space="preserve"> and auks</w:t></w:r>${noteReference(3)}<w:r><w:t>.</w:t></w:r></w:p>`,
        footnotes: note(3, 'Auks dive.') + note(7, 'Gulls scavenge.') + customNote(5, '\u2020', 'Skuas steal.'),
        endnotes: note(4, 'Terns migrate.', 'endnote'),
      });
      const { blocks } = await reader.parse('docx', docx);
      // The endnote in Word's default format for endnotes, lower-case Roman (the package has no settings.xml).
    expect(blocks.map((b) => b.text)).toEqual(['Gulls [1: Gulls scavenge.] and terns [i: Terns migrate.] and skuas [\u2020: Skuas steal.] and auks [2: Auks dive.].']);
      // The note's own text is not shortened where it does not start with its mark.
      const plain = docxPackage({ body: `<w:p><w:r><w:t>Gulls</w:t></w:r>${customReference(2, '*')}</w:p>`, footnotes: customNote(2, '', '*Gulls* scavenge.') });
      expect((await reader.parse('docx', plain)).blocks.map((b) => b.text)).toEqual(['Gulls [*: Gulls* scavenge.]']);
    });

    it('.doc: a document whose note tables cannot be read keeps its notes after the body, as word-extractor gives them', async () => {
      const bytes = Buffer.from(fixture('placed-notes.doc'));
      // The WordDocument stream's FIB (magic 0xA5EC at a sector's start); its footnote reference table made to reach past
      // the table stream (lcbPlcffndRef, MS-DOC FibRgFcLcb97).
      let fib = 0;
      while (bytes.readUInt16LE(fib) !== 0xa5ec) fib += 512;
      bytes.writeUInt32LE(0x7ffffff0, fib + 0xae);
      const { blocks } = await reader.parse('doc', bytes);
      expect(blocks.map((b) => b.text)).toEqual([
        'Dune grasses bind the sand of the foredune. Storms still cut the dune face each winter.',
        'Wardens fence the paths* and plant new grass in spring.',
        'Visitors keep to the boardwalk.',
        'Marram grass, counted in May.',
        'Its roots reach two metres.',
        '* Chestnut paling, renewed yearly.',
        'Planting notes are kept at the visitor centre.',
      ]);
    });

    it('a note referenced in a heading is the paragraph after it: the heading stays a title, the note is text (.docx, .odt)', async () => {
      const docx = docxPackage({ body: `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Title</w:t></w:r>${noteReference(1)}</w:p>`, footnotes: note(1, words(80, 'f')) });
      await expect(reader.inspect('docx', docx)).resolves.toBeUndefined();
      const odt = blocksFromOdtContent(
        '<office:text><text:h text:outline-level="1">Title<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation>' +
          `<text:note-body><text:p>${words(80, 'f')}</text:p></text:note-body></text:note></text:h><text:p>After</text:p></office:text>`,
      );
      for (const blocks of [(await reader.parse('docx', docx)).blocks, odt]) {
        expect(blocks.slice(0, 2).map((b) => [b.kind, b.text])).toEqual([
          ['heading', 'Title'],
          ['paragraph', `[1: ${words(80, 'f')}]`],
        ]);
        expect(splitIntoCards({ blocks })[0]!.title).toBe('Title');
      }
    });
  });

  describe("what only repeats or describes the document is not its text", () => {
    it('.odt: a table of contents (its template too), an image\'s title and description, ruby annotations are left out', () => {
      const blocks = blocksFromOdtContent(
        '<office:text><text:table-of-content text:name="TOC"><text:table-of-content-source><text:index-title-template>Contents</text:index-title-template>' +
          '</text:table-of-content-source><text:index-body><text:index-title><text:p>Contents</text:p></text:index-title><text:p><text:a xlink:href="#__RefHeading___Toc1">' +
          'Introduction<text:tab/>1</text:a></text:p></text:index-body></text:table-of-content><text:h text:outline-level="1">Introduction</text:h>' +
          '<text:p>Reef photo <draw:frame><draw:image xlink:href="Pictures/1.png"/><svg:title>A reef</svg:title><svg:desc>Coral heads in shallow water</svg:desc></draw:frame>' +
          'shows bleaching of <text:ruby><text:ruby-base>漢字</text:ruby-base><text:ruby-text>かんじ</text:ruby-text></text:ruby>.</text:p>' +
          '<text:bibliography><text:index-body><text:p>Smith, Reefs, 2020.</text:p></text:index-body></text:bibliography></office:text>',
      );
      expect(blocks.map((b) => [b.kind, b.text])).toEqual([
        ['heading', 'Introduction'],
        ['paragraph', 'Reef photo shows bleaching of 漢字.'],
        ['paragraph', 'Smith, Reefs, 2020.'],
      ]);
    });

    it('.odt: a text box inside a paragraph follows the paragraph, which stays whole (as mammoth places a Word text box)', () => {
      const blocks = blocksFromOdtContent(
        '<office:text><text:p>Before <text:span><draw:frame><draw:text-box><text:p>Boxed <text:a xlink:href="https://example.com/box">aside</text:a></text:p>' +
          '<text:list><text:list-item><text:p>point</text:p></text:list-item></text:list></draw:text-box></draw:frame></text:span>and <text:a xlink:href="https://example.com/after">after</text:a>.</text:p>' +
          '<text:p>Next.</text:p></office:text>',
      );
      expect(blocks.map((b) => [b.text, b.html, b.links])).toEqual([
        ['Before and after.', 'Before and <a href="https://example.com/after">after</a>.', ['https://example.com/after']],
        ['Boxed aside', 'Boxed <a href="https://example.com/box">aside</a>', ['https://example.com/box']],
        ['point', 'point', []],
        ['Next.', 'Next.', []],
      ]);
      expect(blocks[2]!.list).toEqual({ ordered: false, level: 1, number: 1 });
    });

    it('.docx: a table of contents (Word\'s "TOC Heading" and "toc n" paragraphs) is left out; headings and a contents table alone are only headings', async () => {
      const styles = '<w:style w:type="paragraph" w:styleId="TOC1"><w:name w:val="toc 1"/></w:style><w:style w:type="paragraph" w:styleId="TOCHeading"><w:name w:val="TOC Heading"/></w:style>';
      const toc =
        `<w:sdt><w:sdtContent>${wp('Contents', '<w:pStyle w:val="TOCHeading"/>')}<w:p><w:pPr><w:pStyle w:val="TOC1"/></w:pPr><w:hyperlink w:anchor="_Toc1">` +
        '<w:r><w:t>Introduction</w:t></w:r><w:r><w:tab/></w:r><w:r><w:t>3</w:t></w:r></w:hyperlink></w:p></w:sdtContent></w:sdt>';
      const heading = wp('Introduction', '<w:pStyle w:val="Heading1"/>');
      const { blocks } = await reader.parse('docx', docxPackage({ styles, body: toc + heading + wp('Body text.') }));
      expect(blocks.map((b) => [b.kind, b.text])).toEqual([
        ['heading', 'Introduction'],
        ['paragraph', 'Body text.'],
      ]);
      await expect(reader.inspect('docx', docxPackage({ styles, body: toc + heading }))).rejects.toThrow('base64_docx_file: the document has only headings, no text under them to make cards from');
    });
  });

  it('.docx: a footnote is put at its reference in brackets and not left over at the end', async () => {
    // blocks.docx (from the ingestion audit): a footnote "FOOTNOTETEXT here." referenced after w1855, and a 2x2 table.
    const { blocks } = await reader.parse('docx', fixture('blocks.docx'));
    const noted = blocks.filter((b) => b.text.includes('FOOTNOTETEXT'));
    expect(noted).toHaveLength(1);
    expect(noted[0]!.text).toContain('w1855. [1: FOOTNOTETEXT here.] w1856');
    expect(noted[0]!.html).toContain('w1855. [1: FOOTNOTETEXT here.] w1856');
    expect(blocks.some((b) => b.text.includes('\u2191'))).toBe(false);
    const table = blocks.slice(blocks.findIndex((b) => b.text === 'Table section') + 1, blocks.findIndex((b) => b.text === 'Footnote section'));
    expect(texts(table)).toEqual(['w1716… w1728…', 'w1736… w1748… | w1751… w1763…', 'w1766… w1778… | w1781… w1793…', 'w1796… w1808…']);
    expect(splitIntoCards({ blocks }).some((card) => card.text.includes('[1: FOOTNOTETEXT here.]'))).toBe(true);
  });
});

describe('deeply nested markup', () => {
  const words = (prefix: string) => Array.from({ length: 80 }, (_, i) => `${prefix}${i}`).join(' ');

  it('.odt content nested 100,000 deep: every paragraph, heading, link and space kept, the parser stack bounded', () => {
    const depth = 100_000;
    const xml =
      '<office:document-content><office:body><office:text><text:h text:outline-level="2">Deep</text:h>' +
      '<text:section>'.repeat(depth) +
      `<text:p>${words('a')}<office:annotation><text:p>hidden</text:p></office:annotation></text:p>` +
      '<text:h text:outline-level="3">Inner</text:h>' +
      `<text:p>${'<text:span>'.repeat(depth)}${words('b')}<text:s text:c="2"/>end <text:a xlink:href="https://example.com/deep">link</text:a>${'</text:span>'.repeat(depth)}</text:p>` +
      '</text:section>'.repeat(depth) +
      '<text:p>after</text:p></office:text></office:body></office:document-content>';
    let blocks: ReturnType<typeof blocksFromOdtContent> = [];
    expect(deepestParserStack(() => (blocks = blocksFromOdtContent(xml)))).toBeLessThanOrEqual(MAX_PARSER_DEPTH);
    expect(blocks.map((b) => [b.kind, b.level, b.text])).toEqual([
      ['heading', 2, 'Deep'],
      ['paragraph', undefined, words('a')],
      ['heading', 3, 'Inner'],
      ['paragraph', undefined, `${words('b')} end link`],
      ['paragraph', undefined, 'after'],
    ]);
    expect(blocks[3]!.links).toEqual(['https://example.com/deep']);
  });

  it("a .docx's HTML of tables nested 3,000 deep: the cell's paragraph and emphasis kept, the parser stack bounded", () => {
    const depth = 3_000;
    const html = `${'<table><tr><td>'.repeat(depth)}<p>${words('c')} <strong>bold</strong></p>${'</td></tr></table>'.repeat(depth)}<h2>Next</h2>`;
    let blocks: ReturnType<typeof blocksFromHtml> = [];
    expect(deepestParserStack(() => (blocks = blocksFromHtml(html)))).toBeLessThanOrEqual(MAX_PARSER_DEPTH);
    expect(blocks.map((b) => [b.kind, b.text])).toEqual([
      ['paragraph', `${words('c')} bold`],
      ['heading', 'Next'],
    ]);
    expect(blocks[0]!.html).toBe(`${words('c')} <strong>bold</strong>`);
  });
});

describe('text checks on parts an uploader controls', () => {
  // The old patterns backtracked over the rest of the part from every start: these inputs took minutes with them.
  it('.docx: a text run, however many unclosed <w:t come first', () => {
    expect(docxHasText('<w:p><w:r><w:t xml:space="preserve"> x</w:t></w:r></w:p>')).toBe(true);
    expect(docxHasText('<w:p><w:r><w:t>&amp;</w:t></w:r></w:p>')).toBe(true);
    expect(docxHasText('<w:p><w:r><w:tab/></w:r><w:tbl>text</w:tbl></w:p>')).toBe(false);
    // Empty and blank runs are no text, nor is the markup after them.
    expect(docxHasText('<w:body><w:p><w:r><w:t></w:t></w:r></w:p><w:sectPr/></w:body>')).toBe(false);
    expect(docxHasText('<w:p><w:r><w:t xml:space="preserve">  \t </w:t></w:r><w:r><w:t>&#160;&#x20;</w:t></w:r></w:p>')).toBe(false);
    // Zero-width and other format characters (category Cf) are no text either, alone or among spaces.
    expect(docxHasText('<w:p><w:r><w:t>\u200B\u200C\u200D</w:t></w:r><w:r><w:t xml:space="preserve">\u2060 &#xFEFF;&#160;</w:t></w:r></w:p>')).toBe(false);
    expect(docxHasText('<w:p><w:r><w:t>\u200Bx\u200B</w:t></w:r></w:p>')).toBe(true);
    const unclosed = '<w:t '.repeat(100_000);
    expect(docxHasText(unclosed)).toBe(false);
    expect(docxHasText(`${unclosed}<w:t>x</w:t>`)).toBe(true);
  });

  it('.docx: body text at a glance only outside heading styles (by id or by name), text boxes and tracked changes', () => {
    const paragraph = (style: string | null, inner = '<w:r><w:t>Text</w:t></w:r>') => `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ''}${inner}</w:p>`;
    const body = (...paragraphs: string[]) => `<w:document><w:body>${paragraphs.join('')}</w:body></w:document>`;
    const styles = '<w:styles><w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style><w:style w:type="paragraph" w:styleId="TextBody"><w:name w:val="Body Text"/></w:style></w:styles>';
    expect(docxTextScan(body(paragraph(null)))).toBe('body');
    expect(docxTextScan(body(paragraph('TextBody')), styles)).toBe('body');
    expect(docxTextScan(body(paragraph('Heading1'), paragraph('TextBody')), styles)).toBe('body');
    expect(docxTextScan(`<w:tbl><w:tr><w:tc>${paragraph(null)}</w:tc></w:tr></w:tbl>`)).toBe('body');
    // Only mammoth's reading can tell: heading styles (a localized id named "heading 1" too), a text box, a deleted
    // paragraph mark (mammoth joins the paragraph to the next), text only in the markup-compatibility choice.
    expect(docxTextScan(body(paragraph('Heading1'), paragraph('Heading')))).toBe('unsure');
    expect(docxTextScan(body(paragraph('berschrift1')), styles)).toBe('unsure');
    expect(docxTextScan(body(paragraph(null, '<w:r><w:pict><w:txbxContent><w:p><w:r><w:t>Boxed</w:t></w:r></w:p></w:txbxContent></w:pict></w:r>')))).toBe('unsure');
    expect(docxTextScan(body('<w:p><w:pPr><w:rPr><w:del w:id="1"/></w:rPr></w:pPr><w:r><w:t>Joined</w:t></w:r></w:p>', paragraph('Heading1')))).toBe('unsure');
    expect(docxTextScan(body(paragraph(null, '<mc:AlternateContent><mc:Choice><w:r><w:t>x</w:t></w:r></mc:Choice></mc:AlternateContent>')))).toBe('unsure');
    expect(docxTextScan(body(paragraph('Heading1', '<w:r><w:t>\u200B</w:t></w:r>')))).toBe('none');
    // A note's text lives in its own part: referenced, mammoth's reading tells whether it holds any.
    expect(docxTextScan(body(paragraph(null, noteReference(1))))).toBe('unsure');
    expect(docxTextScan(body(paragraph(null, noteReference(2, 'endnote'))))).toBe('unsure');
    // So does a paragraph of a table of contents, which the ingestion leaves out.
    expect(docxTextScan(body(paragraph('TOC1')))).toBe('unsure');
  });

  it('headings alone make no card, whatever the format reads them from; a heading too long to be a title is text', () => {
    const words = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
    expect(textPresenceOf([{ kind: 'heading', level: 1, text: 'Title', links: [] }, { kind: 'heading', level: 2, text: 'Sub', links: [] }])).toBe('headings');
    expect(textPresenceOf([{ kind: 'heading', level: 1, text: words(200), links: [] }])).toBe('headings');
    expect(textPresenceOf([{ kind: 'heading', level: 1, text: words(201), links: [] }])).toBe('body');
    expect(textPresenceOf([{ kind: 'heading', level: 1, text: '\u200B', links: [] }])).toBe('none');
    expect(odtTextPresence('<office:text><text:h text:outline-level="1">Title</text:h><text:h>Sub</text:h></office:text>')).toBe('headings');
    expect(odtTextPresence('<office:text><text:h>Title</text:h><text:p>Text</text:p></office:text>')).toBe('body');
    expect(odtTextPresence(`<office:text>${'<text:h>Title</text:h>'.repeat(20_000)}<text:p>Text</text:p></office:text>`)).toBe('body');
  });

  it('.odt: text inside office:text outside the sequence declarations, however many unclosed copies of either', () => {
    const decls = '<text:sequence-decls><text:sequence-decl text:name="Table"/></text:sequence-decls>';
    expect(odtHasText(`<office:body><office:text>${decls}<text:p>x</text:p></office:text></office:body>`)).toBe(true);
    expect(odtHasText(`<office:body><office:text>${decls}</office:text></office:body>`)).toBe(false);
    // A blank paragraph, paragraphs of spaces, and text only in a comment are no text.
    expect(odtHasText(`<office:body><office:text>${decls}<text:p text:style-name="P1"/></office:text></office:body>`)).toBe(false);
    expect(odtHasText(`<office:text><text:p> <text:s text:c="3"/>&#160;</text:p><text:h>\t</text:h></office:text>`)).toBe(false);
    expect(odtHasText(`<office:text><text:p><office:annotation><text:p>note</text:p></office:annotation></text:p></office:text>`)).toBe(false);
    expect(odtHasText('<office:meta>x</office:meta><office:text></office:text>')).toBe(false);
    expect(odtHasText('<office:text><text:p>\u200B\u200C\u200D</text:p><text:h>\u2060<text:s/>&#xFEFF;&#160;</text:h></office:text>')).toBe(false);
    expect(odtHasText('<office:text><text:p>\u200B\u00E9</text:p></office:text>')).toBe(true);
    // Read as the ingestion reads it: text in an unclosed body still counts.
    expect(odtHasText('<office:text>x')).toBe(true);
    expect(odtHasText(`<office:body>${'<office:text>'.repeat(100_000)}x`)).toBe(true);
    expect(odtHasText(`<office:body>${'<office:text>'.repeat(100_000)}`)).toBe(false);
    expect(odtHasText(`<office:text>${'<text:sequence-decls>'.repeat(100_000)}<text:p>x</text:p></office:text>`)).toBe(true);
  });

  it('.doc: hyperlink fields, however many unfinished ones come first', () => {
    const unfinished = '\x13 HYPERLINK "https://a.example/x" '.repeat(50_000);
    expect(hyperlinksIn(Buffer.from(`${unfinished}\x13 HYPERLINK "https://b.example/" \\o "tip"\x14shown text\x15`, 'latin1'))).toEqual([{ url: 'https://b.example/', text: 'shown text' }]);
  });
});

describe("the readers' marks (U+E000 name value U+E001) and the document's own text", () => {
  // The .docx reading marks Word's list numbers and note labels in the text it hands the service (word-documents.mjs);
  // a document's text may hold the marks' characters (private-use U+E000 and U+E001) too.
  const words = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');
  const places = (blocks: { list?: { ordered: boolean; level: number; number: number } }[]) => blocks.map((b) => b.list && `${b.list.ordered ? 'ol' : 'ul'} ${b.list.level}.${b.list.number}`);
  const noMarkCharacters = (blocks: { text: string; html?: string }[]) => blocks.every((b) => !/[\ue000\ue001]/.test(`${b.text}${b.html ?? ''}`));
  /** The text with each run of copies of `cards-<name>:` written "<name> ×count", so a failure shows what differs. */
  const runs = (text: string) => text.replace(/(?:cards-([a-z-]+):){2,}/g, (run, name: string) => `<${name} ×${run.length / `cards-${name}:`.length}>`);

  it("mammoth's HTML: marks are found in time linear in the text, however many starts of a mark without an end it holds", () => {
    // The former patterns (/\ue000cards-note-label:([^\ue001]*)\ue001/ and the item number's) scanned to the text's end
    // from every start without an end, on the service's thread: these 100,000 starts took many minutes with them (20,000
    // in a footnote of 7 KB of .docx held the thread 7 s). A mark before them still counts; one ended after them (in the
    // item) is removed whole, as the patterns removed it; stray characters are removed.
    const starts = (name: string) => `\ue000cards-${name}:`.repeat(100_000);
    const html =
      `<ol><li>\ue000cards-item-number:3\ue001Item ${starts('item-number')}\ue001<sup><a href="#footnote-1" id="footnote-ref-1">[1]</a></sup></li></ol>` +
      `<ol><li id="footnote-1"><p>\ue000cards-note-label:7\ue001Note ${starts('note-label')} ${starts('item-number')} end <a href="#footnote-ref-1">↑</a></p></li></ol>`;
    const blocks = blocksFromHtml(html);
    expect(places(blocks)).toEqual(['ol 1.3']);
    expect(blocks.map((b) => runs(b.text))).toEqual(['Item [7: Note <note-label ×100000> <item-number ×100000> end]']);
    expect(noMarkCharacters(blocks)).toBe(true);
    // takeMarks itself: every whole mark taken, in order, whatever comes between.
    expect(takeMarks(`a\ue000m:1\ue001b\ue000m:\ue001c\ue000m:2`, '\ue000m:')).toEqual({ values: ['1', ''], text: 'abc\ue000m:2' });
    const [value, ...others] = takeMarks(`${'\ue000m:'.repeat(200_000)}\ue001x`, '\ue000m:').values;
    expect([value === '\ue000m:'.repeat(199_999), others]).toEqual([true, []]);
  });

  it(".docx: the document's own U+E000 and U+E001 are taken out in the worker, so none numbers an item, labels a note or stays in a card", async () => {
    const customReference = `<w:r><w:footnoteReference w:customMarkFollows="true" w:id="2"/><w:t>\u2020</w:t></w:r>`;
    const docx = docxPackage({
      numbering: numberingOf(1, ['decimal']),
      body:
        wp(`\ue000cards-item-number:7\ue001${words(40, 'a')}`, numbered(1)) +
        `<w:p><w:r><w:t>Gulls\ue001</w:t></w:r>${noteReference(1)}<w:r><w:t xml:space="preserve"> and terns</w:t></w:r>` +
        `<w:r><w:footnoteReference w:id="3"/><w:t>\ue000cards-note-custom-mark:*\ue001</w:t></w:r><w:r><w:t xml:space="preserve"> and skuas</w:t></w:r>${customReference}</w:p>`,
      footnotes:
        note(1, `\ue000cards-note-label:X\ue001Gulls ${'\ue000cards-note-label:'.repeat(20_000)}scavenge.`) +
        note(3, 'Terns migrate.') +
        `<w:footnote w:id="2"><w:p><w:r><w:t>\u2020 Skuas steal.</w:t></w:r></w:p></w:footnote>`,
    });
    const { blocks } = await reader.parse('docx', docx);
    expect(places(blocks)).toEqual(['ol 1.1', undefined]);
    expect(blocks.map((b) => runs(b.text))).toEqual([
      `cards-item-number:7${words(40, 'a')}`,
      'Gulls [1: cards-note-label:XGulls <note-label ×20000>scavenge.] and terns [2: Terns migrate.]cards-note-custom-mark:* and skuas [\u2020: Skuas steal.]',
    ]);
    expect(noMarkCharacters(blocks)).toBe(true);
  });

  it('.odt, .doc and .pdf: their text holds no U+E000 or U+E001 either, as the .docx reading gives its text (marks.doc, marks.pdf)', async () => {
    // marks.doc and marks.pdf (make-fixtures.sh, src/marks.fodt): text and footnotes holding both characters.
    const doc = (await reader.parse('doc', fixture('marks.doc'))).blocks;
    expect(doc.map((b) => b.text)).toEqual([
      'Tidecards-item-number:7 pools hold anemones. [1: Beadlet anemones close at low tide.] Crabs hide under the weed.',
      'Limpetscards-note-label:X clamp to the rock. [2: cards-note-label:YLimpets return to one scar.] Barnacles feed with their legs. [3: Acorn barnacles.]',
      'Gulls take what the tide leaves. [4: Herring gulls mostly.]',
    ]);
    const pdf = (await reader.parse('pdf', fixture('marks.pdf'))).blocks;
    expect(pdf[0]!.text).toMatch(/^Tidecards-item-number:7 pools hold anemones\. ¹ Crabs hide under the weed\. Limpetscards-note-label:X clamp/);
    const odt = blocksFromOdtContent('<office:text><text:p>Tide\ue000cards-item-number:7\ue001 pools<text:note><text:note-citation>1</text:note-citation><text:note-body><text:p>Beadlet\ue001 anemones.</text:p></text:note-body></text:note></text:p></office:text>');
    expect(odt.map((b) => b.text)).toEqual(['Tidecards-item-number:7 pools [1: Beadlet anemones.]']);
    for (const blocks of [doc, pdf, odt]) expect(noMarkCharacters(blocks)).toBe(true);
  });

  it(".doc: note tables whose notes overlap or whose references are out of order are not read so: each note's text once, after the body", async () => {
    // marks.doc's footnote text positions (PlcffndTxt, MS-DOC: where each note's text starts in the footnotes' story) are
    // 0, 39, 89, 108, 132 and 133; rewritten to 0, 132, 0, 132, 0, 133, notes 1 and 3 each span every note's text. Read
    // so, a .doc of a few KB with many references made references × story length of text, returned to the service's
    // thread whole. Its references (PlcffndRef: 46, 121, 154, 188, 324) out of order are refused too.
    const afterTheBody = [
      'Tidecards-item-number:7 pools hold anemones. Crabs hide under the weed.',
      'Limpetscards-note-label:X clamp to the rock. Barnacles feed with their legs.',
      'Gulls take what the tide leaves.',
      'Beadlet anemones close at low tide.',
      'cards-note-label:YLimpets return to one scar.',
      'Acorn barnacles.',
      'Herring gulls mostly.',
    ];
    const rewritten = (from: readonly number[], to: readonly number[]) => {
      const bytes = Buffer.from(fixture('marks.doc'));
      const table = (values: readonly number[]) => Buffer.concat(values.map((v) => Buffer.from(Uint32Array.of(v).buffer)));
      const at = bytes.indexOf(table(from));
      expect(at).toBeGreaterThan(0);
      table(to).copy(bytes, at);
      return bytes;
    };
    const overlapping = rewritten([0, 39, 89, 108, 132, 133], [0, 132, 0, 132, 0, 133]);
    const { blocks } = await reader.parse('doc', overlapping);
    expect(blocks.map((b) => b.text)).toEqual(afterTheBody);
    const unordered = rewritten([46, 121, 154, 188, 324], [121, 46, 154, 188, 324]);
    expect((await reader.parse('doc', unordered)).blocks.map((b) => b.text)).toEqual(afterTheBody);
  });
});

describe('document titles, hyphens at line ends, text boxes', () => {
  const words = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');

  it('.docx: a title in the "Title" style (by name or id) is a heading like Heading 1, the cards\' title tag; "Subtitle" stays text', async () => {
    const styles = '<w:style w:type="paragraph" w:styleId="Titel"><w:name w:val="Title"/></w:style><w:style w:type="paragraph" w:styleId="Subtitle"><w:name w:val="Subtitle"/></w:style>';
    const docx = docxPackage({ styles, body: wp('Dune Survey', '<w:pStyle w:val="Titel"/>') + wp('Spring counts', '<w:pStyle w:val="Subtitle"/>') + wp(words(80, 't')) });
    const { blocks } = await reader.parse('docx', docx);
    expect(blocks.map((b) => [b.kind, b.level, b.text.slice(0, 13)])).toEqual([
      ['heading', 1, 'Dune Survey'],
      ['paragraph', undefined, 'Spring counts'],
      ['paragraph', undefined, 't0 t1 t2 t3 t'],
    ]);
    const [card] = splitIntoCards({ blocks });
    expect(card!.title).toBe('Dune Survey');
    expect(card!.html.startsWith('<h1>Dune Survey</h1>\n<p>Spring counts</p>')).toBe(true);
    // By id alone (no styles part naming it), as Word's built-in "Title" is written.
    const byId = await reader.parse('docx', docxPackage({ body: wp('Dune Survey', '<w:pStyle w:val="Title"/>') + wp(words(80, 't')) }));
    expect(byId.blocks[0]).toMatchObject({ kind: 'heading', level: 1, text: 'Dune Survey' });
    // A title alone is only a heading: refused at upload, as headings alone are.
    await expect(reader.inspect('docx', docxPackage({ styles, body: wp('Dune Survey', '<w:pStyle w:val="Titel"/>') }))).rejects.toThrow('the document has only headings');
    expect(docxTextScan(`<w:document><w:body>${wp('Dune Survey', '<w:pStyle w:val="Title"/>')}</w:body></w:document>`)).toBe('unsure');
  });

  it('.odt: a paragraph in the "Title" style, or an automatic style derived from it, is a heading of level 1; "Subtitle" stays text', () => {
    const xml =
      '<office:document-content><office:automatic-styles><style:style style:name="P1" style:family="paragraph" style:parent-style-name="Title"/></office:automatic-styles>' +
      '<office:body><office:text><text:p text:style-name="Title">Dune Survey</text:p><text:p text:style-name="Subtitle">Spring counts</text:p><text:p>Body.</text:p>' +
      '<text:p text:style-name="P1">Second Title</text:p><text:p>More.</text:p></office:text></office:body></office:document-content>';
    expect(blocksFromOdtContent(xml).map((b) => [b.kind, b.level, b.text])).toEqual([
      ['heading', 1, 'Dune Survey'],
      ['paragraph', undefined, 'Spring counts'],
      ['paragraph', undefined, 'Body.'],
      ['heading', 1, 'Second Title'],
      ['paragraph', undefined, 'More.'],
    ]);
    expect(odtTextPresence('<office:text><text:p text:style-name="Title">Dune Survey</text:p></office:text>')).toBe('headings');
  });

  it(".pdf: a hyphen at a line's end stays when it is the word's own: the compound written so elsewhere (never joined), one letter, a hyphenated word", async () => {
    const at = (y: number, text: string) => ({ y, text });
    const pdf = pdfDocument([
      {
        lines: [
          at(700, 'Terns nest on the well-known dunes of the coast every spring, and'),
          at(686, 'the counts of their nests are well-'),
          at(672, 'known to the wardens, who note the n-'),
          at(658, 'tridecanal smell, the mother-in-'),
          at(644, 'law of every sur-'),
          at(630, 'vey, and the co-'),
          at(616, 'operation of the co-operation and cooperation office.'),
        ],
      },
    ]);
    const { blocks } = await reader.parse('pdf', pdf);
    expect(blocks.map((b) => b.text)).toEqual([
      'Terns nest on the well-known dunes of the coast every spring, and the counts of their nests are well-known to the wardens, who note the ' +
        'n-tridecanal smell, the mother-in-law of every survey, and the cooperation of the co-operation and cooperation office.',
    ]);
  });

  it(".pdf: a hyphen at a line's end stays before a word that goes on with a hyphen ('in-law') and between two English words whose joining is none", async () => {
    // Against the word-list package's English words: "moth-" "er-in-law" and "decision-mak-" "ing" (Writer breaks inside a
    // compound's parts) join, as "in-" "formation" and "man-" "age" do; a capitalized part is no dictionary word
    // ("Washing-" "ton"), nor is a German one ("Begrün-" "dung"); a joined word the document writes ("datasets") joins.
    const at = (y: number, text: string) => ({ y, text });
    const pdf = pdfDocument([
      {
        lines: [
          at(700, 'Terns nest where the mother-'),
          at(686, 'in-law of the warden once lived; her moth-'),
          at(672, 'er-in-law kept the well-'),
          at(658, 'known long-'),
          at(644, 'term self-'),
          at(630, 'esteem of the in-'),
          at(616, 'formation office, which they man-'),
          at(602, 'age from Washing-'),
          at(588, 'ton and Begr\u00fcn-'),
          at(574, 'dung with a co-'),
          at(560, 'operation and more data-'),
          at(546, 'sets than datasets for the decision-mak-'),
          at(532, 'ing board.'),
        ],
      },
    ]);
    const { blocks } = await reader.parse('pdf', pdf);
    expect(blocks.map((b) => b.text)).toEqual([
      'Terns nest where the mother-in-law of the warden once lived; her mother-in-law kept the well-known long-term self-esteem of the ' +
        'information office, which they manage from Washington and Begr\u00fcndung with a cooperation and more datasets than datasets for the decision-making board.',
    ]);
  });

  it('.pdf: a URL or an e-mail address Writer broke at a line end goes on without a space (urls.pdf)', async () => {
    // urls.pdf (make-fixtures.sh, src/urls.fodt): a justified, hyphenated column 5 cm wide. Writer broke the URLs after
    // "//" and "/" ("https://" "data.example.com/api/v2/sta-", "wiki/" "Marram_grass"), inside their words with a hyphen
    // ("exam-" "ple.net", "example-" "org": the slug's own), and the addresses after a dot or "@" with a hyphen of its own
    // ("j.smith@example.-" "com", "third@-" "mail"). Each gained a space at the break, or the hyphen stayed.
    const { blocks } = await reader.parse('pdf', fixture('urls.pdf'));
    expect(blocks.map((b) => b.text)).toEqual([
      'The wardens publish their counts of terns at https://example.net/marine/plankton-sheet every spring, and the station data at http://data.example.com/api/v2/stations?id=4471&format=csv for each colony along the coast.',
      'Write to j.smith@example.com or to dune-survey@coastal-trust.example.net with your findings, and read https://en.wikipedia.org/wiki/Marram_grass before the walk.',
      'Send all to j.smith@example.com or first.second.third@mail.example.co.uk, and count and/or note.',
      'Volunteers may count and/or photograph the nests; the guide at https://github.com/example-org/dune-survey/blob/main/README.md explains how.',
    ]);
  });

  it(".pdf: a line that ends inside a URL or an address is joined without a space, over a page break too; ordinary words, a sentence's '?' and a URL before 'for' keep it", async () => {
    const at = (y: number, text: string) => ({ y, text });
    const pdf = pdfDocument([
      {
        lines: [
          at(700, 'Counts are at https://'),
          at(686, 'example.net/terns/colonies/'),
          at(672, 'north-sea?year=2024&'),
          at(658, 'site=7 every spring.'),
          at(610, 'Mail j.-'),
          at(596, 'smith@example.org or counts@'),
          at(582, 'example.org, or read (www.example.org/'),
          at(568, 'README.md'),
          at(554, '). Wardens count and/'),
          at(540, 'or photograph the nests.'),
          at(492, 'Read https://example.com/'),
          at(478, 'for details, and ask what changed at https://example.com/faq?'),
          at(464, 'Nothing did, so the wardens wrote to info@example.org.'),
          at(450, 'Colonies are counted in May and the archive is at https://doi.org/'),
        ],
      },
      { lines: [at(700, '10.1000/182 for everyone.')] },
    ]);
    const { blocks } = await reader.parse('pdf', pdf);
    expect(blocks.map((b) => b.text)).toEqual([
      'Counts are at https://example.net/terns/colonies/north-sea?year=2024&site=7 every spring.',
      'Mail j.smith@example.org or counts@example.org, or read (www.example.org/README.md). Wardens count and/ or photograph the nests.',
      'Read https://example.com/ for details, and ask what changed at https://example.com/faq? Nothing did, so the wardens wrote to info@example.org. ' +
        'Colonies are counted in May and the archive is at https://doi.org/10.1000/182 for everyone.',
    ]);
  });

  it(".pdf: a URL ending in '/' at a line end goes on only with a word that looks like a path or that the document writes in the URL; a plain word keeps its space", async () => {
    // Before, any next word but ~60 common ones was glued into the URL: "https://www.example.org/Volunteers count",
    // ".../hosts", ".../today." (regression audit of 5aa292e).
    const at = (y: number, text: string) => ({ y, text });
    const pdf = pdfDocument([
      {
        lines: [
          at(700, 'Details are on https://www.example.org/'),
          at(686, 'Volunteers count the nests. Mirrors of https://example.com/'),
          at(672, 'hosts the archive, as https://example.com/'),
          at(658, 'today.'),
          at(610, 'Maps at https://example.net/coffee/'),
          at(596, 'rust-alerts and https://example.org/api/'),
          at(582, 'v2/stations and https://example.com/'),
          at(568, 'search?'),
          at(554, 'q=dune+grass&lang=en for all.'),
          at(506, 'The bridges are at https://example.net/history/'),
          at(492, 'bridges today; the same page, https://example.net/history/bridges, lists the'),
          at(478, 'ferries at https://'),
          at(464, 'example.net/history/'),
          at(450, 'ferries too.'),
        ],
      },
    ]);
    const { blocks } = await reader.parse('pdf', pdf);
    expect(blocks.map((b) => b.text)).toEqual([
      'Details are on https://www.example.org/ Volunteers count the nests. Mirrors of https://example.com/ hosts the archive, as https://example.com/ today.',
      'Maps at https://example.net/coffee/rust-alerts and https://example.org/api/v2/stations and https://example.com/search?q=dune+grass&lang=en for all.',
      'The bridges are at https://example.net/history/bridges today; the same page, https://example.net/history/bridges, lists the ferries at https://example.net/history/ ferries too.',
    ]);
  });

  it('.docx: a text box written only as DrawingML (no VML fallback) follows the paragraph holding it, as one with the fallback does', async () => {
    const MC = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"';
    const DRAWING = 'xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"';
    const content = (text: string) => `<w:txbxContent><w:p><w:r><w:t>${text}</w:t></w:r></w:p></w:txbxContent>`;
    const choice = (text: string) =>
      `<mc:Choice Requires="wps"><w:drawing><wp:anchor ${DRAWING}><wp:extent cx="1" cy="1"/><a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/word/2010/wordprocessingShape">` +
      `<wps:wsp><wps:txbx>${content(text)}</wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing></mc:Choice>`;
    const fallback = (text: string) => `<mc:Fallback><w:pict><v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox>${content(text)}</v:textbox></v:shape></w:pict></mc:Fallback>`;
    const holding = (box: string) => `<w:p><w:r><w:t xml:space="preserve">Before </w:t></w:r><w:r><mc:AlternateContent ${MC}>${box}</mc:AlternateContent></w:r><w:r><w:t>after.</w:t></w:r></w:p>`;
    const docx = docxPackage({ body: holding(choice(`Boxed ${words(80, 'b')}`)) + wp('Next.') + holding(choice('Both ways') + fallback('Both ways')) });
    const { blocks } = await reader.parse('docx', docx);
    expect(blocks.map((b) => b.text.slice(0, 13))).toEqual(['Before after.', 'Boxed b0 b1 b', 'Next.', 'Before after.', 'Both ways']);
    // Its text counts at upload: a document whose only text is in such a box is not empty.
    await expect(reader.inspect('docx', docxPackage({ body: holding(choice(`Boxed ${words(80, 'b')}`)) }))).resolves.toBeUndefined();
  });

  it('.docx: text boxes written only as DrawingML nested 40 deep: each level read once, each node of the document walked at most twice', async () => {
    // Each level: a paragraph whose box holds the next level. The fallback built for a box holds the box's content still
    // inside its choice; walking into it too walked each level twice (2^depth times the innermost: 26 levels took 17 s).
    const nested = (depth: number) => {
      let body = wp(`innermost ${words(80, 'n')}`);
      for (let level = depth - 1; level >= 0; level--) body = `<w:p><w:r><w:t xml:space="preserve">level${level} </w:t></w:r>${drawingTextBox(body)}</w:p>`;
      return body;
    };
    const { blocks } = await reader.parse('docx', docxPackage({ body: nested(40) }));
    expect(blocks.map((b) => b.text.split(' ')[0])).toEqual([...Array.from({ length: 40 }, (_, level) => `level${level}`), 'innermost']);
    expect(blocks[40]!.text).toBe(`innermost ${words(80, 'n')}`);

    // Shapes nested in a shape's DrawingML outside any text box, the innermost holding one: its text is read too.
    const MC = `xmlns:mc="${DRAWING_NAMESPACES.mc}"`;
    const shapes = (depth: number) => {
      let run = drawingTextBox(wp(`boxed ${words(80, 'b')}`));
      for (let level = 0; level < depth; level++) run = `<w:r><mc:AlternateContent ${MC}><mc:Choice Requires="wps"><w:drawing>${run}</w:drawing></mc:Choice></mc:AlternateContent></w:r>`;
      return `<w:p><w:r><w:t>Shapes</w:t></w:r>${run}</w:p>`;
    };
    const grouped = await reader.parse('docx', docxPackage({ body: shapes(40) }));
    expect(grouped.blocks.map((b) => b.text.slice(0, 8))).toEqual(['Shapes', 'boxed b0']);

    // The walk that builds the fallbacks (in the worker, over mammoth's XML elements) and its searches for a shape's
    // boxes visit each node at most twice: once walking, at most once searching the one shape around it.
    type Node = { children?: Node[] };
    const xml = require('mammoth/lib/xml/index.js') as { readString(text: string, namespaces: Record<string, string>): Promise<Node>; element: unknown };
    const { addTextBoxFallbacks } = require('../src/adapters/documents/text-box-fallbacks.cjs') as { addTextBoxFallbacks(root: Node, element: unknown): number };
    const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
    const namespaces = Object.fromEntries([['w', W], ...Object.entries(DRAWING_NAMESPACES)].map(([prefix, uri]) => [uri, prefix]));
    const nodes = (node: Node): number => 1 + (node.children ?? []).reduce((sum, child) => sum + nodes(child), 0);
    for (const body of [nested(16), shapes(200)]) {
      const root = await xml.readString(`<w:document xmlns:w="${W}"><w:body>${body}</w:body></w:document>`, namespaces);
      const before = nodes(root);
      expect(addTextBoxFallbacks(root, xml.element)).toBeLessThanOrEqual(2 * before);
    }
  });
});
