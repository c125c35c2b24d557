import { InvalidArgumentError } from '@cards/platform';
import type { DocumentBlock, DocumentFormat, ParsedDocument } from '../../domain/model';
import { PASSWORD_PROTECTED } from '../../domain/document-format';
import { hasVisibleText, TABLE_CELL_SEPARATOR } from '@cards/card-rules';
import { escapeHtml } from '../../domain/card-splitter';
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
          return hasVisibleText(await parseInWorker('doc-text', bytes, limits)) ? 'body' : 'none';
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
 * word-extractor gives the body text with one paragraph per line and drops field codes, so the
 * hyperlink targets are recovered from the HYPERLINK field instructions in the raw file and attached
 * to the paragraph that shows their text, anchored at the word where it shows it. Paragraph styles (headings) are not
 * available, so .doc files are split like heading-less documents. The worker's text (word-documents.mjs wordText) keeps
 * two of Word's marks: a table cell's end (0x07; a row is one line, its cells ending so) and a line break (0x0B: Shift+
 * Enter, or a paragraph's end inside a cell). A row is one paragraph of its cells separated by TABLE_CELL_SEPARATOR, an
 * empty cell's too, as the other readers write a row (block-collector.ts); a line break is a <br> in the block's HTML (a
 * space in its text), as a cell's lines are, except in a paragraph holding a hyperlink, whose place in the text is
 * anchored by word (linkWords) and not in HTML: there it stays a space.
 */
function blocksFromDoc(body: string, bytes: Buffer): DocumentBlock[] {
  const hyperlinks = hyperlinksIn(bytes);
  const blocks: DocumentBlock[] = [];
  let next = 0;
  for (const raw of body.split(/\r?\n/)) {
    const cells = raw.includes(DOC_CELL_END) ? raw.split(DOC_CELL_END) : null;
    // A row's line ends with its last cell's mark.
    if (cells && !hasVisibleText(cells[cells.length - 1]!)) cells.pop();
    const lines = (cells ? cells.map((cell) => collapsed(cell.replaceAll(DOC_LINE_BREAK, ' '))).join(TABLE_CELL_SEPARATOR) : raw)
      .split(DOC_LINE_BREAK)
      .map(collapsed)
      .filter(hasVisibleText);
    const text = collapsed(lines.join(' '));
    if (!hasVisibleText(text)) continue;
    const links: string[] = [];
    const linkWords: number[] = [];
    let searchFrom = 0;
    while (next < hyperlinks.length && text.includes(hyperlinks[next]!.text)) {
      const { url, text: shown } = hyperlinks[next++]!;
      const at = text.indexOf(shown, searchFrom) >= 0 ? text.indexOf(shown, searchFrom) : text.indexOf(shown);
      searchFrom = at + shown.length;
      links.push(url);
      linkWords.push(text.slice(0, at).split(' ').length - 1);
    }
    // A row's cells' lines: their <br>s too.
    const cellLines = cells?.some((cell) => cell.includes(DOC_LINE_BREAK)) ?? false;
    const html =
      links.length > 0 || (lines.length < 2 && !cellLines)
        ? undefined
        : cells
          ? cells.map((cell) => cell.split(DOC_LINE_BREAK).map(collapsed).filter(hasVisibleText).map(escapeHtml).join('<br>')).join(escapeHtml(TABLE_CELL_SEPARATOR)).replace(/\s+/g, ' ').trim()
          : lines.map(escapeHtml).join('<br>');
    blocks.push({ kind: 'paragraph', text, links, linkWords, ...(html === undefined ? {} : { html }) });
  }
  return blocks;
}

/** word-documents.mjs's marks in a .doc's text: a table cell's end, a line break. */
const DOC_CELL_END = '\x07';
const DOC_LINE_BREAK = '\x0b';
const collapsed = (text: string) => text.replace(/\s+/g, ' ').trim();

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
