import { crc32 } from 'node:zlib';

/**
 * Small .docx and .odt packages built in the test from their XML parts (stored, uncompressed zip entries), for the shapes
 * of document the committed fixtures lack: what mammoth and the .odt reader make of them is what a real file gives.
 */
export function zip(entries: readonly { name: string; data: string | Buffer }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const data = Buffer.isBuffer(entry.data) ? entry.data : Buffer.from(entry.data, 'utf8');
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0x0800, 6);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(name.length, 26);
    locals.push(local, name, data);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, name);
    offset += 30 + name.length + data.length;
  }
  const centralSize = centrals.reduce((n, b) => n + b.length, 0);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(centralSize, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, ...centrals, end]);
}

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';
const R = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
const XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>';
const RELS = 'http://schemas.openxmlformats.org/package/2006/relationships';
const REL = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';

export interface DocxParts {
  /** The inside of w:body. */
  body: string;
  /** The inside of w:numbering (w:abstractNum and w:num elements), when the document numbers lists. */
  numbering?: string;
  /** The footnotes' w:footnote elements (ids from 1; the separators are added): footnote(). */
  footnotes?: string;
  /** The endnotes' w:endnote elements, as footnotes. */
  endnotes?: string;
  /** Extra w:style elements. */
  styles?: string;
  /** The inside of w:settings (word/settings.xml), e.g. document-wide w:footnotePr. */
  settings?: string;
}

/** A .docx (WordprocessingML package) of the given parts, with "heading 1" (Heading1) and "List Paragraph" styles. */
export function docxPackage(parts: DocxParts): Buffer {
  const overrides = [
    ['/word/document.xml', 'document.main'],
    ['/word/styles.xml', 'styles'],
    ...(parts.numbering !== undefined ? [['/word/numbering.xml', 'numbering']] : []),
    ...(parts.footnotes !== undefined ? [['/word/footnotes.xml', 'footnotes']] : []),
    ...(parts.endnotes !== undefined ? [['/word/endnotes.xml', 'endnotes']] : []),
    ...(parts.settings !== undefined ? [['/word/settings.xml', 'settings']] : []),
  ];
  const relations = [
    ['styles', 'styles.xml'],
    ...(parts.settings !== undefined ? [['settings', 'settings.xml']] : []),
    ...(parts.numbering !== undefined ? [['numbering', 'numbering.xml']] : []),
    ...(parts.footnotes !== undefined ? [['footnotes', 'footnotes.xml']] : []),
    ...(parts.endnotes !== undefined ? [['endnotes', 'endnotes.xml']] : []),
  ];
  const entries: { name: string; data: string }[] = [
    {
      name: '[Content_Types].xml',
      data:
        `${XML}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">` +
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>' +
        overrides.map(([part, type]) => `<Override PartName="${part}" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.${type}+xml"/>`).join('') +
        '</Types>',
    },
    { name: '_rels/.rels', data: `${XML}<Relationships xmlns="${RELS}"><Relationship Id="rId1" Type="${REL}/officeDocument" Target="word/document.xml"/></Relationships>` },
    {
      name: 'word/_rels/document.xml.rels',
      data: `${XML}<Relationships xmlns="${RELS}">${relations.map(([type, target], i) => `<Relationship Id="rId${i + 1}" Type="${REL}/${type}" Target="${target}"/>`).join('')}</Relationships>`,
    },
    {
      name: 'word/styles.xml',
      data:
        `${XML}<w:styles xmlns:w="${W}"><w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>` +
        '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/></w:style>' +
        '<w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/><w:basedOn w:val="Normal"/></w:style>' +
        `${parts.styles ?? ''}</w:styles>`,
    },
    { name: 'word/document.xml', data: `${XML}<w:document xmlns:w="${W}" xmlns:r="${R}"><w:body>${parts.body}</w:body></w:document>` },
  ];
  if (parts.settings !== undefined) entries.push({ name: 'word/settings.xml', data: `${XML}<w:settings xmlns:w="${W}">${parts.settings}</w:settings>` });
  if (parts.numbering !== undefined) entries.push({ name: 'word/numbering.xml', data: `${XML}<w:numbering xmlns:w="${W}">${parts.numbering}</w:numbering>` });
  for (const kind of ['footnote', 'endnote'] as const) {
    const notes = parts[`${kind}s`];
    if (notes === undefined) continue;
    entries.push({
      name: `word/${kind}s.xml`,
      data:
        `${XML}<w:${kind}s xmlns:w="${W}"><w:${kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:${kind}>` +
        `<w:${kind} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:${kind}>${notes}</w:${kind}s>`,
    });
  }
  return zip(entries);
}

/** A footnote's or endnote's reference mark, a run of a paragraph. */
export function noteReference(id: number, kind: 'footnote' | 'endnote' = 'footnote'): string {
  return `<w:r><w:rPr><w:vertAlign w:val="superscript"/></w:rPr><w:${kind}Reference w:id="${id}"/></w:r>`;
}

/** A footnote or endnote of one paragraph of text (empty: only its number). */
export function note(id: number, text: string, kind: 'footnote' | 'endnote' = 'footnote'): string {
  const run = text ? `<w:r><w:t xml:space="preserve"> ${text}</w:t></w:r>` : '';
  return `<w:${kind} w:id="${id}"><w:p><w:r><w:${kind}Ref/></w:r>${run}</w:p></w:${kind}>`;
}

