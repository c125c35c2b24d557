import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DocumentBlock } from '../src/domain/model';
import { blocksFromHtml, blocksFromOdtContent, odtStyles } from '../src/adapters/documents/block-collector';
import { boundedBlocks, LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { UnreadableDocumentError } from '../src/domain/ports';
import { docxPackage, drawingTextBox, note, noteReference, wp, zip } from './office-packages';
import { noCardReason, splitIntoCards } from '../src/domain/card-splitter';

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

describe('password-protected .odt and .doc', () => {
  const PROTECTED = 'the document is password-protected; remove the password and upload it again';

  /** An .odt saved with a password: the manifest gives each part's encryption data, content.xml is ciphertext. */
  function encryptedOdt(): Buffer {
    const entry = (path: string) =>
      `<manifest:file-entry manifest:full-path="${path}" manifest:media-type="text/xml" manifest:size="2800"><manifest:encryption-data manifest:checksum-type="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0#sha256-1k" manifest:checksum="AAAA"><manifest:algorithm manifest:algorithm-name="http://www.w3.org/2001/04/xmlenc#aes256-cbc" manifest:initialisation-vector="AAAA"/><manifest:start-key-generation manifest:start-key-generation-name="http://www.w3.org/2000/09/xmldsig#sha256" manifest:key-size="32"/><manifest:key-derivation manifest:key-derivation-name="PBKDF2" manifest:key-size="32" manifest:iteration-count="100000" manifest:salt="AAAA"/></manifest:encryption-data></manifest:file-entry>`;
    const manifest = `<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:version="1.3" manifest:media-type="application/vnd.oasis.opendocument.text"/>${entry('content.xml')}${entry('styles.xml')}</manifest:manifest>`;
    return zip([
      { name: 'mimetype', data: 'application/vnd.oasis.opendocument.text' },
      { name: 'content.xml', data: Buffer.from(Array.from({ length: 2800 }, (_, i) => (i * 131 + 7) % 256)) },
      { name: 'META-INF/manifest.xml', data: manifest },
    ]);
  }

  /** word-features.doc with the FIB's fEncrypted bit set (as Word writes a .doc saved with a password to open). */
  function encryptedDoc(): Buffer {
    const bytes = Buffer.from(fixture('word-features.doc'));
    let at = 512;
    while (at < bytes.length && bytes.readUInt16LE(at) !== 0xa5ec) at += 512;
    expect(at).toBeLessThan(bytes.length);
    bytes.writeUInt16LE(bytes.readUInt16LE(at + 0x0a) | 0x0100, at + 0x0a);
    return bytes;
  }

  it('are refused at upload as password-protected (an .odt read "the document is empty", a .doc "could not be read (Attempt to access memory outside buffer bounds)")', async () => {
    await expect(reader.inspect('odt', encryptedOdt())).rejects.toThrow(`base64_docx_file: ${PROTECTED}`);
    await expect(reader.inspect('doc', encryptedDoc())).rejects.toThrow(`base64_docx_file: ${PROTECTED}`);
  });

  it('their ingestion records the same reason', async () => {
    for (const [format, bytes] of [['odt', encryptedOdt()], ['doc', encryptedDoc()]] as const) {
      const err = await reader.parse(format, bytes).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UnreadableDocumentError);
      expect((err as Error).message).toBe(PROTECTED);
    }
  });
});

