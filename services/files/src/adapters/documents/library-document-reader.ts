import { InvalidArgumentError } from '@cards/platform';
import type { DocumentBlock, DocumentFormat, ListPlace, ParsedDocument } from '../../domain/model';
import { PASSWORD_PROTECTED } from '../../domain/document-format';
import { escapeHtml, hasVisibleText, TABLE_CELL_SEPARATOR } from '@cards/card-rules';
import { UnreadableDocumentError, type DocumentReader } from '../../domain/ports';
import { textPresenceOf, type TextPresence } from '../../domain/card-splitter';
import { blocksFromHtml, blocksFromOdtContent, odtStyles } from './block-collector';
import { docxTextScan, odtTextPresence } from './text-presence';
import { isPasswordError, readingFailure, shortCause } from './reading-failure';
import { DEFAULT_PARSER_LIMITS, parseInWorker, ReadingTimedOutError, type ParserLimits } from './worker-parse';
import { DEFAULT_ZIP_LIMITS, readZip, type ZipLimits } from './zip-archive';

const ODT_MIME = 'application/vnd.oasis.opendocument.text';
const ODT_TEMPLATE_MIME = 'application/vnd.oasis.opendocument.text-template';
/**
 * Word packages whose word/document.xml is another main part than a document's, by the part's content type (lower-cased,
 * as MIME types compare): named in the refusal, since such a file often carries a .docx name and does hold the part.
 */
const OTHER_WORD_PACKAGES: readonly (readonly [string, string])[] = [
  ['wordprocessingml.template.main', 'a Word template (.dotx)'],
  ['ms-word.document.macroenabled.main', 'a macro-enabled Word document (.docm)'],
  ['ms-word.template.macroenabledtemplate.main', 'a macro-enabled Word template (.dotm)'],
];
const WORD_STREAM_NAME = Buffer.from('WordDocument', 'utf16le');
/** A manifest entry's encryption data (manifest:encryption-data, with any namespace prefix). */
const ODT_ENCRYPTION_DATA = /<(?:[\w.-]+:)?encryption-data[\s/>]/;

/**
 * A PDF without text has no text layer: a scan's text is an image, and the service does no text recognition (OCR). Said
 * so, as an uploader of a scan sees text in it and "empty" alone reads as a fault.
 */
const NO_TEXT_LAYER =
  ': the PDF has no text layer, as a scanned document has none (its text is an image, and text recognition, OCR, is not done). Upload a PDF with text, such as one saved from the document it was made from';

/**
 * Reads documents with well-kept libraries: mammoth (.docx), word-extractor (.doc), yauzl +
 * htmlparser2 (.odt content.xml), unpdf/pdf.js (.pdf); the libraries run in a worker thread with time
 * and memory limits. Zip containers pass the bomb-checking reader before any library inflates them.
 */
export class LibraryDocumentReader implements DocumentReader {
  constructor(
    private readonly zipLimits: ZipLimits = DEFAULT_ZIP_LIMITS,
    private readonly parserLimits: ParserLimits = DEFAULT_PARSER_LIMITS,
  ) {}

  async inspect(format: DocumentFormat, bytes: Buffer): Promise<void> {
    const parts = await this.checkContainer(format, bytes);
    const presence = await this.textPresence(format, bytes, parts);
    if (presence === 'none') throw new InvalidArgumentError(`base64_docx_file: the document is empty (no text)${format === 'pdf' ? NO_TEXT_LAYER : ''}`);
    if (presence === 'headings') throw new InvalidArgumentError('base64_docx_file: the document has only headings, no text under them to make cards from');
  }

  async parse(format: DocumentFormat, bytes: Buffer): Promise<ParsedDocument> {
    try {
      await this.checkContainer(format, bytes);
      return { blocks: await this.blocksOf(format, bytes) };
    } catch (err) {
      throw readingFailure(format, err);
    }
  }