/** A w:p of text runs, with optional paragraph properties (the inside of w:pPr). */
export function wp(text: string, properties = ''): string {
  return `<w:p>${properties ? `<w:pPr>${properties}</w:pPr>` : ''}<w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;
}

const MC = 'http://schemas.openxmlformats.org/markup-compatibility/2006';
const WPS = 'http://schemas.microsoft.com/office/word/2010/wordprocessingShape';
/** The namespaces of drawingTextBox, by the prefixes it writes (mc, wp, a, wps). */
export const DRAWING_NAMESPACES = { mc: MC, wp: 'http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing', a: 'http://schemas.openxmlformats.org/drawingml/2006/main', wps: WPS };

/** A run holding a text box written only as DrawingML (mc:Choice, no VML mc:Fallback) whose content is `paragraphs` (w:p elements). */
export function drawingTextBox(paragraphs: string): string {
  const declarations = Object.entries(DRAWING_NAMESPACES).map(([prefix, uri]) => `xmlns:${prefix}="${uri}"`).join(' ');
  return (
    `<w:r><mc:AlternateContent ${declarations}><mc:Choice Requires="wps"><w:drawing><wp:anchor><wp:extent cx="1" cy="1"/><a:graphic><a:graphicData uri="${WPS}">` +
    `<wps:wsp><wps:txbx><w:txbxContent>${paragraphs}</w:txbxContent></wps:txbx></wps:wsp></a:graphicData></a:graphic></wp:anchor></w:drawing></mc:Choice></mc:AlternateContent></w:r>`
  );
}

/** Paragraph properties of a list item: numbering instance numId at level ilvl, in the "List Paragraph" style. */
export function numbered(numId: number, ilvl = 0): string {
  return `<w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="${ilvl}"/><w:numId w:val="${numId}"/></w:numPr>`;
}

/** A numbering definition: abstract list abstractId numbering its levels with the given formats ('decimal', 'bullet'), as instance numId. */
export function numberingOf(numId: number, formats: readonly string[], abstractId = numId): string {
  const levels = formats.map((format, ilvl) => `<w:lvl w:ilvl="${ilvl}"><w:start w:val="1"/><w:numFmt w:val="${format}"/><w:lvlText w:val="${format === 'bullet' ? '\u2022' : `%${ilvl + 1}.`}"/><w:pPr><w:ind w:left="${720 * (ilvl + 1)}" w:hanging="360"/></w:pPr></w:lvl>`).join('');
  return `<w:abstractNum w:abstractNumId="${abstractId}">${levels}</w:abstractNum><w:num w:numId="${numId}"><w:abstractNumId w:val="${abstractId}"/></w:num>`;
}

/** An .odt package of the given content.xml body (the inside of office:text) and automatic styles. */
export function odtPackage(text: string, automaticStyles = ''): Buffer {
  const content =
    `${XML}<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" ` +
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.3">' +
    `<office:automatic-styles>${automaticStyles}</office:automatic-styles><office:body><office:text>${text}</office:text></office:body></office:document-content>`;
  return zip([
    { name: 'mimetype', data: 'application/vnd.oasis.opendocument.text' },
    { name: 'content.xml', data: content },
    {
      name: 'META-INF/manifest.xml',
      data: `${XML}<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.text"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>`,
    },
  ]);
}

/** A line of PDF text: where its baseline starts (points from the page's bottom left), its text, its font size. */
export interface PdfLine {
  x?: number;
  y: number;
  text: string;
  size?: number;
}

/** A link annotation: its rectangle [x1, y1, x2, y2] and target. */
export interface PdfLink {
  rect: [number, number, number, number];
  url: string;
}

/**
 * A PDF of US-letter pages of Helvetica text lines (WinAnsi: Latin-1 characters), each page with its link annotations,
 * written object by object with its cross-reference table, as a PDF producer writes one.
 */
export function pdfDocument(pages: readonly { lines: readonly PdfLine[]; links?: readonly PdfLink[] }[]): Buffer {
  const pdfString = (text: string) => `(${text.replace(/[\\()]/g, (c) => `\\${c}`).replace(/[^\x20-\x7e]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, '0')}`)})`;
  const objects: string[] = [];
  const add = (body: string) => objects.push(body);
  add('<< /Type /Catalog /Pages 2 0 R >>');
  const pageIds = pages.map((_, i) => 4 + i * 2);
  add(`<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`);
  add('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>');
  for (const [i, page] of pages.entries()) {
    const annots = (page.links ?? []).map((l) => `<< /Type /Annot /Subtype /Link /Rect [${l.rect.join(' ')}] /Border [0 0 0] /A << /S /URI /URI ${pdfString(l.url)} >> >>`);
    add(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${pageIds[i]! + 1} 0 R${annots.length ? ` /Annots [${annots.join(' ')}]` : ''} >>`);
    const stream = page.lines.map((l) => `BT /F1 ${l.size ?? 11} Tf ${l.x ?? 72} ${l.y} Td ${pdfString(l.text)} Tj ET`).join('\n');
    add(`<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`);
  }
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out, 'latin1'));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out, 'latin1');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
