import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TABLE_CELL_SEPARATOR } from '@cards/card-rules';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { pdfDocument, type PdfLine } from './office-packages';

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

describe('.pdf columns', () => {
  // Two columns of Helvetica lines (pdfDocument): each about 230 points wide at 11 points, the right column from x 320.
  const words = (tag: string, n: number) => Array.from({ length: n }, (_, i) => `${tag}${String.fromCharCode(97 + i)}`).join(' ');
  const column = (x: number, lines: readonly string[]): PdfLine[] => lines.map((text, i) => ({ x, y: 700 - i * 14, text }));

  it('a paragraph goes on at the top of the next column, its word hyphenated at the column end joined', async () => {
    const left = [`Tides carry ${words('la', 8)}`, words('lb', 10), words('lc', 10), words('ld', 10), words('le', 10), `${words('lf', 8)} the characteri-`];
    const right = [`sation of ${words('ra', 9)}`, words('rb', 10), `${words('rc', 4)} ends here.`, `Next one ${words('rd', 8)}`, words('re', 10), `${words('rf', 5)} done.`];
    const pdf = pdfDocument([{ lines: [...column(72, left), ...column(320, right)] }]);
    const blocks = (await reader.parse('pdf', pdf)).blocks.map((b) => b.text.replace(/ ?[lr][a-f][a-j]\b/g, ''));
    expect(blocks).toEqual(['Tides carry the characterisation of ends here.', 'Next one done.']);
  });

  it('a column ending a sentence or a short line, or a next column starting indented, ends the paragraph', async () => {
    const read = async (lastLeft: string, rightX = 320) => {
      const left = [`Tides carry ${words('la', 8)}`, words('lb', 10), words('lc', 10), words('ld', 10), words('le', 10), lastLeft];
      const right = [`Dunes ${words('ra', 9)}`, words('rb', 10), words('rc', 10), words('rd', 10), words('re', 10), `${words('rf', 5)} done.`];
      const pdf = pdfDocument([{ lines: [...column(72, left), ...column(320, right).map((l, i) => (i === 0 ? { ...l, x: rightX } : l))] }]);
      return (await reader.parse('pdf', pdf)).blocks.map((b) => b.text.replace(/ ?[lr][a-f][a-j]\b/g, ''));
    };
    expect(await read(`${words('lf', 8)} the end.`)).toEqual(['Tides carry the end.', 'Dunes done.']);
    expect(await read(`${words('lf', 3)} the`)).toEqual(['Tides carry the', 'Dunes done.']);
    expect(await read(`${words('lf', 9)} the`, 340)).toEqual(['Tides carry the', 'Dunes done.']);
    expect(await read(`${words('lf', 9)} the`)).toEqual(['Tides carry the Dunes done.']);
  });
});

describe('.pdf without text', () => {
  it('a scan (no text layer) is refused as empty, saying it has no text layer and that OCR is not done', async () => {
    await expect(reader.inspect('pdf', fixture('scan.pdf'))).rejects.toThrow(
      'base64_docx_file: the document is empty (no text): the PDF has no text layer, as a scanned document has none (its text is an image, and text recognition, OCR, is not done)',
    );
  });
});

describe('.pdf paragraphs of one short line', () => {
  const at = (pitch: number, texts: readonly string[]): PdfLine[] => texts.map((text, i) => ({ y: 700 - i * pitch, text }));

  it('short lines ending sentences, set apart by paragraph spacing, are paragraphs each', async () => {
    const minutes = ['Motion carried, seven votes to two.', 'Yes.', 'Action: Sam to write to the council.', 'Agreed.', 'Deferred to April.', 'The chair thanked everyone.'];
    const { blocks } = await reader.parse('pdf', pdfDocument([{ lines: at(18.3, minutes) }]));
    expect(blocks.map((b) => b.text)).toEqual(minutes);
  });

  it('prose set with 1.5 line spacing stays one paragraph where a line ends a sentence', async () => {
    const full = (tag: string, end = '') => `${Array.from({ length: 12 }, (_, i) => `${tag}${String.fromCharCode(97 + i)}`).join(' ')}${end}`;
    const lines = [full('pa'), full('pb', '.'), `And ${full('pc')}`, full('pd', '.'), `Then ${full('pe')}`, 'the end.'];
    const { blocks } = await reader.parse('pdf', pdfDocument([{ lines: at(18.3, lines) }]));
    expect(blocks).toHaveLength(1);
  });
});

