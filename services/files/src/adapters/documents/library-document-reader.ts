import { InvalidArgumentError } from '@cards/platform';
import type { DocumentBlock, DocumentFormat, ParsedDocument } from '../../domain/model';
import { UnreadableDocumentError, type DocumentReader } from '../../domain/ports';
import { blocksFromHtml, blocksFromOdtContent } from './block-collector';
import { DEFAULT_PARSER_LIMITS, parseInWorker, type ParserLimits } from './worker-parse';
import { DEFAULT_ZIP_LIMITS, readZip, type ZipLimits } from './zip-archive';

const ODT_MIME = 'application/vnd.oasis.opendocument.text';
const WORD_STREAM_NAME = Buffer.from('WordDocument', 'utf16le');

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
    switch (format) {
      case 'docx': {
        const zip = await readZip(bytes, ['[Content_Types].xml', 'word/document.xml'], this.zipLimits);
        const types = zip.parts.get('[Content_Types].xml');
        const main = zip.parts.get('word/document.xml');
        if (!types || main === undefined || !types.includes('wordprocessingml.document.main')) {
          throw new InvalidArgumentError('base64_docx_file: the zip container is not a Word .docx document (no word/document.xml main part)');
        }
        if (!docxHasText(main)) throw new InvalidArgumentError('base64_docx_file: the document is empty (no text)');
        return;
      }
      case 'odt': {
        const zip = await readZip(bytes, ['mimetype', 'content.xml'], this.zipLimits);
        const content = zip.parts.get('content.xml');
        if (zip.parts.get('mimetype')?.trim() !== ODT_MIME || content === undefined) {
          throw new InvalidArgumentError('base64_docx_file: the zip container is not an OpenDocument text (.odt) document');
        }
        if (!odtHasText(content)) throw new InvalidArgumentError('base64_docx_file: the document is empty (no text)');
        return;
      }
      case 'doc':
        if (!bytes.includes(WORD_STREAM_NAME)) throw new InvalidArgumentError('base64_docx_file: the OLE file is not a Word .doc document (no WordDocument stream)');
        return;
      case 'pdf':
        return;
    }
  }

  async parse(format: DocumentFormat, bytes: Buffer): Promise<ParsedDocument> {
    try {
      await this.inspect(format, bytes);
      return { blocks: await this.blocksOf(format, bytes) };
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      throw new UnreadableDocumentError(`the .${format} document could not be read: ${message.replace(/^base64_docx_file: /, '')}`);
    }
  }

  private async blocksOf(format: DocumentFormat, bytes: Buffer): Promise<DocumentBlock[]> {
    switch (format) {
      case 'docx':
        return blocksFromHtml(await parseInWorker('docx-html', bytes, this.parserLimits));
      case 'odt': {
        const zip = await readZip(bytes, ['content.xml'], this.zipLimits);
        return blocksFromOdtContent(zip.parts.get('content.xml') ?? '');
      }
      case 'doc':
        return blocksFromDoc(await parseInWorker('doc-text', bytes, this.parserLimits), bytes);
      case 'pdf':
        return parseInWorker('pdf-blocks', bytes, this.parserLimits);
    }
  }
}

// These checks run on the service's event loop as an upload is accepted, on text an uploader controls, so none may
// backtrack over the rest of the part from each of many starts: 40,000 unclosed copies of a start tag took 20 s.

/** Whether a .docx's word/document.xml holds text: text runs are <w:t> elements, and blank ones do not count. */
export function docxHasText(documentXml: string): boolean {
  return /<w:t(?:\s[^<>]*)?>[^<]*\S/.test(documentXml);
}

/** Whether an .odt's content.xml holds text inside office:text, outside its sequence declarations. */
export function odtHasText(contentXml: string): boolean {
  const start = contentXml.search(/<office:text[\s>]/);
  const end = contentXml.lastIndexOf('</office:text>');
  if (start < 0 || end < start) return false;
  let body = contentXml.slice(start, end + '</office:text>'.length);
  const declarations = body.indexOf('<text:sequence-decls>');
  const declarationsEnd = declarations < 0 ? -1 : body.indexOf('</text:sequence-decls>', declarations);
  if (declarationsEnd >= 0) body = body.slice(0, declarations) + body.slice(declarationsEnd + '</text:sequence-decls>'.length);
  return />[^<]*\S[^<]*</.test(body);
}

/**
 * word-extractor gives the body text with one paragraph per line and drops field codes, so the
 * hyperlink targets are recovered from the HYPERLINK field instructions in the raw file and attached
 * to the paragraph that shows their text. Paragraph styles (headings) are not available, so .doc
 * files are split like heading-less documents.
 */
function blocksFromDoc(body: string, bytes: Buffer): DocumentBlock[] {
  const hyperlinks = hyperlinksIn(bytes);
  const blocks: DocumentBlock[] = [];
  let next = 0;
  for (const line of body.split(/\r?\n/)) {
    const text = line.replace(/\s+/g, ' ').trim();
    if (!text) continue;
    const links: string[] = [];
    while (next < hyperlinks.length && text.includes(hyperlinks[next]!.text)) links.push(hyperlinks[next++]!.url);
    blocks.push({ kind: 'paragraph', text, links });
  }
  return blocks;
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
