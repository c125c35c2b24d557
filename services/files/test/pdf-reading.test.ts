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

  it('English words and digits inside a right-to-left line keep their spaces', async () => {
    // They are pdf.js items of their own, set apart from the right-to-left items around them; their spaces were lost
    // ("الشمالي.The English", "מספר42ספינות").
    const [, arabic, hebrew] = await texts('rtl.pdf');
    expect(arabic).toBe('يقع الميناء على الساحل الشمالي. The English name is Old Harbour. وقد بني في القرن الثامن عشر.');
    expect(hebrew).toBe('בנמל עגנו מספר 42 ספינות בשנת 2026 לפי הספירה.');
  });
});

describe('.pdf Chinese and Japanese (cjk.pdf, src/cjk.fodt)', () => {
  it('lines are joined without a space', async () => {
    expect(await texts('cjk.pdf')).toEqual([
      '北部海岸的沙丘在过去十年中不断后退，当地居民和研究人员一起记录了每一次风暴之后的变化。',
      '北の海岸の砂丘は過去十年間で後退を続けており、地元の住民と研究者は嵐のたびに変化を記録してきました。',
    ]);
  });
});