  /** The container is the format's (parts present, no decompression bomb); answers the parts the text check reads. */
  private async checkContainer(format: DocumentFormat, bytes: Buffer): Promise<ReadonlyMap<string, string>> {
    switch (format) {
      case 'docx': {
        const zip = await readZip(bytes, ['[Content_Types].xml', 'word/document.xml', 'word/styles.xml'], this.zipLimits);
        const types = zip.parts.get('[Content_Types].xml');
        const main = zip.parts.get('word/document.xml');
        if (!types || main === undefined || !types.includes('wordprocessingml.document.main')) {
          const other = types && main !== undefined ? OTHER_WORD_PACKAGES.find(([mainType]) => types.toLowerCase().includes(mainType)) : undefined;
          if (other) throw new InvalidArgumentError(`base64_docx_file: the file is ${other[1]}, not a .docx document: save it as a Word document (.docx) and upload that`);
          throw new InvalidArgumentError('base64_docx_file: the zip container is not a Word .docx document (no word/document.xml main part)');
        }
        return zip.parts;
      }
      case 'odt': {
        const zip = await readZip(bytes, ['mimetype', 'content.xml', 'META-INF/manifest.xml'], this.zipLimits);
        const content = zip.parts.get('content.xml');
        const mimetype = zip.parts.get('mimetype')?.trim();
        // An encrypted package (ODF 1.2 part 3, 3.8: a password on saving) lists each encrypted part's cipher in the
        // manifest; its content.xml is no XML (it read "the document is empty (no text)").
        if (ODT_ENCRYPTION_DATA.test(zip.parts.get('META-INF/manifest.xml') ?? '')) throw new InvalidArgumentError(`base64_docx_file: ${PASSWORD_PROTECTED}`);
        if (mimetype === ODT_TEMPLATE_MIME && content !== undefined) {
          throw new InvalidArgumentError('base64_docx_file: the file is an OpenDocument text template (.ott), not an .odt document: save it as an OpenDocument text (.odt) and upload that');
        }
        if (mimetype !== ODT_MIME || content === undefined) {
          throw new InvalidArgumentError('base64_docx_file: the zip container is not an OpenDocument text (.odt) document');
        }
        return zip.parts;
      }
      case 'doc':
        if (!bytes.includes(WORD_STREAM_NAME)) throw new InvalidArgumentError('base64_docx_file: the OLE file is not a Word .doc document (no WordDocument stream)');
        return new Map();
      case 'pdf':
        return new Map();
    }
  }

  /**
   * Whether the document holds body text, only headings or no visible text at all (textPresenceOf), as the ingestion
   * would read it. A .docx is read at a glance first, and by mammoth (as the ingestion reads it) only when its text may
   * all be headings; .doc and .pdf have no headings for the ingestion and need their library to find any text. The
   * libraries run in the worker within the upload's time limit; a check that runs out of time counts as body text, so a
   * slow but good document is never refused, and one the library cannot read at all is refused here rather than later.
   */
  private async textPresence(format: DocumentFormat, bytes: Buffer, parts: ReadonlyMap<string, string>): Promise<TextPresence> {
    const limits = { ...this.parserLimits, timeoutMs: this.parserLimits.uploadCheckMs };
    try {
      switch (format) {
        case 'docx': {
          const glance = docxTextScan(parts.get('word/document.xml') ?? '', parts.get('word/styles.xml'));
          if (glance !== 'unsure') return glance;
          return textPresenceOf(blocksFromHtml(await parseInWorker('docx-html', bytes, limits)));
        }
        case 'odt':
          return odtTextPresence(parts.get('content.xml') ?? '');
        case 'doc':
          return textPresenceOf(blocksFromDoc(await parseInWorker('doc-text', bytes, limits), bytes));
        case 'pdf':
          return (await parseInWorker('pdf-has-text', bytes, limits)) ? 'body' : 'none';
      }
    } catch (err) {
      if (err instanceof ReadingTimedOutError) return 'body';
      if (err instanceof UnreadableDocumentError && isPasswordError(err)) throw new InvalidArgumentError(`base64_docx_file: ${PASSWORD_PROTECTED}`);
      if (err instanceof UnreadableDocumentError) throw new InvalidArgumentError(`base64_docx_file: the .${format} document could not be read (${shortCause(err.message)})`);
      throw err;
    }
  }