describe('.pdf notes (footnotes.pdf, src/footnotes.fodt)', () => {
  it("reference marks (raised, set smaller) are superscript digits; each of a page's notes is a paragraph", async () => {
    // The marks were read glued to the word before them ("school.1"), the notes as one paragraph.
    expect(await texts('footnotes.pdf')).toEqual([
      'The wardens counted the terns along the shingle bank with help from the primary school.¹ Local fishermen mapped the condition of the wooden jetty during the long dry summer.² The survey ends here.³',
      '1 Counted on the morning of the spring tide.',
      '2 Ibid., p. 10',
      '3 Measured again in 2026.',
    ]);
  });

  it('a note label set against its text is set apart from it', async () => {
    // pdf.js merges a label and its text drawn in one run ("1Measured"); here the label is drawn apart, as Writer does.
    const pdf = pdfDocument([
      {
        lines: [
          { y: 700, text: 'Tides carry the sediment along the shore, and the dunes behind them need marram grass.' },
          { y: 120, text: '1', size: 9 },
          { x: 77, y: 120, text: 'Measured in the spring survey.', size: 8.99 },
          { y: 108, text: '2', size: 9 },
          { x: 77, y: 108, text: 'Ibid., p. 10', size: 8.99 },
        ],
      },
    ]);
    expect((await reader.parse('pdf', pdf)).blocks.map((b) => b.text)).toEqual([
      'Tides carry the sediment along the shore, and the dunes behind them need marram grass.',
      '1 Measured in the spring survey.',
      '2 Ibid., p. 10',
    ]);
  });
});

describe('.pdf lists (lists.pdf, src/lists.fodt)', () => {
  it('a line starting with a list marker starts a list item, nested by its indent; the marker is no text', async () => {
    // They were run-on text: "Helpers came from two places. • Volunteers from the village • Students from the college ...".
    const { blocks } = await reader.parse('pdf', fixture('lists.pdf'));
    const item = (text: string, ordered: boolean, level: number, number: number) => ({ text, list: { ordered, level, number } });
    expect(blocks.map((b) => (b.list ? { text: b.text, list: b.list } : b.text))).toEqual([
      'The wardens walk the transect each month.',
      item('Walk the transect at low tide and record the dune toe position with the receiver.', true, 1, 1),
      item('Photograph each marker post.', true, 1, 2),
      item('Use the wide lens.', true, 2, 1),
      item('Check the focus.', true, 3, 1),
      item('Note the time.', true, 3, 2),
      item('Use the long lens.', true, 2, 2),
      item('Enter the readings.', true, 1, 3),
      'Helpers came from two places.',
      item('Volunteers from the village', false, 1, 1),
      item('Students from the college', false, 1, 1),
      item('first-year geography', false, 2, 1),
      'The data were checked after the walk.',
    ]);
  });
});

describe('.pdf heading-like paragraphs', () => {
  it('one short line set larger than the text, without a sentence end, is marked to keep with the next paragraph', async () => {
    const body = (y: number, text: string): PdfLine => ({ y, text });
    const pdf = pdfDocument([
      {
        lines: [
          { y: 715, text: 'Field measurements', size: 15 },
          body(700, 'Measurements followed a fixed protocol, and the wardens walked the transect each month.'),
          body(686, 'They ended at the jetty.'),
          { y: 660, text: 'Results were clear.', size: 15 },
          body(645, 'The dunes moved.'),
        ],
      },
    ]);
    const { blocks } = await reader.parse('pdf', pdf);
    expect(blocks.map((b) => [b.text, b.keepWithNext ?? false])).toEqual([
      ['Field measurements', true],
      ['Measurements followed a fixed protocol, and the wardens walked the transect each month. They ended at the jetty.', false],
      ['Results were clear.', false],
      ['The dunes moved.', false],
    ]);
  });

  it('a bold line in the text\'s size alone on its line is one too; ordinary bold text is not (bold-headings.pdf, src/bold-headings.fodt)', async () => {
    // "Methods of the survey" and "Results" ran into the paragraphs under them, unmarked.
    const { blocks } = await reader.parse('pdf', fixture('bold-headings.pdf'));
    expect(blocks.map((b) => [b.text, b.keepWithNext ?? false])).toEqual([
      ['Methods of the survey', true],
      ['The wardens walked the transect at low tide and recorded the dune toe position at each marker post.', false],
      ['Note: the receiver was checked against the benchmark before each walk.', false],
      ['Every reading was entered the same day. The sheets were kept in the office.', false],
      ['Results', true],
      ['The wardens checked the receiver against the benchmark every morning and noted the result on the sheet.', false],
      ['Keep to the marked paths.', false],
      ['Marram grass had spread seaward by about two metres since spring, most of all behind the fencing.', false],
    ]);
  });
});

