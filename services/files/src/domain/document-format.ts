import { InvalidArgumentError, refuseIfProblem } from '@cards/platform';
import { characterCount, nameProblem } from '@cards/card-rules';
import type { DocumentFormat } from './model';

/** Canonical MIME type of each accepted format, plus aliases clients commonly send. */
const MIME_TYPES: Record<DocumentFormat, { canonical: string; aliases: string[] }> = {
  docx: { canonical: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', aliases: [] },
  doc: { canonical: 'application/msword', aliases: ['application/vnd.ms-word', 'application/x-msword'] },
  odt: { canonical: 'application/vnd.oasis.opendocument.text', aliases: [] },
  pdf: { canonical: 'application/pdf', aliases: ['application/x-pdf'] },
};

const OLE_SIGNATURE = Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
const ZIP_SIGNATURE = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

export const MAX_FILE_NAME_LENGTH = 255;

/** What an uploader of a document that needs a password to open is told (upload check and ingestion alike). */
export const PASSWORD_PROTECTED = 'the document is password-protected; remove the password and upload it again';

/**
 * The streams Office writes into the OLE compound file that holds a password-protected .docx/.xlsx/.pptx instead of its
 * zip ([MS-OFFCRYPTO] 2.3.4.1): the encrypted zip and the key's description.
 */
const ENCRYPTION_STREAMS = ['EncryptedPackage', 'EncryptionInfo'].map((name) => Buffer.from(`${name}\0`, 'utf16le'));
const DIRECTORY_ENTRY_BYTES = 128;
const STREAM_ENTRY = 2;

const PATH_SEPARATORS = /[/\\]/;

/** The format named by the file name's extension; 400 when it is not one we accept. Characters count as code points. */
export function formatFromFileName(fileName: string): DocumentFormat {
  const name = fileName.trim();
  if (name.length === 0) throw new InvalidArgumentError('file_name: is required');
  if (characterCount(name) > MAX_FILE_NAME_LENGTH) throw new InvalidArgumentError(`file_name: at most ${MAX_FILE_NAME_LENGTH} characters`);
  // The rule of every name shown to others (@cards/card-rules): no control, bidi-override or other hiding character.
  refuseIfProblem('file_name', nameProblem(name));
  if (PATH_SEPARATORS.test(name)) throw new InvalidArgumentError('file_name: must not contain slashes');
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  if (ext === 'docx' || ext === 'doc' || ext === 'odt' || ext === 'pdf') return ext;
  throw new InvalidArgumentError(`file_name: the extension must be .docx, .doc, .odt or .pdf (got ${ext ? `.${ext}` : 'none'})`);
}

/** The canonical MIME type to store; 400 when the given one names another format. */
export function checkMimeType(format: DocumentFormat, mimeType: string): string {
  const given = mimeType.trim().toLowerCase().split(';')[0]!.trim();
  const known = MIME_TYPES[format];
  if (given === known.canonical || known.aliases.includes(given)) return known.canonical;
  throw new InvalidArgumentError(`file_mime_type: ${mimeType || '(empty)'} does not match a .${format} file; expected ${known.canonical}`);
}

/**
 * Checks the leading (and for PDF trailing) bytes against the format. Zip-based formats are only
 * recognised here as zips; their parts are checked by the container inspector.
 */
export function checkMagicBytes(format: DocumentFormat, bytes: Buffer): void {
  if (bytes.length === 0) throw new InvalidArgumentError('base64_docx_file: the file is empty');
  switch (format) {
    case 'docx':
    case 'odt':
      if (bytes.subarray(0, 4).equals(ZIP_SIGNATURE)) return;
      if (isEncryptedOfficeDocument(bytes)) throw new InvalidArgumentError(`base64_docx_file: ${PASSWORD_PROTECTED}`);
      if (bytes.subarray(0, 8).equals(OLE_SIGNATURE)) {
        throw new InvalidArgumentError(`base64_docx_file: the content is not a .${format} document (no zip container: it is an OLE compound file, as a .doc is)`);
      }
      throw new InvalidArgumentError(`base64_docx_file: the content is not a .${format} document (no zip container)`);
      return;
    case 'doc':
      if (!bytes.subarray(0, 8).equals(OLE_SIGNATURE)) throw new InvalidArgumentError('base64_docx_file: the content is not a .doc document (no OLE header)');
      checkOleSize(bytes);
      return;
    case 'pdf': {
      if (bytes.subarray(0, 5).toString('latin1') !== '%PDF-') throw new InvalidArgumentError('base64_docx_file: the content is not a PDF (no %PDF header)');
      if (!bytes.subarray(Math.max(0, bytes.length - 2048)).toString('latin1').includes('%%EOF')) {
        throw new InvalidArgumentError('base64_docx_file: the PDF is truncated (no %%EOF marker at the end)');
      }
      return;
    }
  }
}

/**
 * An OLE compound file holding a stream named EncryptedPackage or EncryptionInfo: a directory entry (128 bytes, at a
 * multiple of 128 past the 512- or 4096-byte header) with that name, its length in bytes and the stream type.
 */
function isEncryptedOfficeDocument(bytes: Buffer): boolean {
  if (!bytes.subarray(0, 8).equals(OLE_SIGNATURE)) return false;
  for (const name of ENCRYPTION_STREAMS) {
    for (let at = bytes.indexOf(name, 512); at >= 0; at = bytes.indexOf(name, at + 1)) {
      if (at % DIRECTORY_ENTRY_BYTES !== 0 || at + DIRECTORY_ENTRY_BYTES > bytes.length) continue;
      if (bytes.readUInt16LE(at + 64) === name.length && bytes[at + 66] === STREAM_ENTRY) return true;
    }
  }
  return false;
}

/** An OLE compound file is a header plus whole sectors; a cut-off file is not. */
function checkOleSize(bytes: Buffer): void {
  if (bytes.length < 1536) throw new InvalidArgumentError('base64_docx_file: the .doc document is truncated');
  const sectorShift = bytes.readUInt16LE(30);
  if (sectorShift !== 9 && sectorShift !== 12) throw new InvalidArgumentError('base64_docx_file: the .doc document has a corrupt OLE header');
  const sectorSize = 2 ** sectorShift;
  if (bytes.length % sectorSize !== 0) {
    throw new InvalidArgumentError('base64_docx_file: the .doc document is truncated (partial sector)');
  }
}

export function canonicalMimeType(format: DocumentFormat): string {
  return MIME_TYPES[format].canonical;
}