  private async blocksOf(format: DocumentFormat, bytes: Buffer): Promise<DocumentBlock[]> {
    switch (format) {
      case 'docx':
        return blocksFromHtml(await parseInWorker('docx-html', bytes, this.parserLimits));
      case 'odt': {
        const zip = await readZip(bytes, ['content.xml', 'styles.xml'], this.zipLimits);
        const content = zip.parts.get('content.xml') ?? '';
        const styles = zip.parts.get('styles.xml') ?? '';
        return boundedBlocks(blocksFromOdtContent(content, odtStyles(styles)), content.length + styles.length);
      }
      case 'doc':
        return blocksFromDoc(await parseInWorker('doc-text', bytes, this.parserLimits), bytes);
      case 'pdf':
        return parseInWorker('pdf-blocks', bytes, this.parserLimits);
    }
  }
}

/**
 * The .odt reading's general guard, as the parser worker's for the other formats (output-bounds.cjs): no paragraph is
 * more than OUTPUT_GROWTH times the parts it was read from, plus OUTPUT_SLACK; else the reading made text the file does
 * not hold and the document is refused.
 */
const OUTPUT_GROWTH = 8;
const OUTPUT_SLACK = 64 * 1024;
export function boundedBlocks(blocks: DocumentBlock[], partsLength: number): DocumentBlock[] {
  const limit = OUTPUT_GROWTH * partsLength + OUTPUT_SLACK;
  for (const block of blocks) {
    const size = Math.max(block.text.length, block.html?.length ?? 0);
    if (size > limit) throw new UnreadableDocumentError(`the reading made more text than the file holds (${size} characters from ${partsLength} of XML)`);
  }
  return blocks;
}

/**
 * The worker's text (word-documents.mjs wordText) has one paragraph per line, each field showing its result, and keeps
 * Word's marks the reading needs: a table cell's end (0x07; a row is one line, its cells ending so), a line break (0x0B:
 * Shift+Enter, or a paragraph's end inside a cell), an inner table's cell lines, cell ends and row ends (DOC_INNER_*: a
 * table inside a cell), a heading's end (DOC_HEADING_END + its level, from the paragraph's style or outline level), a
 * list item's place at its start (DOC_LIST_ITEM, from Word's list numbering; a numbered heading's number is text) and
 * each hyperlink field's shown text with its target (DOC_LINK_*: the link stays where its field is; a text without
 * them takes the HYPERLINK fields of the raw bytes, marked at the first text showing theirs). A heading paragraph is a
 * heading block, as a .docx "Heading n" is; a list item a paragraph with its ListPlace, as mammoth's li. A row is one
 * paragraph of its cells separated by TABLE_CELL_SEPARATOR, an empty cell's too, as the other readers write a row
 * (block-collector.ts); a row holding a table in a cell is read through blocksFromHtml as the .docx reading reads
 * mammoth's table (the inner rows paragraphs of their own, their links as <a>). A line break is a <br> in the block's
 * HTML (a space in its text), as a cell's lines are; a paragraph or row holding a hyperlink has it as an <a> in its HTML,
 * as a .docx paragraph has (a link whose shown text runs over a break keeps the paragraph without HTML: the link
 * anchored by word, the break a space). A right-to-left paragraph (its own or its style's sprmPFBiDi) is marked at its
 * start (DOC_RTL) and its block is right to left (DocumentBlock.dir).
 */