describe('.docx and .odt: what the document shows', () => {
  it('.odt: a list numbered by a named list style in styles.xml (Writer\'s "Numbering 123", Word\'s WWNum) is numbered, not bulleted', async () => {
    const items = (await blocksOf('word-features.odt')).filter((b) => b.list);
    expect(items.map((b) => [b.text, b.list])).toEqual([
      ['Walk the transect.', { ordered: true, level: 1, number: 1 }],
      ['Photograph each post.', { ordered: true, level: 1, number: 2 }],
    ]);
    // A number style that shows no number (style:num-format="", Word's "No List") numbers nothing.
    const styles = odtStyles(
      '<office:document-styles><office:styles><text:list-style style:name="WWNum5"><text:list-level-style-number text:level="1" style:num-format="1"/></text:list-style>' +
        '<text:list-style style:name="No_20_List"><text:list-level-style-number text:level="1" style:num-format=""/></text:list-style></office:styles></office:document-styles>',
    );
    const content = '<office:text><text:list text:style-name="WWNum5"><text:list-item><text:p>a</text:p></text:list-item></text:list><text:list text:style-name="No_20_List"><text:list-item><text:p>b</text:p></text:list-item></text:list></office:text>';
    expect(blocksFromOdtContent(content, styles).map((b) => b.list?.ordered)).toEqual([true, false]);
    expect(blocksFromOdtContent(content).map((b) => b.list?.ordered)).toEqual([false, false]);
  });

  it('.odt: a paragraph style\'s list style numbers nothing by itself; a list without a style of its own is bulleted, as Writer shows both (style-lists.odt)', async () => {
    // Writer 7.4 sets "Numbering 1" paragraphs outside a list without numbers, and a text:list without text:style-name
    // with its default bullets though its paragraphs' style names "Numbering 123" (src/style-lists.fodt, made to PDF).
    const blocks = await blocksOf('style-lists.odt');
    expect(blocks.map((b) => [b.text, b.list ?? null])).toEqual([
      ['The wardens walk the transect each month.', null],
      ['Walk the transect at low tide.', null],
      ['Photograph each marker post.', null],
      ['Helpers came from two places.', null],
      ['Volunteers from the village', { ordered: false, level: 1, number: 1 }],
      ['Students from the college', { ordered: false, level: 1, number: 2 }],
      ['The data were checked after the walk.', null],
    ]);
    const styles = odtStyles(
      '<office:document-styles><office:styles><text:list-style style:name="Numbering_20_123"><text:list-level-style-number text:level="1" style:num-format="1"/></text:list-style>' +
        '<style:style style:name="Numbering_20_1" style:family="paragraph" style:list-style-name="Numbering_20_123"/></office:styles></office:document-styles>',
    );
    const content = '<office:text><text:p text:style-name="Numbering_20_1">a</text:p><text:list><text:list-item><text:p text:style-name="Numbering_20_1">b</text:p></text:list-item></text:list></office:text>';
    expect(blocksFromOdtContent(content, styles).map((b) => b.list ?? null)).toEqual([null, { ordered: false, level: 1, number: 1 }]);
  });


  it('a list whose style starts at 5 and one restarted at 3 are numbered as Writer and Word show them, in the cards too (list-starts.odt, .docx)', async () => {
    // src/list-starts.fodt: the list style's "Start at" 5 (.odt text:start-value of the number style, .docx w:start) and
    // an item restarting its list at 3 (.odt text:start-value of the item, .docx w:lvlOverride/w:startOverride). The
    // .odt reading numbered both lists from 1.
    const expected = [
      ['Open the sluice gate by a quarter turn.', 5],
      ['Wait for the basin to fill to the painted mark.', 6],
      ['Check the gauge on the north wall.', 1],
      ['Check the gauge on the south wall.', 2],
      ['Check the ice on the outer gate.', 3],
      ['Check the heater in the gate house.', 4],
    ];
    for (const name of ['list-starts.odt', 'list-starts.docx']) {
      const blocks = await blocksOf(name);
      expect([name, blocks.filter((b) => b.list).map((b) => [b.text, b.list!.number])]).toEqual([name, expected]);
      const [card] = splitIntoCards({ blocks });
      expect([name, card!.html.match(/<ol[^>]*>/g)]).toEqual([name, ['<ol start="5">', '<ol>', '<ol start="3">']]);
    }
    // A start an <ol start> cannot carry (0, negative, not whole, "Infinity") counts from 1, as the .docx reading does.
    for (const start of ['0', '-4', '2.5', 'Infinity']) {
      const styles = `<text:list-style style:name="L1"><text:list-level-style-number text:level="1" style:num-format="1" text:start-value="${start}"/></text:list-style>`;
      const content = `<office:document-content><office:automatic-styles>${styles}</office:automatic-styles><office:body><office:text><text:list text:style-name="L1"><text:list-item><text:p>a</text:p></text:list-item><text:list-item text:start-value="${start}"><text:p>b</text:p></text:list-item></text:list></office:text></office:body></office:document-content>`;
      expect([start, blocksFromOdtContent(content).map((b) => b.list?.number)]).toEqual([start, [1, 1]]);
    }
  });
  it('a line break inside a paragraph (a .docx w:br, an .odt text:line-break) is a <br> in its HTML, a space in its text, as in .doc', async () => {
    for (const name of ['word-features.docx', 'word-features.odt']) {
      const block = (await blocksOf(name)).find((b) => b.text.startsWith('Harbour Master'));
      expect(block).toMatchObject({ text: 'Harbour Master Old Customs House Portsmouth', html: 'Harbour Master<br>Old Customs House<br>Portsmouth' });
    }
    // None starts or ends a paragraph, two in a row are one; in a heading it is a space.
    expect(blocksFromOdtContent('<office:text><text:p><text:line-break/>a<text:line-break/><text:line-break/>b<text:line-break/></text:p><text:h text:outline-level="1">c<text:line-break/>d</text:h></office:text>').map((b) => b.html)).toEqual(['a<br>b', 'c d']);
  });

  it('a numbered heading keeps the number it shows ("1.1 Sites"): the .docx numbering of its style, the .odt outline style', async () => {
    for (const name of ['word-features.docx', 'word-features.odt']) {
      expect((await blocksOf(name)).filter((b) => b.kind === 'heading').map((b) => b.text)).toEqual(['1 Scope', '1.1 Sites', '1.2 Measures']);
    }
    // Each level in its own format, a heading of a higher level restarting the lower ones; an unnumbered level shows none.
    const styles = odtStyles(
      '<office:document-styles><office:styles><text:outline-style style:name="Outline"><text:outline-level-style text:level="1" style:num-format="I" style:num-suffix="."/>' +
        '<text:outline-level-style text:level="2" style:num-format="a" style:num-suffix=")" text:display-levels="2"/><text:outline-level-style text:level="3" style:num-format=""/></text:outline-style></office:styles></office:document-styles>',
    );
    const h = (level: number, text: string) => `<text:h text:outline-level="${level}">${text}</text:h>`;
    const blocks = blocksFromOdtContent(`<office:text>${h(1, 'A')}${h(2, 'B')}${h(2, 'C')}${h(3, 'D')}${h(1, 'E')}${h(2, 'F')}<text:p>x</text:p></office:text>`, styles);
    expect(blocks.filter((b) => b.kind === 'heading').map((b) => b.text)).toEqual(['I. A', 'I.a) B', 'I.b) C', 'D', 'II. E', 'II.a) F']);
  });

  it('a Symbol or Wingdings character stored in the private-use area is the character it shows (.docx w:rFonts, .odt span font)', async () => {
    for (const name of ['word-features.docx', 'word-features.odt']) {
      expect(texts(await blocksOf(name))).toContain('The threshold is \u2265 5 mg and the angle \u03B1 is small; done \u2713.');
    }
  });

  it("a superscript or subscript run whose every character has a Unicode form is written so (10⁻³, H₂O); another keeps its characters (.docx, .odt, .doc)", async () => {
    for (const name of ['word-features.docx', 'word-features.odt', 'word-features.doc']) {
      expect(texts(await blocksOf(name))).toContain('Salt at 10\u207B\u00B3 mol/L in H\u2082O, see notea.');
    }
  });
});