describe('.pdf tables (table.pdf, src/table.fodt)', () => {
  it("a table's rows are paragraphs apart from those around them, each row's cells separated by TABLE_CELL_SEPARATOR", async () => {
    // The head row glued to the paragraph before, a cell's lines interleaved with the next column's, the last row to the
    // paragraph after.
    expect(await texts('table.pdf')).toEqual([
      'The log below lists the observations of the spring.',
      ['Date', 'Station', 'Observation', 'Observer'].join(TABLE_CELL_SEPARATOR),
      ['2025-01-10', 'Jetty', 'A visiting researcher compared the cost of repairing the sea wall.', 'B. Smith'].join(TABLE_CELL_SEPARATOR),
      '2025-02-11 | | Terns nested. | C. Okafor',
      'The wardens checked the log after the walk.',
    ]);
  });

  // Writer's table over two pages, its head row repeated at the top of the second (table:table-header-rows), its number
  // columns right-aligned (table-pages.pdf and table-top.pdf, src/table-pages.fodt and src/table-top.fodt).
  const counts = [
    'Station | Count | Hours',
    'Jetty | 12 | 3.5',
    'North ridge | 148 | 12.25',
    'Estuary mouth | 7 | 0.75',
    'Car park | 1,204 | 105.5',
    'Dune slack | 36 | 4.0',
    'Sea wall | 9 | 1.25',
    'Saltmarsh | 310 | 27.75',
    'Lighthouse | 55 | 6.5',
    'Old pier | 2 | 0.25',
    'Shingle bank | 87 | 9.75',
    'Tern colony | 640 | 48.0',
    'Boardwalk | 23 | 2.5',
    'Visitor centre | 1,031 | 88.25',
    'Reed bed | 14 | 1.5',
  ];

  it('a right-aligned column is one column, however wide its numbers ("North ridge | 148 | | 12.25 |" before); a head row repeated on the next page is read once', async () => {
    expect(await texts('table-pages.pdf')).toEqual([
      'The counts below were taken at each station over the season, with the hours spent there.',
      ...counts,
      'The wardens checked the counts after the season.',
    ]);
  });

  // src/table-centred.fodt: "Grade" centred ("A", "Poor", "Very good" start at three places) and "Cost" right-aligned,
  // one cell over two lines ("each" under "14,500 or 7,250"); the justified paragraph after the table ends its lines at
  // that column's right edge.
  it('a centred column is one column (table-centred.pdf: the rows were no table, one paragraph with the text after it)', async () => {
    const read = await texts('table-centred.pdf');
    expect(read[0]).toBe('The paths below were surveyed in the spring, each given a grade for its surface and the cost of its repair.');
    for (const row of ['Path | Grade | Cost', 'Cliff walk | A | 1,200', 'Church lane | B+ | 300', 'Mill path | Very good | none']) expect(read).toContain(row);
  });

  it("a right-aligned cell's second line stays in its cell (it was a paragraph after the row); a paragraph set to the column's right edge stays one", async () => {
    expect(await texts('table-centred.pdf')).toEqual([
      'The paths below were surveyed in the spring, each given a grade for its surface and the cost of its repair.',
      'Path | Grade | Cost',
      'Cliff walk | A | 1,200',
      'Beach steps | Poor | 14,500 or 7,250 each',
      'Church lane | B+ | 300',
      'Mill path | Very good | none',
      'The repairs are to be made before the summer, the beach steps first, as the most walked of the paths and the one the storm damaged most; the council pays for them from the fund kept for the coast paths.',
    ]);
  });

  it("a table starting at the top of the first page keeps its head row there (as a running head, recurring at one height on each page, it was dropped everywhere)", async () => {
    expect(await texts('table-top.pdf')).toEqual([...counts, 'The wardens checked the counts after the season.']);
  });

  it('a row split by the page break goes on in its cells, its rest read from under the repeated head row (table-split.pdf)', async () => {
    // The rest was read as the head row's first cell: "Station pairs were seen at dawn, ... | Count | Hours".
    const oldPier = 'Old pier, where two pairs were seen at dawn, feeding on the mussel beds below the third pile, and a third bird joined them later | 2 | 0.25';
    expect(await texts('table-split.pdf')).toEqual([
      'The counts below were taken at each station over the season, with the hours spent there.',
      ...counts.map((row) => (row.startsWith('Old pier') ? oldPier : row)),
      'The wardens checked the counts after the season.',
    ]);
  });

  it('without a repeated head row, the split row\'s rest alone in its column goes on in its cell too (table-split-plain.pdf)', async () => {
    // It was a paragraph of its own after "Old pier, where two | 2 | 0.25".
    const oldPier = 'Old pier, where two pairs were seen at dawn, feeding on the mussel beds below the third pile, and a third bird joined them later | 2 | 0.25';
    expect(await texts('table-split-plain.pdf')).toEqual([
      'The counts below were taken at each station over the season, with the hours spent there.',
      ...counts.map((row) => (row.startsWith('Old pier') ? oldPier : row)),
      'The wardens checked the counts after the season.',
    ]);
  });
});