export function blocksFromDoc(body: string, bytes: Buffer): DocumentBlock[] {
  // The worker marks each hyperlink field's shown text with its target; a text without such marks (none in the document,
  // or fields the worker could not pair) takes the HYPERLINK fields of the raw bytes, marked at the first text showing them.
  const hyperlinks = body.includes(DOC_LINK_START) ? [] : hyperlinksIn(bytes);
  const blocks: DocumentBlock[] = [];
  let next = 0;
  for (let raw of body.split(/\r?\n/)) {
    // A right-to-left paragraph's mark (word-documents.mjs markDirections) before the line's first visible character:
    // a row's when its first cell's paragraph with text is.
    const rtlAt = raw.indexOf(DOC_RTL);
    const dir = rtlAt >= 0 && !visible(raw.slice(0, rtlAt)) ? { dir: 'rtl' as const } : {};
    if (rtlAt >= 0) raw = raw.replaceAll(DOC_RTL, '');
    const headingEnd = /[\ue011-\ue019]\s*$/.exec(raw);
    const level = headingEnd ? headingEnd[0].charCodeAt(0) - DOC_HEADING_END : undefined;
    raw = raw.replace(DOC_HEADING_MARKS, '');
    // A list item's mark (word-documents.mjs numberLists): numbered or bulleted, its level and its number.
    const item = DOC_LIST_ITEM.exec(raw);
    const list: ListPlace | undefined = item ? { ordered: item[1] === 'o', level: Number(item[2]), number: Number(item[3]) } : undefined;
    raw = raw.replace(DOC_LIST_ITEM, '').replace(DOC_LIST_MARKS, '');
    // Each link's shown text between DOC_LINK_START and DOC_LINK_END, its target taken out in order.
    const urls: string[] = [];
    raw = raw.replace(DOC_LINK_TARGET, (_, url: string) => {
      urls.push(url);
      return DOC_LINK_START;
    });
    if (hyperlinks.length > 0) {
      const spaced = raw.replace(/[\x0b\x10-\x12]/g, ' ').replaceAll(DOC_CELL_END, ' ');
      let from = 0;
      let marked = '';
      while (next < hyperlinks.length) {
        const at = spaced.indexOf(hyperlinks[next]!.text, from);
        if (at < 0) break;
        const { url, text: shown } = hyperlinks[next++]!;
        marked += `${raw.slice(from, at)}${DOC_LINK_START}${raw.slice(at, at + shown.length)}${DOC_LINK_END}`;
        urls.push(url);
        from = at + shown.length;
      }
      raw = marked + raw.slice(from);
    }
    if (DOC_INNER_MARKS.test(raw)) {
      // A row holding a table in a cell: its blocks as the .docx reading makes them (its links as <a>).
      blocks.push(...blocksFromHtml(nestedRowHtml(raw, urls)));
      continue;
    }
    const cells = raw.includes(DOC_CELL_END) ? raw.split(DOC_CELL_END) : null;
    // A row's line ends with its last cell's mark.
    if (cells && !visible(cells[cells.length - 1]!)) cells.pop();
    const lines = (cells ? cells.map((cell) => collapsed(cell.replaceAll(DOC_LINE_BREAK, ' '))).join(TABLE_CELL_SEPARATOR) : raw)
      .split(DOC_LINE_BREAK)
      .map(collapsed)
      .filter(visible);
    const { text, anchors } = linkedText(lines.join(' '), urls);
    if (!hasVisibleText(text)) continue;
    const links = anchors.map((anchor) => anchor.url);
    const linkWords = anchors.map((anchor) => text.slice(0, anchor.at).split(' ').length - 1);
    if (level !== undefined) {
      // A heading: its line breaks are spaces (a heading is one line of a card's title).
      blocks.push({ kind: 'heading', level, text, links, linkWords, ...dir });
      continue;
    }
    // A row's cells' lines: their <br>s too. A paragraph with a link has it as an <a>, as a .docx paragraph has.
    const cellLines = cells?.some((cell) => cell.includes(DOC_LINE_BREAK)) ?? false;
    const html =
      links.length > 0 || lines.length >= 2 || cellLines
        ? linkedHtml(cells ? cells.map((cell) => cell.split(DOC_LINE_BREAK).map(collapsed).filter(visible).join(DOC_LINE_BREAK)).join(TABLE_CELL_SEPARATOR) : lines.join(DOC_LINE_BREAK), urls)
        : undefined;
    blocks.push({ kind: 'paragraph', text, links, linkWords, ...(html === undefined ? {} : { html }), ...(list ? { list } : {}), ...dir });
  }
  return blocks;
}

