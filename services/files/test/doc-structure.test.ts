import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DocumentBlock } from '../src/domain/model';
import { blocksFromDoc, LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { splitIntoCards } from '../src/domain/card-splitter';

// A .doc's structure beyond its text, read as the .docx and .odt readings read the same document (make-fixtures.sh:
// doc-structure.doc/.docx from src/doc-structure.fodt, doc-outline.doc/.odt from src/doc-outline.fodt, each saved by
// Writer in both formats; doc-lists.doc/.docx from src/doc-lists.fodt): headings, a paragraph holding both line breaks and
// a hyperlink, a table inside a table's cell, hyperlinks where their fields are, Word's list numbering.
const FIXTURES = join(__dirname, '../../../test/fixtures/documents');
const reader = new LibraryDocumentReader();
const blocksOf = async (name: string): Promise<DocumentBlock[]> => (await reader.parse(name.split('.').pop() as 'doc' | 'docx' | 'odt', readFileSync(join(FIXTURES, name)))).blocks;
const headings = (blocks: DocumentBlock[]) => blocks.filter((b) => b.kind === 'heading').map((b) => [b.level, b.text]);

describe('.doc headings, line breaks beside links and nested tables, as the .docx reading reads them', () => {
  it('paragraphs styled Heading 1-3 are headings of their level (they were paragraphs: a .doc made no sections)', async () => {
    const doc = await blocksOf('doc-structure.doc');
    expect(headings(doc)).toEqual([
      [1, 'Harbour history'],
      [2, 'Harbour office'],
      [3, 'Berths'],
    ]);
    expect(headings(doc)).toEqual(headings(await blocksOf('doc-structure.docx')));
    // A footnote referenced in a heading is the paragraph after it, as in the .docx reading: the heading stays a title.
    expect(doc[doc.findIndex((b) => b.text === 'Berths') + 1]!.text).toBe('[1: Let by the harbour office.]');
  });

  it('the Title style and a style given an outline level are headings, as Writer shows them and the .odt reading reads them', async () => {
    const doc = await blocksOf('doc-outline.doc');
    expect(headings(doc)).toEqual([
      [1, 'Field notes'],
      [2, 'Coastal walks'],
    ]);
    expect(headings(doc)).toEqual(headings(await blocksOf('doc-outline.odt')));
    // The document's own U+E012 (the character of the worker's mark of a level-2 heading's end) makes no heading.
    expect(doc[doc.length - 1]).toMatchObject({ kind: 'paragraph', text: 'Tide tables are posted at the harbour office.' });
  });

  it('a paragraph holding line breaks and a hyperlink keeps both: <br>s and the <a> in its HTML (the breaks were spaces)', async () => {
    const find = (blocks: DocumentBlock[]) => blocks.find((b) => b.text.startsWith('Write to the Harbour Master'))!;
    const doc = find(await blocksOf('doc-structure.doc'));
    expect(doc.links).toEqual(['https://example.org/harbour/rules']);
    expect(doc.html).toMatch(/^Write to the Harbour Master<br>Old Customs House<br>Portsmouth, or read the <a href="https:\/\/example\.org\/harbour\/rules">harbour rules<\/a> before you arrive\. /);
    const docx = find(await blocksOf('doc-structure.docx'));
    expect([doc.text, doc.html, doc.links]).toEqual([docx.text, docx.html, docx.links]);
  });

  it("a table inside a table's cell: its rows are paragraphs of their own, as the .docx reading reads them (they were lines of the outer cell)", async () => {
    const rows = (blocks: DocumentBlock[]) => blocks.slice(blocks.findIndex((b) => b.text === 'Quay | Berths')).map((b) => b.text);
    const doc = rows(await blocksOf('doc-structure.doc'));
    expect(doc).toEqual([
      'Quay | Berths',
      'North quay',
      'Berth 1 | 3 m',
      'Berth 2 | 4 m',
      'Both dry at spring tides',
      'South quay | Berth 3',
      'Berths not taken by the first of March are offered to visiting boats by the week.',
    ]);
    expect(doc).toEqual(rows(await blocksOf('doc-structure.docx')));
  });

  it('the same document as .doc and .docx makes the same cards', async () => {
    const doc = splitIntoCards({ blocks: await blocksOf('doc-structure.doc') });
    expect(doc.map((card) => [card.title, card.link])).toEqual([
      ['Harbour history', ''],
      ['Harbour office', 'https://example.org/harbour/rules'],
      ['Berths', ''],
    ]);
    expect(doc).toEqual(splitIntoCards({ blocks: await blocksOf('doc-structure.docx') }));
  });

  it('a .doc whose only text is headings is refused at upload, as a .docx or .odt is (a .doc had no headings, and any text passed)', async () => {
    await expect(reader.inspect('doc', readFileSync(join(FIXTURES, 'doc-headings.doc')))).rejects.toThrow('base64_docx_file: the document has only headings, no text under them to make cards from');
    await expect(reader.inspect('doc', readFileSync(join(FIXTURES, 'doc-structure.doc')))).resolves.toBeUndefined();
  });

  it("the worker's marks are read only at their places: a heading's end mark ends its line; an inner table's marks only make rows", () => {
    expect(blocksFromDoc('Scope\ue011\nSites\ue012\nBody \ue013 text\n', Buffer.alloc(0)).map((b) => [b.kind, b.level, b.text])).toEqual([
      ['heading', 1, 'Scope'],
      ['heading', 2, 'Sites'],
      ['paragraph', undefined, 'Body text'],
    ]);
    // A link beside line breaks is an <a> between them; a link whose shown text runs over a break keeps no HTML (a space).
    const field = (shown: string) => Buffer.from(`\x13 HYPERLINK "https://example.org/tides" \x14${shown}\x15`, 'latin1');
    expect(blocksFromDoc('Office\x0bsee the tides & times\x0bDock', field('tides & times'))[0]).toMatchObject({
      text: 'Office see the tides & times Dock',
      links: ['https://example.org/tides'],
      html: 'Office<br>see the <a href="https://example.org/tides">tides &amp; times</a><br>Dock',
    });
    const over = blocksFromDoc('see the tides\x0bboard', field('tides board'))[0]!;
    expect([over.text, over.html, over.links]).toEqual(['see the tides board', undefined, ['https://example.org/tides']]);
    // The worker's link marks (doc-fields.cjs: start, target, target's end, shown text, end) make an <a> where they stand;
    // a start without its target's end is no link.
    expect(blocksFromDoc('See \ue030https://example.org/a\ue032 the plan \ue031now\nAlso \ue030plain\ue031 text', Buffer.alloc(0)).map((b) => [b.text, b.links, b.html])).toEqual([
      ['See the plan now', ['https://example.org/a'], 'See <a href="https://example.org/a">the plan</a> now'],
      ['Also plain text', [], undefined],
    ]);
    // A list item's mark at its line's start (numberLists) gives its place; elsewhere it is dropped.
    expect(blocksFromDoc('\ue020o2.7\ue021Item\nText \ue020u1.1\ue021here', Buffer.alloc(0)).map((b) => [b.text, b.list])).toEqual([
      ['Item', { ordered: true, level: 2, number: 7 }],
      ['Text u1.1here', undefined],
    ]);
    // A cell holding a paragraph, an inner table of one row of two cells (the second of two lines), then a paragraph.
    expect(blocksFromDoc('Before\x0bA\x10B1\x12B2\x10\x11After\x07Next\x07', Buffer.alloc(0)).map((b) => [b.text, b.html])).toEqual([
      ['Before', 'Before'],
      ['A | B1 B2', 'A | B1<br>B2'],
      ['After | Next', 'After | Next'],
    ]);
  });
});

describe(".doc hyperlinks at their fields and Word's list numbering, as the .docx reading reads them", () => {
  // doc-lists.doc and .docx: one document Writer saved in both (make-fixtures.sh, src/doc-lists.fodt).
  const both = async () => [await blocksOf('doc-lists.doc'), await blocksOf('doc-lists.docx')] as const;
  const shown = (block: DocumentBlock | undefined) => block && { kind: block.kind, level: block.level, text: block.text, links: block.links, html: block.html, list: block.list };

  it('a one-line paragraph holding a hyperlink has it as an <a>, and the link is on the paragraph of its field (it went to the first one showing its words)', async () => {
    const [doc, docx] = await both();
    const find = (blocks: DocumentBlock[]) => blocks.find((b) => b.text.startsWith('The charts are kept at'));
    expect(shown(find(doc))).toEqual({
      kind: 'paragraph',
      level: undefined,
      text: 'The charts are kept at the harbour office for anyone to read.',
      links: ['https://example.org/harbour/charts'],
      html: 'The charts are kept at <a href="https://example.org/harbour/charts">the harbour office</a> for anyone to read.',
      list: undefined,
    });
    expect(shown(find(doc))).toEqual(shown(find(docx)));
    // The paragraph before shows "the harbour office" too, as plain text.
    expect(doc.find((b) => b.text.startsWith('The survey covers'))!.links).toEqual([]);
  });

  it("a hyperlink whose instruction holds a nested field keeps its link where the other links are marked (it was dropped)", async () => {
    // doc-lists.doc's first link with a field nested after its target, in the same characters (the leading space and the
    // 0x01 after the target make room): \x13HYPERLINK "..."\x13 PAGE\x15\x14the harbour office\x15.
    const bytes = Buffer.from(readFileSync(join(FIXTURES, 'doc-lists.doc')));
    const from = ' HYPERLINK "https://example.org/harbour/charts"\x01';
    const to = 'HYPERLINK "https://example.org/harbour/charts"\x13\x15';
    const at = bytes.indexOf(Buffer.from(from, 'utf16le'));
    expect([at > 0, from.length === to.length]).toEqual([true, true]);
    bytes.write(to, at, 'utf16le');
    const blocks = (await reader.parse('doc', bytes)).blocks;
    const find = (blocks: DocumentBlock[]) => blocks.find((b) => b.text.startsWith('The charts are kept at'));
    expect(find(blocks)).toMatchObject({
      links: ['https://example.org/harbour/charts'],
      html: 'The charts are kept at <a href="https://example.org/harbour/charts">the harbour office</a> for anyone to read.',
    });
    expect(find(blocks)).toEqual(find(await blocksOf('doc-lists.doc')));
    // The other link is marked as before.
    expect(blocks.find((b) => b.text.startsWith('Berth 1'))!.links).toEqual(['https://example.org/harbour/berth1']);
  });

  it('a hyperlink in a row of a table inside a cell is an <a> in that row, as in the .docx reading (it was on the link list only)', async () => {
    const [doc, docx] = await both();
    const find = (blocks: DocumentBlock[]) => blocks.find((b) => b.text.startsWith('Berth 1'));
    expect(find(doc)!.html).toBe('Berth 1 | 3 m, see <a href="https://example.org/harbour/berth1">the plan</a>');
    expect(shown(find(doc))).toEqual({ ...shown(find(docx)), level: undefined });
  });

  it('a numbered heading shows its number ("1.1 Sites" read "Sites"), from the list numbering of its style', async () => {
    const [doc, docx] = await both();
    expect(headings(doc)).toEqual([
      [1, '1 Scope'],
      [2, '1.1 Sites'],
      [2, '1.2 Depths'],
    ]);
    expect(headings(doc)).toEqual(headings(docx));
  });

  it('numbered and bulleted paragraphs are list items with their level and number, without a marker, as the .docx reading gives them', async () => {
    const [doc, docx] = await both();
    const items = (blocks: DocumentBlock[]) => blocks.filter((b) => b.list).map((b) => [b.text, b.list]);
    expect(items(doc)).toEqual([
      ['The north quay, sounded from the steps to the crane.', { ordered: true, level: 1, number: 1 }],
      ['Berth one, by the steps.', { ordered: true, level: 2, number: 1 }],
      ['Berth two, by the crane.', { ordered: true, level: 2, number: 2 }],
      ['The south quay, sounded along its whole length.', { ordered: true, level: 1, number: 2 }],
      ['The channel, sounded every fifty yards.', { ordered: true, level: 1, number: 3 }],
      ['Bring a lead line.', { ordered: false, level: 1, number: 1 }],
      ['Write down the time of each sounding.', { ordered: false, level: 1, number: 2 }],
    ]);
    expect(items(doc)).toEqual(items(docx));
  });

  it("a heading-styled paragraph in a table's cell is a line of its row with its number, counted with the headings, as in the .docx reading", async () => {
    const [doc, docx] = await both();
    const find = (blocks: DocumentBlock[]) => blocks.find((b) => b.text.endsWith('| Depth'));
    expect(shown(find(doc))).toMatchObject({ kind: 'paragraph', text: '1.3 Quay | Depth' });
    expect(find(doc)!.text).toBe(find(docx)!.text);
  });

  it('the same document as .doc and .docx makes the same cards (lists as ol/ul, links as <a>)', async () => {
    const [doc, docx] = await both();
    const cards = splitIntoCards({ blocks: doc });
    expect(cards.map((card) => card.title)).toEqual(['1 Scope', '1.1 Sites', '1.2 Depths']);
    expect(cards[1]!.html).toContain('<ol><li>The north quay, sounded from the steps to the crane.<ol><li>Berth one, by the steps.</li>');
    expect(cards).toEqual(splitIntoCards({ blocks: docx }));
  });

  it("numbered and bulleted paragraphs in a table's cells are lines of their row as in the .docx reading, and counted on in their list", async () => {
    // doc-cell-lists.doc and .docx (make-fixtures.sh, src/doc-cell-lists.fodt): a list item before the table, its list
    // going on in a cell (two levels) and after the table; bullets in a cell and in a table inside a cell.
    const [doc, docx] = [await blocksOf('doc-cell-lists.doc'), await blocksOf('doc-cell-lists.docx')];
    const rows = (blocks: DocumentBlock[]) => blocks.filter((b) => b.text.includes(' | ')).map(shown);
    expect(rows(doc)).toEqual([
      { kind: 'paragraph', level: undefined, text: 'Steps | Bring', links: [], html: undefined, list: undefined },
      {
        kind: 'paragraph',
        level: undefined,
        text: 'Drop the lead. Slowly. Straight down. Read the line. | For each boat: A lead line. A watch.',
        links: [],
        html: 'Drop the lead.<br>Slowly.<br>Straight down.<br>Read the line. | For each boat:<br>A lead line.<br>A watch.',
        list: undefined,
      },
      { kind: 'paragraph', level: undefined, text: 'Skiff | Oars. A bailer.', links: [], html: 'Skiff | Oars.<br>A bailer.', list: undefined },
    ]);
    expect(rows(doc).map((row) => ({ ...row, html: row!.html ?? row!.text }))).toEqual(rows(docx));
    // The item after the table is the list's fourth, as Word shows it (the cell's two first-level items counted).
    expect(doc.filter((b) => b.list).map((b) => [b.text, b.list])).toEqual([
      ['Wait for low water.', { ordered: true, level: 1, number: 1 }],
      ['Write the depth down.', { ordered: true, level: 1, number: 4 }],
    ]);
    expect(splitIntoCards({ blocks: doc })).toEqual(splitIntoCards({ blocks: docx }));
  });

  it('lists that lie outside the table stream number nothing, and the document is read as before', async () => {
    const bytes = Buffer.from(readFileSync(join(FIXTURES, 'doc-lists.doc')));
    // The FIB at the WordDocument stream's start (wIdent 0xA5EC): lcbPlfLst (0x02E6) far past the table stream.
    const fib = bytes.indexOf(Buffer.from([0xec, 0xa5]));
    expect(fib % 512).toBe(0);
    bytes.writeUInt32LE(0x7fff0000, fib + 0x02e6);
    const blocks = (await reader.parse('doc', bytes)).blocks;
    expect(headings(blocks)).toEqual([
      [1, 'Scope'],
      [2, 'Sites'],
      [2, 'Depths'],
    ]);
    expect(blocks.filter((b) => b.list)).toEqual([]);
    expect(blocks.find((b) => b.text.startsWith('The north quay'))!.text).toBe('The north quay, sounded from the steps to the crane.');
  });
});

describe('.doc list numbering on crafted tables (doc-lists.cjs): bounded', () => {
  const { wordLists, listInsertions } = require('../src/adapters/documents/doc-lists.cjs') as {
    wordLists(streams: { fib: Buffer; table: Buffer }): { lists: unknown[]; overrides: unknown[] } | null;
    listInsertions(found: unknown, marks: { cp: number; paragraph: object }[], bodyLength: number, format: (n: number, format: string) => string | null): { cp: number; text: string }[];
  };
  /** An LVL (MS-DOC 2.9.150): its LVLF (start, nfc, placeholders' positions), no property lists, its text. */
  const lvl = (start: number, nfc: number, text: number[], placeholders: number[] = []) => {
    const lvlf = Buffer.alloc(28);
    lvlf.writeInt32LE(start, 0);
    lvlf[4] = nfc;
    placeholders.forEach((at, k) => (lvlf[6 + k] = at + 1));
    const xst = Buffer.alloc(2 + 2 * text.length);
    xst.writeUInt16LE(text.length, 0);
    text.forEach((unit, k) => xst.writeUInt16LE(unit, 2 + 2 * k));
    return Buffer.concat([lvlf, xst]);
  };
  /** A FIB and a table stream holding one list (nine levels: `first`, then decimal "%1." levels) and one LFO for it. */
  const streams = (first: Buffer, listCount = 1) => {
    const lstf = Buffer.alloc(28);
    lstf.writeInt32LE(7, 0);
    const levels = [first, ...Array.from({ length: 8 }, () => lvl(1, 0, [0, 0x2e], [0]))];
    const plfLst = Buffer.concat([Buffer.from([listCount & 0xff, listCount >> 8]), lstf, ...levels]);
    const lfo = Buffer.alloc(16);
    lfo.writeInt32LE(7, 0);
    const plfLfo = Buffer.concat([Buffer.from([1, 0, 0, 0]), lfo, Buffer.alloc(4)]);
    const table = Buffer.concat([plfLst, plfLfo]);
    const fib = Buffer.alloc(0x300);
    fib.writeUInt32LE(0, 0x02e2);
    fib.writeUInt32LE(2 + 28, 0x02e6);
    fib.writeUInt32LE(plfLst.length, 0x02ea);
    fib.writeUInt32LE(plfLfo.length, 0x02ee);
    return { fib, table };
  };
  const letters = (n: number, format: string) => (format === 'lowerLetter' && n <= 780 ? 'a'.repeat(Math.floor((n - 1) / 26) + 1) : String(n));
  const headingMarks = (count: number) => Array.from({ length: count }, (_, i) => ({ cp: 2 * i + 1, paragraph: { ilfo: 1, ilvl: 0, heading: true, inTable: false } }));

  it('reads a list and numbers headings by its level text', () => {
    const found = wordLists(streams(lvl(1, 0, [0, 0x2e], [0])));
    expect(listInsertions(found, headingMarks(3), 6, letters).map((i) => i.text)).toEqual(['1. ', '2. ', '3. ']);
  });

  it('a level starting at 999,999,000 in letters is written in digits; a level text over 64 characters shows no number', () => {
    expect(listInsertions(wordLists(streams(lvl(999_999_000, 4, [0], [0]))), headingMarks(1), 2, letters).map((i) => i.text)).toEqual(['999999000 ']);
    expect(listInsertions(wordLists(streams(lvl(1, 0, [0, ...Array.from({ length: 5000 }, () => 0x78)], [0]))), headingMarks(1), 2, letters)).toEqual([]);
  });

  it('puts at most 2 characters per character of the body plus 64 KiB', () => {
    const found = wordLists(streams(lvl(1, 0, [0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0x78, 0], [10])));
    const put = listInsertions(found, headingMarks(20_000), 40_000, letters);
    expect(put.length).toBeGreaterThan(1000);
    expect(put.reduce((sum, i) => sum + i.text.length, 0)).toBeLessThanOrEqual(2 * 40_000 + 65536);
  });

  it('tables past their stream are refused or give no lists, never read outside it', () => {
    expect(wordLists(streams(lvl(1, 0, [0], [0]), 30000))).toBeNull();
    // Tables cut short; a level whose text claims 60,000 characters.
    const whole = streams(lvl(1, 0, [0], [0]));
    expect(wordLists({ fib: whole.fib, table: whole.table.subarray(0, 100) })).toBeNull();
    const long = lvl(1, 0, [0], [0]);
    long.writeUInt16LE(60000, 28);
    expect(() => wordLists(streams(long))).toThrow('a list level lies outside its stream');
  });
});