describe('.pdf running lines and notes', () => {
  const body = (tag: string): PdfLine[] => Array.from({ length: 6 }, (_, i) => ({ y: 700 - i * 14, text: `${tag}${i} carries the sediment along the shore of the bay.` }));
  const label = (y: number, number: string, text: string): PdfLine[] => [
    { y, text: number, size: 9 },
    { x: 72 + number.length * 5.004 + 0.5, y, text, size: 8.99 },
  ];

  it("a page's notes recurring at the page's foot are text; a page number before a running title is not", async () => {
    const pages = [1, 2, 3].map((n) => ({
      lines: [...label(760, String(n + 10), 'Annual Report'), ...body(`Tide${n}`), ...label(100, String(n), 'Counted in spring.'), ...label(88, String(n + 3), 'Ibid., p. 10')],
    }));
    const texts = (await reader.parse('pdf', pdfDocument(pages))).blocks.map((b) => b.text);
    expect(texts.some((t) => t.includes('Annual Report'))).toBe(false);
    expect(texts.filter((t) => /^\d Ibid\., p\. 10$/.test(t))).toEqual(['4 Ibid., p. 10', '5 Ibid., p. 10', '6 Ibid., p. 10']);
  });

  it('one page: a header set smaller than the text, apart from it, and a page number alone are dropped (one-page.pdf, src/one-page.fodt)', async () => {
    // Nothing recurs on one page; both were read as paragraphs ("Dune Trust survey notes, autumn 2025", "Page 1").
    expect(await texts('one-page.pdf')).toEqual([
      'Marram grass on the north ridge',
      'The wardens walked the transect at low tide and recorded the dune toe position with the receiver at each of the twelve marker posts along the ridge, from the car park to the estuary mouth.',
    ]);
  });

  it('one page: a top line in the text\'s size (a title or a header: one page cannot tell) and a small line close to the text stay', async () => {
    // The text at the page's foot, its last line a small one 14 pt below it (a note's second line, a source).
    const lines: PdfLine[] = [
      { y: 770, text: 'Page 1' },
      { y: 740, text: 'Dune Trust survey notes' },
      ...body('Sand').map((line) => ({ ...line, y: line.y - 500 })),
      { y: 200 - 6 * 14, text: 'Counts are rounded to the nearest ten.', size: 9 },
    ];
    const texts = (await reader.parse('pdf', pdfDocument([{ lines }]))).blocks.map((b) => b.text).join('\n');
    expect(texts).toContain('Dune Trust survey notes');
    expect(texts).toContain('Counts are rounded to the nearest ten.');
    expect(texts).not.toContain('Page 1');
  });
});

describe('.pdf tables and columns in work linear in the rows', () => {
  /**
   * One page of `rows` rows of five cells ("Ab0" ... "Ab4", 30 pt apart, set 1 pt large 1.2 pt apart), each pair of
   * rows `shift` pt right of the pair before (as the security review's pdfbomb/gen.py), on a page wide enough for them.
   */
  const tablePage = (rows: number, shift: number): Buffer => {
    const height = rows * 1.2 + 100;
    const ops = ['BT', '/F1 1 Tf'];
    for (let r = 0; r < rows; r++) {
      for (let k = 0; k < 5; k++) ops.push(`1 0 0 1 ${(50 + k * 30 + Math.floor(r / 2) * shift).toFixed(1)} ${(height - 50 - r * 1.2).toFixed(1)} Tm (Ab${k}) Tj`);
    }
    ops.push('ET');
    const content = ops.join('\n');
    const objects = [
      '<< /Type /Catalog /Pages 2 0 R >>',
      '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 ${50 + 150 + rows + 100} ${Math.round(height)}] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>`,
      `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
      '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
    ];
    let out = '%PDF-1.4\n';
    const offsets: number[] = [];
    objects.forEach((body, i) => {
      offsets.push(out.length);
      out += `${i + 1} 0 obj\n${body}\nendobj\n`;
    });
    const xref = out.length;
    out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
    return Buffer.from(`${out}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`, 'latin1');
  };

  it("rows each a little out of line with the ones before do not grow one table's columns without end", async () => {
    // Each pair of rows added five columns to the table: 2,000 rows made one of 5,000, every row a paragraph of 5,000
    // cells, 2.4 MB of text (16,000 rows: 58.8 s). A table has at most 32 columns, a line of more cells is no row.
    const blocks = (await reader.parse('pdf', tablePage(2000, 2))).blocks;
    expect(blocks).toHaveLength(2000);
    const cells = blocks.map((b) => b.text.split('|').length);
    expect(Math.max(...cells)).toBeLessThanOrEqual(32);
    for (const block of blocks) expect(block.text.replace(/[\s|]+/g, ' ').trim()).toBe('Ab0 Ab1 Ab2 Ab3 Ab4');
    expect(blocks.reduce((total, b) => total + b.text.length, 0)).toBeLessThan(2000 * 32 * 6);
  });
});