/** word-documents.mjs's marks of a link (doc-fields.cjs): its start, its target's end (the target between them), its end. */
const DOC_LINK_START = '\ue030';
const DOC_LINK_END = '\ue031';
const DOC_LINK_TARGET = /\ue030([^\ue030-\ue032]*)\ue032/g;
const DOC_LINK_MARKS = /[\ue030-\ue03f]/g;
/** word-documents.mjs's mark of a right-to-left paragraph at its start (markDirections; in DOC_LIST_MARKS' range). */
const DOC_RTL = '\ue022';
/** word-documents.mjs's mark of a list item at its paragraph's start (numberLists), and any other of its range (dropped). */
const DOC_LIST_ITEM = /^\s*\ue020([ou])([1-9])\.([0-9]{1,9})\ue021/;
const DOC_LIST_MARKS = /[\ue020-\ue02f]/g;
/** Whether a line shows text without the link marks. */
const visible = (text: string) => hasVisibleText(text.replace(DOC_LINK_MARKS, ''));

/**
 * A line's text with its link marks taken out and its whitespace collapsed, and each outermost link's place in it (its
 * shown text without the spaces at its ends), its target the next of `urls` (a link nested in a link is its text).
 */
function linkedText(marked: string, urls: readonly string[]): { text: string; anchors: { at: number; length: number; url: string }[] } {
  let text = '';
  const anchors: { at: number; length: number; url: string }[] = [];
  let url = 0;
  let depth = 0;
  let open: { at: number; url: string } | null = null;
  for (const c of marked) {
    if (c === DOC_LINK_START) {
      const target = urls[url++];
      if (depth++ === 0 && target !== undefined) open = { at: text.length, url: target };
    } else if (c === DOC_LINK_END) {
      if (depth === 0) continue;
      if (--depth === 0 && open) {
        const shown = text.slice(open.at);
        const at = open.at + (shown.length - shown.trimStart().length);
        const length = shown.trim().length;
        if (length > 0) anchors.push({ at, length, url: open.url });
        open = null;
      }
    } else if (!DOC_LINK_MARKS.test(c)) {
      if (/\s/.test(c)) {
        if (text.length > 0 && !text.endsWith(' ')) text += ' ';
      } else text += c;
    }
    DOC_LINK_MARKS.lastIndex = 0;
  }
  const trimmed = text.trimEnd();
  return { text: trimmed, anchors: anchors.filter((anchor) => anchor.at + anchor.length <= trimmed.length) };
}

/**
 * The HTML of a line's text (escaped) with its line breaks (DOC_LINE_BREAK) as <br> and each outermost link as an <a> at
 * its shown text (spaces at its ends outside it), its target the next of `urls`; undefined when a link runs over a break
 * (the block keeps its text alone, the break a space, as before). A link without a target or an end is its text.
 */
function linkedHtml(marked: string, urls: readonly string[], cursor = { url: 0 }): string | undefined {
  let html = '';
  let space = false;
  let depth = 0;
  let open = false;
  const ends: number[] = [];
  const opens: number[] = [];
  for (const c of marked) {
    if (c === DOC_LINK_START) {
      const target = urls[cursor.url++];
      if (depth++ === 0 && target !== undefined) {
        if (space && html.length > 0) html += ' ';
        space = false;
        opens.push(html.length);
        html += `<a href="${escapeHtml(target)}">`;
        open = true;
      }
    } else if (c === DOC_LINK_END) {
      if (depth === 0) continue;
      if (--depth === 0 && open) {
        html += '</a>';
        ends.push(html.length);
        open = false;
      }
    } else if (c === DOC_LINK_BREAK_CHAR) {
      if (open) return undefined;
      html += '<br>';
      space = false;
    } else if (/\s/.test(c)) {
      space = true;
    } else if (!/[\ue030-\ue03f]/.test(c)) {
      if (space && html.length > 0 && !html.endsWith('<br>') && !html.endsWith('">')) html += ' ';
      space = false;
      html += escapeHtml(c);
    }
  }
  // A link never ended is its text: its <a> goes.
  if (open) {
    const at = opens[opens.length - 1]!;
    html = html.slice(0, at) + html.slice(at).replace(/^<a href="[^"]*">/, '');
  }
  // An empty link is no link.
  return html.replace(/<a href="[^"]*"><\/a>/g, '');
}
const DOC_LINK_BREAK_CHAR = '\x0b';

