import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DocumentBlock } from '../src/domain/model';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';

// The Word and OpenDocument readers on what ordinary documents hold (word-features.doc/.docx/.odt: make-fixtures.sh, from
// src/word-features.fodt, one document saved by Writer in each format).
const FIXTURES = join(__dirname, '../../../test/fixtures/documents');
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const reader = new LibraryDocumentReader();
const blocksOf = async (name: string): Promise<DocumentBlock[]> => (await reader.parse(name.split('.').pop() as 'doc' | 'docx' | 'odt', fixture(name))).blocks;
const texts = (blocks: DocumentBlock[]) => blocks.map((b) => b.text);

describe('.doc (word-extractor): the text as Word shows it', () => {
  it("optional hyphens are no text (word-extractor's clean() made each 'undefined'); a non-breaking hyphen stays a hyphen; no control character is left", async () => {
    const blocks = await blocksOf('word-features.doc');
    const all = texts(blocks).join('\n');
    expect(all).toContain('Die Begründung der Gemeinde steht fest. The e\u2011mail of Jean\u2011Pierre is kept.');
    expect(all).not.toContain('undefined');
    expect(all).not.toMatch(/[\x00-\x08\x0b-\x1f]/);
  });

  it('curly quotes, en and em dashes stay as written (word-extractor flattened them to ASCII by default)', async () => {
    expect(texts(await blocksOf('word-features.doc'))).toContain('\u201CCurly\u201D and \u2018single\u2019 quotes, 2020\u20132025 and a pause\u2014then more.');
  });

  it("a table row is one paragraph of its cells separated by ' | ', an empty cell's too; a cell's paragraphs are lines of the row, as the .docx and .odt readers write it", async () => {
    const rows = (blocks: DocumentBlock[]) => blocks.filter((b) => b.text.includes(' | ')).map((b) => [b.text, b.html ?? null]);
    const doc = rows(await blocksOf('word-features.doc'));
    expect(doc).toEqual([
      ['Site | Note | Depth', null],
      ['Jetty | | 3 m', null],
      ['North ridge | dry | 9 m', 'North<br>ridge | dry | 9 m'],
    ]);
    const docx = rows(await blocksOf('word-features.docx'));
    expect(docx.map(([text]) => text)).toEqual(doc.map(([text]) => text));
    expect(docx[2]![1]).toBe(doc[2]![1]);
  });

  it('a line break inside a paragraph (0x0B, Shift+Enter) is a <br> in its HTML, a space in its text', async () => {
    const block = (await blocksOf('word-features.doc')).find((b) => b.text.startsWith('Harbour Master'));
    expect(block).toMatchObject({ text: 'Harbour Master Old Customs House Portsmouth', html: 'Harbour Master<br>Old Customs House<br>Portsmouth' });
  });

  it("a Symbol or Wingdings character (stored in the private-use area) is the character it shows, as mammoth maps a .docx's w:sym", async () => {
    expect(texts(await blocksOf('word-features.doc'))).toContain('The threshold is \u2265 5 mg and the angle \u03B1 is small; done \u2713.');
  });
});