describe('a document of short sections', () => {
  it("makes no card, and the reason says why: each section (a heading and its text) has 70 words or fewer, however long the whole", async () => {
    const words = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}`).join(' ');
    const body = Array.from({ length: 8 }, (_, i) => wp(`Question ${i + 1}?`, '<w:pStyle w:val="Heading1"/>') + wp(`${words(30, 'a')}.`)).join('');
    const document = await reader.parse('docx', docxPackage({ body }));
    expect(splitIntoCards(document)).toEqual([]);
    expect(noCardReason(document)).toBe(
      'the document holds no passage of more than 70 words, so no card was made: its 256 words are in 8 sections (a heading and the text under it), the longest of 32 words, ' +
        'and a card holds more than 70 words of one section; put short sections under one heading to make a card of them',
    );
    // Without headings: its words.
    expect(noCardReason({ blocks: [{ kind: 'paragraph', text: words(12, 'b'), links: [] }] })).toBe('the document holds no passage of more than 70 words, so no card was made: its text has 12 words');
  });
});

describe('notes are labelled as the document shows them', () => {
  it('an endnote Writer or Word shows as "i" reads "[i: ...]" in every format (the .odt citation, the .docx and .doc number formats)', async () => {
    for (const name of ['word-features.docx', 'word-features.odt', 'word-features.doc']) {
      expect(texts(await blocksOf(name))).toContain('Planting is done in spring [i: Notes are kept at the visitor centre.] each year.');
    }
  });

  it('.odt: a section of its own footnote format labels its notes as Writer shows them, by their citations (section-notes.odt: 1, i, 2)', async () => {
    expect(texts(await blocksOf('section-notes.odt'))).toEqual(['Body one [1: First note.] text.', 'Section two [i: Second note.] text.', 'After [2: Third note.] text.']);
  });

  it(".docx: the body's section gives the formats (w:footnotePr, w:endnotePr), over Word's defaults (footnotes 1, endnotes i)", async () => {
    const body = `<w:p><w:r><w:t>Gulls</w:t></w:r>${noteReference(1)}<w:r><w:t xml:space="preserve"> and terns</w:t></w:r>${noteReference(2, 'endnote')}</w:p>`;
    const notes = { footnotes: note(1, 'Gulls scavenge.'), endnotes: note(2, 'Terns migrate.', 'endnote') };
    const read = async (section: string) => texts((await reader.parse('docx', docxPackage({ body: body + section, ...notes }))).blocks);
    expect(await read('')).toEqual(['Gulls [1: Gulls scavenge.] and terns [i: Terns migrate.]']);
    expect(await read('<w:sectPr><w:footnotePr><w:numFmt w:val="upperLetter"/></w:footnotePr><w:endnotePr><w:numFmt w:val="decimal"/></w:endnotePr></w:sectPr>')).toEqual([
      'Gulls [A: Gulls scavenge.] and terns [1: Terns migrate.]',
    ]);
  });

  it('.docx: notes start from the number the document sets (w:numStart, Word\'s "Start at"), and start from it again where they restart', async () => {
    const paragraph = (text: string, id: number, kind: 'footnote' | 'endnote' = 'footnote', sectPr = '') =>
      `<w:p>${sectPr ? `<w:pPr>${sectPr}</w:pPr>` : ''}<w:r><w:t>${text}</w:t></w:r>${noteReference(id, kind)}</w:p>`;
    const footnotes = [1, 2, 3].map((id) => note(id, `Note ${id}.`)).join('');
    const endnotes = note(4, 'Note 4.', 'endnote');
    const read = async (body: string, settings?: string) =>
      texts((await reader.parse('docx', docxPackage({ body, footnotes, endnotes, ...(settings === undefined ? {} : { settings }) }))).blocks);
    const body = paragraph('One', 1) + paragraph('Two', 2) + paragraph('Three', 3) + paragraph('End', 4, 'endnote');
    // The body's section: footnotes from 5; settings.xml: endnotes from 3 (in Word's default Roman numerals). Both read 1.
    expect(await read(`${body}<w:sectPr><w:footnotePr><w:numStart w:val="5"/></w:footnotePr></w:sectPr>`, '<w:endnotePr><w:numStart w:val="3"/></w:endnotePr>')).toEqual([
      'One [5: Note 1.]',
      'Two [6: Note 2.]',
      'Three [7: Note 3.]',
      'End [iii: Note 4.]',
    ]);
    // Numbered again in each section, from the start: the first section ends after "Two".
    const eachSect = '<w:footnotePr><w:numRestart w:val="eachSect"/><w:numStart w:val="10"/></w:footnotePr>';
    expect(await read(paragraph('One', 1) + paragraph('Two', 2, 'footnote', `<w:sectPr>${eachSect}</w:sectPr>`) + paragraph('Three', 3) + `<w:sectPr>${eachSect}</w:sectPr>`)).toEqual([
      'One [10: Note 1.]',
      'Two [11: Note 2.]',
      'Three [10: Note 3.]',
    ]);
    // A start that is no whole number from 1 to 999,999,999 is Word's 1.
    for (const start of ['0', '-2', 'x', '1000000000']) {
      expect(await read(`${paragraph('One', 1)}<w:sectPr><w:footnotePr><w:numStart w:val="${start}"/></w:footnotePr></w:sectPr>`)).toEqual(['One [1: Note 1.]']);
    }
    // Writer's "Start at" 5 (src/note-start.fodt) saved as .docx (w:numStart 5) and .doc (the DOP's nFtn 5): 5, 6, as
    // Writer shows them.
    for (const name of ['note-start.docx', 'note-start.doc']) {
      const labels = texts(await blocksOf(name)).flatMap((text) => [...text.matchAll(/\[([^:\]]+):/g)].map((m) => m[1]));
      expect([name, labels]).toEqual([name, ['5', '6', 'a']]);
    }
  });

  it('.docx: a section of its own note format (a paragraph\'s w:sectPr) labels the notes referenced in it so; the count goes on across sections', async () => {
    // Word numbers footnotes on through the document (w:numRestart "continuous") in each section's format.
    const paragraph = (text: string, id: number, kind: 'footnote' | 'endnote' = 'footnote', sectPr = '') =>
      `<w:p>${sectPr ? `<w:pPr>${sectPr}</w:pPr>` : ''}<w:r><w:t>${text}</w:t></w:r>${noteReference(id, kind)}</w:p>`;
    const roman = '<w:sectPr><w:footnotePr><w:numFmt w:val="lowerRoman"/></w:footnotePr></w:sectPr>';
    const body =
      paragraph('Preface', 1, 'footnote', roman) +
      paragraph('Chapter', 2) +
      paragraph('Also', 3) +
      paragraph('Appendix', 4, 'footnote', '<w:sectPr><w:footnotePr><w:numFmt w:val="upperLetter"/></w:footnotePr><w:endnotePr><w:numFmt w:val="decimal"/></w:endnotePr></w:sectPr>') +
      paragraph('End', 5, 'endnote') +
      '<w:sectPr><w:footnotePr><w:numFmt w:val="decimal"/></w:footnotePr></w:sectPr>';
    const footnotes = [1, 2, 3, 4].map((id) => note(id, `Note ${id}.`)).join('');
    const blocks = (await reader.parse('docx', docxPackage({ body, footnotes, endnotes: note(5, 'Note 5.', 'endnote') }))).blocks;
    // Sections: Preface (its paragraph's w:sectPr: roman footnotes); Chapter, Also, Appendix (letters, endnotes in digits);
    // End (the body's w:sectPr: digits, endnotes Word's default i).
    expect(texts(blocks)).toEqual(['Preface [i: Note 1.]', 'Chapter [B: Note 2.]', 'Also [C: Note 3.]', 'Appendix [D: Note 4.]', 'End [i: Note 5.]']);
  });

  it('.docx: notes numbered again in each section (w:numRestart eachSect, per section or in settings.xml) are labelled from 1 in each', async () => {
    const paragraph = (text: string, id: number, kind: 'footnote' | 'endnote' = 'footnote', sectPr = '') =>
      `<w:p>${sectPr ? `<w:pPr>${sectPr}</w:pPr>` : ''}<w:r><w:t>${text}</w:t></w:r>${noteReference(id, kind)}</w:p>`;
    const eachSect = (kind: 'footnote' | 'endnote', type = '') => `<w:sectPr><w:${kind}Pr><w:numRestart w:val="eachSect"/></w:${kind}Pr>${type}</w:sectPr>`;
    const footnotes = [1, 2, 3, 4].map((id) => note(id, `Note ${id}.`)).join('');
    const endnotes = [5, 6].map((id) => note(id, `Note ${id}.`, 'endnote')).join('');
    const read = async (body: string, settings?: string) =>
      texts((await reader.parse('docx', docxPackage({ body, footnotes, endnotes, ...(settings === undefined ? {} : { settings }) }))).blocks);
    // Three sections: the first two restart their footnotes, the last (the body's) counts on from the one before.
    expect(
      await read(
        paragraph('One', 1) + paragraph('Two', 2, 'footnote', eachSect('footnote')) + paragraph('Three', 3, 'footnote', eachSect('footnote')) + paragraph('Four', 4) + '<w:sectPr/>',
      ),
    ).toEqual(['One [1: Note 1.]', 'Two [2: Note 2.]', 'Three [1: Note 3.]', 'Four [2: Note 4.]']);
    // settings.xml restarts every section's endnotes (in digits); a section's own w:endnotePr could say otherwise.
    const settings = '<w:endnotePr><w:numFmt w:val="decimal"/><w:numRestart w:val="eachSect"/></w:endnotePr>';
    expect(await read(paragraph('One', 5, 'endnote', '<w:sectPr/>') + paragraph('Two', 6, 'endnote') + paragraph('Three', 1), settings)).toEqual([
      'One [1: Note 5.]',
      'Two [1: Note 6.]',
      'Three [1: Note 1.]',
    ]);
    // Without a restart, the count goes on (as before).
    expect(await read(paragraph('One', 5, 'endnote', '<w:sectPr/>') + paragraph('Two', 6, 'endnote'), '<w:endnotePr><w:numFmt w:val="decimal"/></w:endnotePr>')).toEqual([
      'One [1: Note 5.]',
      'Two [2: Note 6.]',
    ]);
  });

  it('.docx: footnotes numbered again on each page (w:numRestart eachPage) start from 1 at each page break the document records', async () => {
    const footnotes = [1, 2, 3, 4, 5, 6].map((id) => note(id, `Note ${id}.`)).join('');
    const run = (text: string) => `<w:r><w:t xml:space="preserve">${text}</w:t></w:r>`;
    const body =
      `<w:p>${run('A')}${noteReference(1)}${run(' b')}${noteReference(2)}</w:p>` +
      // An explicit page break in a run, a paragraph set to start a page, a page break Word recorded when it last laid
      // the document out; a custom mark is not counted.
      `<w:p>${run('C')}${noteReference(3)}<w:r><w:br w:type="page"/></w:r>${run(' d')}${noteReference(4)}</w:p>` +
      `<w:p><w:pPr><w:pageBreakBefore/></w:pPr>${run('E')}<w:r><w:footnoteReference w:customMarkFollows="1" w:id="5"/><w:t>*</w:t></w:r>${noteReference(6)}</w:p>` +
      '<w:sectPr><w:footnotePr><w:numRestart w:val="eachPage"/></w:footnotePr></w:sectPr>';
    const blocks = (await reader.parse('docx', docxPackage({ body, footnotes }))).blocks;
    expect(texts(blocks)).toEqual(['A [1: Note 1.] b [2: Note 2.]', 'C [3: Note 3.] d [1: Note 4.]', 'E [*: Note 5.] [1: Note 6.]']);
    // Word's record of its last layout (w:lastRenderedPageBreak), and a new section that starts a page, restart too; a
    // continuous section does not.
    const recorded =
      `<w:p>${run('A')}${noteReference(1)}</w:p><w:p><w:r><w:lastRenderedPageBreak/><w:t>B</w:t></w:r>${noteReference(2)}</w:p>` +
      `<w:p><w:pPr><w:sectPr><w:footnotePr><w:numRestart w:val="eachPage"/></w:footnotePr></w:sectPr></w:pPr>${run('C')}${noteReference(3)}</w:p>` +
      `<w:p>${run('D')}${noteReference(4)}</w:p>` +
      `<w:p><w:pPr><w:sectPr><w:type w:val="nextPage"/></w:sectPr></w:pPr>${run('E')}${noteReference(5)}</w:p>` +
      `<w:p>${run('F')}${noteReference(6)}</w:p><w:sectPr><w:type w:val="continuous"/></w:sectPr>`;
    const settings = '<w:footnotePr><w:numRestart w:val="eachPage"/></w:footnotePr>';
    expect(texts((await reader.parse('docx', docxPackage({ body: recorded, footnotes, settings }))).blocks)).toEqual([
      'A [1: Note 1.]',
      'B [1: Note 2.]',
      'C [2: Note 3.]',
      'D [1: Note 4.]',
      'E [2: Note 5.]',
      'F [3: Note 6.]',
    ]);
  });

  it('.doc: footnotes numbered again on each page or section, in each section\'s format, as Word and Writer show them (note-pages.doc, as its .docx)', async () => {
    // src/note-pages.fodt, Writer's "Counting: Per page": the .doc holds it in the DOP (rncFtn 2) and in each section's
    // SEPX (sprmSRncFtn 2, sprmSNfcFtnRef, sprmSNfcEdnRef); its pages start at a paragraph set to start one
    // (sprmPFPageBreakBefore) and at a section (a page style of its own). Writer shows 1, 2 | *, 1 | 1 and the endnote a;
    // the .doc reading counted on (1, 2 | *, 3 | 4).
    const labels = (blocks: DocumentBlock[]) => texts(blocks).flatMap((text) => [...text.matchAll(/\[([^:\]]+):/g)].map((m) => m[1]));
    const doc = await blocksOf('note-pages.doc');
    expect(labels(doc)).toEqual(['1', '2', '*', '1', 'a', '1']);
    expect(labels(await blocksOf('note-pages.docx'))).toEqual(labels(doc));
    // Crafted from it: the second section's footnotes in lower-case Roman numerals (sprmSNfcFtnRef 2), and both sections
    // numbering again per section (sprmSRncFtn 1) or continuously (0).
    const bytes = fixture('note-pages.doc');
    const sepx = Buffer.from('3c300240500000', 'hex');
    const at = [bytes.indexOf(sepx), bytes.lastIndexOf(sepx)];
    expect(at[0]).toBeGreaterThan(0);
    expect(at[1]).toBeGreaterThan(at[0]!);
    const crafted = (restart: number, secondFormat: number) => {
      const copy = Buffer.from(bytes);
      for (const offset of at) copy[offset + 2] = restart;
      copy[at[1]! + 5] = secondFormat;
      return copy;
    };
    const read = async (copy: Buffer) => labels((await reader.parse('doc', copy)).blocks);
    expect(await read(crafted(2, 2))).toEqual(['1', '2', '*', '1', 'a', 'i']);
    expect(await read(crafted(1, 0))).toEqual(['1', '2', '*', '3', 'a', '1']);
    expect(await read(crafted(0, 3))).toEqual(['1', '2', '*', '3', 'a', 'D']);
  });
});

describe('raised runs and symbol fonts in deeply nested markup', () => {
  // The first versions scanned the open spans for a font at every text, and the open superscript runs at every link or
  // emphasis: 80,000 nested ones held the thread 36 s (.odt) and 166 s (mammoth's HTML).
  const n = 80_000;

  it('.odt: 80,000 nested spans in a symbol font, in time linear in the document', () => {
    const styles = odtStyles(
      '<office:document-styles><office:font-face-decls><style:font-face style:name="Symbol" svg:font-family="Symbol"/></office:font-face-decls>' +
        '<office:styles><style:style style:name="S" style:family="text"><style:text-properties style:font-name="Symbol"/></style:style></office:styles></office:document-styles>',
    );
    const started = Date.now();
    const blocks = blocksFromOdtContent(`<office:text><text:p><text:span text:style-name="S">${'<text:span>\uf0b3'.repeat(n)}${'</text:span>'.repeat(n)}</text:span></text:p></office:text>`, styles);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(blocks[0]!.text.startsWith('\u2265\u2265')).toBe(true);
  });

  it("mammoth's HTML: 80,000 nested superscripts each holding a link, in time linear in the document", () => {
    const started = Date.now();
    const blocks = blocksFromHtml(`<p>${'<sup>1<a href="https://example.org/">2</a>'.repeat(n)}${'</sup>'.repeat(n)}</p>`);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(blocks[0]!.text.startsWith('1212')).toBe(true);
  });
});

describe('numbers written from a document value stay short', () => {
  // Word's "aa, bb" letter numbering repeats the letter once per 26: a heading numbered from a start of 999,999,000 in
  // letters was 38 million characters from a 2 KB .docx. Past 780 ("z" 30 times) a number is written in digits.
  const numbering = (start: number) =>
    `<w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="${start}"/><w:numFmt w:val="lowerLetter"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>` +
    '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>';
  const heading = wp('Title', '<w:pStyle w:val="Heading1"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>');
  const headings = async (start: number) =>
    (await reader.parse('docx', docxPackage({ body: heading + wp('Some body text here.') + heading, numbering: numbering(start) }))).blocks.filter((b) => b.kind === 'heading').map((b) => b.text);

  it('.docx: a heading numbered in letters from a huge start value shows digits', async () => {
    expect(await headings(999_999_000)).toEqual(['999999000. Title', '999999001. Title']);
    expect(await headings(779)).toEqual([`${'y'.repeat(30)}. Title`, `${'z'.repeat(30)}. Title`]);
    expect(await headings(780)).toEqual([`${'z'.repeat(30)}. Title`, '781. Title']);
  });

  it('.odt: an outline numbered in letters from a start value past 780 (or "Infinity") shows digits', () => {
    const styles = odtStyles(
      '<office:document-styles><office:styles><text:outline-style style:name="Outline"><text:outline-level-style text:level="1" style:num-format="a" style:num-suffix="."/></text:outline-style></office:styles></office:document-styles>',
    );
    const read = (start: string) =>
      blocksFromOdtContent(`<office:text><text:h text:outline-level="1" text:restart-numbering="true" text:start-value="${start}">A</text:h><text:p>x</text:p></office:text>`, styles)[0]!.text;
    // (An .odt's letters go on as a .odt's do: ..., z, aa, ab, ...; 780 is "acz".)
    expect(read('780')).toBe('acz. A');
    expect(read('781')).toBe('781. A');
    expect(read('999999000')).toBe('999999000. A');
    expect(read('Infinity')).toBe('Infinity. A');
  });

  it("the parser worker refuses a reading far larger than the document's file (unpacked), as a general guard", () => {
    const { boundedOutput, unpackedSize } = require('../src/adapters/documents/output-bounds.cjs') as {
      boundedOutput(op: string, bytes: Uint8Array, result: unknown): unknown;
      unpackedSize(bytes: Uint8Array): number;
    };
    // A Word-written (deflated) package: its parts unpacked are larger than its file.
    const docx = fixture('word-features.docx');
    const unpacked = unpackedSize(docx);
    expect(unpacked).toBeGreaterThan(2 * docx.length);
    expect(boundedOutput('docx-html', docx, '<p>Some body text here.</p>')).toBe('<p>Some body text here.</p>');
    expect(() => boundedOutput('docx-html', docx, 'x'.repeat(8 * unpacked + 64 * 1024 + 1))).toThrow(/more text than the file holds/);
    const doc = Buffer.alloc(1000);
    expect(() => boundedOutput('doc-text', doc, 'x'.repeat(8 * 1000 + 64 * 1024 + 1))).toThrow(/more text than the file holds/);
    const block = (text: string) => ({ kind: 'paragraph', text, links: [] });
    expect(boundedOutput('pdf-blocks', doc, [block('a'), block('b')])).toHaveLength(2);
    expect(() => boundedOutput('pdf-blocks', doc, [block('a'), block('x'.repeat(8 * 1000 + 64 * 1024 + 1))])).toThrow(/more text than the file holds/);
    // The .odt reading (in the service's thread) keeps the same bound on its paragraphs.
    expect(boundedBlocks([{ kind: 'paragraph', text: 'a', links: [] }], 1000)).toHaveLength(1);
    expect(() => boundedBlocks([{ kind: 'paragraph', text: 'x'.repeat(8 * 1000 + 64 * 1024 + 1), links: [] }], 1000)).toThrow(UnreadableDocumentError);
  });
});

describe('.doc fields in one pass', () => {
  const { withFieldResults } = require('../src/adapters/documents/doc-fields.cjs') as { withFieldResults(raw: string): string };

  it('a field shows its result, a field without one nothing, nested ones inside out; marks without partners stay for the caller to drop', () => {
    expect(withFieldResults('a\x13 HYPERLINK "https://example.org/" \x14shown\x15 b')).toBe('ashown b');
    expect(withFieldResults('a\x13 PAGE \x15b')).toBe('ab');
    expect(withFieldResults('\x13 IF \x13 DATE \x14today\x15 \x14in \x13 X \x14x\x15 result\x15!')).toBe('in x result!');
    // A second separator breaks its field and every field around it; a stray end or separator stays; an open start stays.
    expect(withFieldResults('\x13a\x14b\x14c\x15')).toBe('\x13a\x14b\x14c\x15');
    expect(withFieldResults('\x13o\x14\x13a\x14b\x14c\x15\x15')).toBe('\x13o\x14\x13a\x14b\x14c\x15\x15');
    expect(withFieldResults('x\x15y\x14z\x13w\x13i\x14r\x15')).toBe('x\x15y\x14z\x13wr');
  });

  it("with link marks, a HYPERLINK field's target is read with the fields nested in its instruction showing their results (such a link was dropped)", () => {
    const marked = (raw: string) => (withFieldResults as (raw: string, options: { linkMarks: boolean }) => string)(raw, { linkMarks: true });
    const link = (url: string, shown: string) => `\ue030${url}\ue032${shown}\ue031`;
    expect(marked('a\x13 HYPERLINK "https://example.org/" \x14shown\x15 b')).toBe(`a${link('https://example.org/', 'shown')} b`);
    // A field in the target (its result is part of it), a field after it, a field without a result, a field in the result.
    expect(marked('a\x13 HYPERLINK "https://\x13 REF host \x14example.org\x15/p" \x14shown\x15 b')).toBe(`a${link('https://example.org/p', 'shown')} b`);
    expect(marked('\x13 HYPERLINK "https://example.org/c" \\o "\x13 TITLE \x14Charts\x15" \x14shown\x15')).toBe(link('https://example.org/c', 'shown'));
    expect(marked('\x13HYPERLINK "https://example.org/c"\x13 PAGE \x15\x14shown\x15')).toBe(link('https://example.org/c', 'shown'));
    expect(marked('\x13 HYPERLINK "https://example.org/c" \x14see \x13 REF x \x14it\x15\x15')).toBe(link('https://example.org/c', 'see it'));
    // A target whose nested field is broken, or none at all: no link, the text as before.
    expect(marked('\x13 HYPERLINK "https://\x13a\x14b\x14c\x15" \x14shown\x15')).toBe('\x13 HYPERLINK "https://\x13a\x14b\x14c\x15" \x14shown\x15');
    expect(marked('\x13 HYPERLINK "\x13 REF x \x14\x15" \x14shown\x15')).toBe('shown');
    // 100,000 HYPERLINK fields each in the instruction of the one around it: each reads a bounded part of its own.
    const n = 100_000;
    expect(marked(`${'\x13 HYPERLINK "https://example.org/" '.repeat(n)}${'\x14r\x15'.repeat(n)}`)).toBe(link('https://example.org/', 'r'));
  });

  it('100,000 nested fields, each showing its result around the next, in one pass', () => {
    const n = 100_000;
    expect(withFieldResults(`x${'\x13I\x14r'.repeat(n)}z${'\x15'.repeat(n)}y`)).toBe(`x${'r'.repeat(n)}zy`);
    expect(withFieldResults(`${'\x13'.repeat(n)}q${'\x15'.repeat(n)}y`)).toBe('y');
  });

  // fields.doc (make-fixtures.sh): a paragraph, then 40,000 Q and 40,000 Z, made field starts and ends here. Taken out
  // innermost first, a pass each (here and in word-extractor's own clean(), no longer called), it took 17 s.
  it('.doc: 40,000 nested fields are read within the default test time', async () => {
    const bytes = Buffer.from(fixture('fields.doc'));
    for (const [letter, mark] of [[0x51, 0x13], [0x5a, 0x15]] as const) {
      for (let i = 0; i + 3 < bytes.length; i += 2) {
        if (bytes[i] === letter && bytes[i + 1] === 0 && ((bytes[i + 2] === letter && bytes[i + 3] === 0) || (i >= 2 && bytes[i - 2] === mark && bytes[i - 1] === 0))) bytes[i] = mark;
      }
    }
    expect(bytes.includes(Buffer.from('Q\0Q\0', 'latin1'))).toBe(false);
    expect(texts((await reader.parse('doc', bytes)).blocks)).toEqual(['Intro paragraph text here.']);
  }, 5_000);
});

describe('right-to-left paragraphs keep their direction (bidi.docx/.doc/.odt: make-fixtures.sh, from src/bidi.fodt)', () => {
  // Writer writes RTL Body's direction into the .docx's styles.xml (w:bidi) and the .doc's style sheet (sprmPFBiDi), an
  // automatic style's (P1, the heading's) into the paragraph's own properties; the .odt keeps its styles' writing-mode.
  const SHOWN: [DocumentBlock['kind'], string, 'rtl' | null][] = [
    ['heading', '2026 تقرير الميناء القديم', 'rtl'],
    ['paragraph', 'Old Harbour هو', 'rtl'],
    ['paragraph', '42 سفينة', 'rtl'],
    ['paragraph', '3 أرصفة', 'rtl'],
    ['paragraph', 'GPS يرشد', 'rtl'],
    ['paragraph', '1780 سنة البناء | 12 مترا عمق القناة', 'rtl'],
    ['paragraph', '2026 בנמל', 'rtl'],
    ['heading', 'The harbour in English', null],
    ['paragraph', 'The old harbour', null],
    ['paragraph', 'English text in a style based on RTL Body', null],
  ];

  it.each(['bidi.docx', 'bidi.doc', 'bidi.odt'])('%s: a right-to-left heading, paragraph, list item or table row starting with a number or a Latin word is a right-to-left block, written dir="rtl" on its h1, p or li; the others get no dir', async (name) => {
    const blocks = await blocksOf(name);
    expect(blocks.map((b, i) => [b.kind, SHOWN[i] && b.text.startsWith(SHOWN[i][1]) ? SHOWN[i][1] : b.text, b.dir ?? null])).toEqual(SHOWN);
    // The readers' marks are gone.
    expect(JSON.stringify(blocks)).not.toMatch(/cards-dir|[\ue000-\uf8ff]/);
    const [arabic, english] = splitIntoCards({ blocks });
    const tags = (html: string) => html.match(/<[a-z][a-z0-9]*[^>]*>/g);
    expect(tags(arabic!.html)).toEqual(['<h1 dir="rtl">', '<p dir="rtl">', '<p dir="rtl">', '<ol>', '<li dir="rtl">', '<li dir="rtl">', '<p dir="rtl">', '<p dir="rtl">']);
    expect(arabic!.html).toContain('<p dir="rtl">Old Harbour هو الاسم الإنجليزي');
    expect(arabic!.html).toContain('<li dir="rtl">3 أرصفة جديدة');
    expect(tags(english!.html)).toEqual(['<h1>', '<p>', '<p>']);
  });

  it('.docx: w:bidi of the paragraph, of its style or a style that one is based on, of the default paragraph style or of the document defaults; w:bidi w:val="0" sets one left to right again; a text box\'s paragraph has its own', async () => {
    const styles =
      '<w:style w:type="paragraph" w:styleId="Rtl"><w:name w:val="Rtl"/><w:pPr><w:bidi/></w:pPr></w:style>' +
      '<w:style w:type="paragraph" w:styleId="RtlQuote"><w:name w:val="Rtl Quote"/><w:basedOn w:val="Rtl"/></w:style>';
    const body =
      wp('1 بند', '<w:bidi/>') +
      wp('2 اقتباس', '<w:pStyle w:val="RtlQuote"/>') +
      wp('3 left to right', '<w:pStyle w:val="Rtl"/><w:bidi w:val="0"/>') +
      wp('4 plain') +
      wp('5 عنوان', '<w:pStyle w:val="Heading1"/><w:bidi w:val="true"/>') +
      `<w:p><w:r><w:t>6 host</w:t></w:r>${drawingTextBox(wp('7 صندوق', '<w:bidi w:val="1"/>'))}</w:p>`;
    const read = async (bytes: Buffer) => (await reader.parse('docx', bytes)).blocks.map((b) => [b.kind, b.text, b.dir ?? null]);
    expect(await read(docxPackage({ body, styles }))).toEqual([
      ['paragraph', '1 بند', 'rtl'],
      ['paragraph', '2 اقتباس', 'rtl'],
      ['paragraph', '3 left to right', null],
      ['paragraph', '4 plain', null],
      ['heading', '5 عنوان', 'rtl'],
      ['paragraph', '6 host', null],
      ['paragraph', '7 صندوق', 'rtl'],
    ]);
    // The document defaults right to left (w:pPrDefault): every paragraph is, unless its own properties say otherwise.
    const defaults = '<w:docDefaults><w:pPrDefault><w:pPr><w:bidi/></w:pPr></w:pPrDefault></w:docDefaults>';
    expect(await read(docxPackage({ body: wp('8 افتراضي') + wp('9 left to right', '<w:bidi w:val="off"/>'), styles: defaults }))).toEqual([
      ['paragraph', '8 افتراضي', 'rtl'],
      ['paragraph', '9 left to right', null],
    ]);
  });

  it(".odt: a paragraph style's writing-mode rl-tb, its own or its parent's; none or \"page\" takes the default paragraph style's, then the Standard page's", () => {
    const named =
      '<office:document-styles><office:styles><style:style style:name="Rtl" style:family="paragraph"><style:paragraph-properties style:writing-mode="rl-tb"/></style:style>' +
      '<style:style style:name="Quote" style:family="paragraph" style:parent-style-name="Rtl"/></office:styles></office:document-styles>';
    const automatic =
      '<office:automatic-styles><style:style style:name="P1" style:family="paragraph" style:parent-style-name="Quote"><style:paragraph-properties style:writing-mode="lr-tb"/></style:style>' +
      '<style:style style:name="P2" style:family="paragraph" style:parent-style-name="Standard"><style:paragraph-properties style:writing-mode="rl-tb"/></style:style></office:automatic-styles>';
    const content = (body: string) => `<office:document-content>${automatic}<office:body><office:text>${body}</office:text></office:body></office:document-content>`;
    const body =
      '<text:p text:style-name="Quote">1 اقتباس</text:p><text:p text:style-name="P1">2 left to right</text:p><text:h text:style-name="P2" text:outline-level="1">3 عنوان</text:h>' +
      '<text:list><text:list-item><text:p text:style-name="Rtl">4 بند</text:p></text:list-item></text:list><text:p>5 plain</text:p>';
    const read = (styles: string) => blocksFromOdtContent(content(body), odtStyles(styles)).map((b) => [b.text, b.dir ?? null]);
    expect(read(named)).toEqual([
      ['1 اقتباس', 'rtl'],
      ['2 left to right', null],
      ['3 عنوان', 'rtl'],
      ['4 بند', 'rtl'],
      ['5 plain', null],
    ]);
    // Writer's page style set right to left (its default paragraph style's writing-mode is "page").
    const page =
      '<office:document-styles><office:styles><style:default-style style:family="paragraph"><style:paragraph-properties style:writing-mode="page"/></style:default-style></office:styles>' +
      '<office:automatic-styles><style:page-layout style:name="Mpm1"><style:page-layout-properties style:writing-mode="rl-tb"/></style:page-layout></office:automatic-styles>' +
      '<office:master-styles><style:master-page style:name="Standard" style:page-layout-name="Mpm1"/></office:master-styles></office:document-styles>';
    expect(read(page)).toEqual([
      ['1 اقتباس', 'rtl'],
      ['2 left to right', null],
      ['3 عنوان', 'rtl'],
      ['4 بند', 'rtl'],
      ['5 plain', 'rtl'],
    ]);
  });
});
