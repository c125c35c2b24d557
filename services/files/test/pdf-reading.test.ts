import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';

// The PDF reading (src/adapters/documents/pdf-layout.mjs) on documents as Writer sets them: the fixtures are made by
// test/fixtures/documents/make-fixtures.sh from their sources in src/.
const FIXTURES = join(__dirname, '../../../test/fixtures/documents');
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const reader = new LibraryDocumentReader();
const texts = async (name: string) => (await reader.parse('pdf', fixture(name))).blocks.map((b) => b.text);

describe('.pdf right to left (rtl.pdf, src/rtl.fodt)', () => {
  it('a lam-alef ligature (one glyph for two characters) keeps its letters in order', async () => {
    // pdf.js reverses a right-to-left item's characters from drawing order, the two letters of the font's lam-alef glyph
    // with them ("لاستقبال" read "الستقبال").
    const [arabic] = await texts('rtl.pdf');
    expect(arabic).toBe('بني الميناء القديم لاستقبال سفن الصيد، ولا يزال الصيادون يعملون فيه كل صباح.');
  });
});
