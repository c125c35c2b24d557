import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DocumentBlock } from '../src/domain/model';
import { blocksFromDoc, LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { splitIntoCards } from '../src/domain/card-splitter';

// A .doc's structure beyond its text, read as the .docx and .odt readings read the same document (make-fixtures.sh:
// doc-structure.doc/.docx from src/doc-structure.fodt, doc-outline.doc/.odt from src/doc-outline.fodt, each saved by
// Writer in both formats): headings, a paragraph holding both line breaks and a hyperlink, a table inside a table's cell.
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
    // A cell holding a paragraph, an inner table of one row of two cells (the second of two lines), then a paragraph.
    expect(blocksFromDoc('Before\x0bA\x10B1\x12B2\x10\x11After\x07Next\x07', Buffer.alloc(0)).map((b) => [b.text, b.html])).toEqual([
      ['Before', 'Before'],
      ['A | B1 B2', 'A | B1<br>B2'],
      ['After | Next', 'After | Next'],
    ]);
  });
});
