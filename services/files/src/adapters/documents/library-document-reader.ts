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
        // Text runs are <w:t> elements; a document without one (or with only blank ones) is empty.
        if (!/<w:t(?:\s[^>]*)?>[^<]*\S/.test(main)) throw new InvalidArgumentError('base64_docx_file: the document is empty (no text)');
        return;
      }
      case 'odt': {
        const zip = await readZip(bytes, ['mimetype', 'content.xml'], this.zipLimits);
        const content = zip.parts.get('content.xml');
        if (zip.parts.get('mimetype')?.trim() !== ODT_MIME || content === undefined) {
          throw new InvalidArgumentError('base64_docx_file: the zip container is not an OpenDocument text (.odt) document');
        }
        const body = /<office:text[\s>][\s\S]*<\/office:text>/.exec(content)?.[0] ?? '';
        if (!/>[^<]*\S[^<]*</.test(body.replace(/<text:sequence-decls>[\s\S]*?<\/text:sequence-decls>/, ''))) {
          throw new InvalidArgumentError('base64_docx_file: the document is empty (no text)');
        }
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

function hyperlinksIn(bytes: Buffer): { url: string; text: string }[] {
  const pattern = /\x13\s*HYPERLINK\s+"(https?:\/\/[^"\x13-\x15]+)"[^\x14\x15]*\x14([^\x13\x15]*)\x15/g;
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