/** word-documents.mjs's marks in a .doc's text: a table cell's end, a line break. */
const DOC_CELL_END = '\x07';
const DOC_LINE_BREAK = '\x0b';
/** word-documents.mjs's marks of an inner table (a table inside a cell): a cell's end, a row's end, a line of a cell. */
const DOC_INNER_CELL_END = '\x10';
const DOC_INNER_ROW_END = '\x11';
const DOC_INNER_MARKS = /[\x10-\x12]/;
/** word-documents.mjs's mark of a heading's end: this plus its level (1-9); any other of its range is dropped. */
const DOC_HEADING_END = 0xe010;
const DOC_HEADING_MARKS = /[\ue010-\ue01f]/g;
const collapsed = (text: string) => text.replace(/\s+/g, ' ').trim();

/**
 * The HTML of a .doc table row holding a table in a cell, as mammoth writes such a row of a .docx: each cell's paragraphs
 * (its lines) as p, an inner table's rows inside the cell where they stand. Only escaped text and table, tr, td and p.
 */
function nestedRowHtml(raw: string, urls: readonly string[]): string {
  const cells = raw.split(DOC_CELL_END);
  if (cells.length > 1 && !visible(cells[cells.length - 1]!)) cells.pop();
  // The targets of the row's links in order, each paragraph's taken as it is written (an invisible one's too).
  const cursor = { url: 0 };
  const paragraph = (text: string) => {
    const html = linkedHtml(text, urls, cursor) ?? '';
    return visible(text) ? `<p>${html}</p>` : '';
  };
  const cellHtml = (cell: string): string => {
    let html = '';
    let inner = false;
    let row = false;
    let open = false;
    const parts = cell.split(/([\x0b\x10-\x12])/);
    for (let i = 0; i < parts.length; i += 2) {
      const text = parts[i]!;
      const mark = parts[i + 1];
      if (mark === undefined || mark === DOC_LINE_BREAK) {
        // A paragraph of the outer cell: after an inner table, the table ends.
        if (inner) html += `${open ? '</td>' : ''}${row ? '</tr>' : ''}</table>`;
        inner = row = open = false;
        html += paragraph(text);
        continue;
      }
      if (!inner) html += '<table>';
      inner = true;
      if (mark === DOC_INNER_ROW_END) {
        html += `${open ? `${paragraph(text)}</td>` : ''}${row ? '</tr>' : ''}`;
        row = open = false;
        continue;
      }
      if (!row) html += '<tr>';
      if (!open) html += '<td>';
      row = open = true;
      html += paragraph(text);
      if (mark === DOC_INNER_CELL_END) {
        html += '</td>';
        open = false;
      }
    }
    if (inner) html += `${open ? '</td>' : ''}${row ? '</tr>' : ''}</table>`;
    return `<td>${html}</td>`;
  };
  return `<table><tr>${cells.map(cellHtml).join('')}</tr></table>`;
}

/** Hyperlink fields in a .doc's raw bytes; an instruction ends at the next field start, so each scan stops there. */
export function hyperlinksIn(bytes: Buffer): { url: string; text: string }[] {
  const pattern = /\x13\s*HYPERLINK\s+"(https?:\/\/[^"\x13-\x15]+)"[^\x13\x14\x15]*\x14([^\x13\x15]*)\x15/g;
  const found: { url: string; text: string }[] = [];
  for (const encoding of ['utf16le', 'latin1'] as const) {
    const text = bytes.toString(encoding);
    for (const m of text.matchAll(pattern)) {
      const shown = m[2]!.replace(/[\x00-\x1f]/g, '').replace(/\s+/g, ' ').trim();
      found.push({ url: m[1]!, text: shown || m[1]! });
    }
  }
  return found;
}
