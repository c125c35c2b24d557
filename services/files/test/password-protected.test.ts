import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LibraryDocumentReader } from '../src/adapters/documents/library-document-reader';
import { readingFailure } from '../src/adapters/documents/reading-failure';
import { checkMagicBytes } from '../src/domain/document-format';
import { UnreadableDocumentError } from '../src/domain/ports';

const FIXTURES = join(__dirname, '../../../test/fixtures/documents');
const fixture = (name: string) => readFileSync(join(FIXTURES, name));
const PROTECTED = 'base64_docx_file: the document is password-protected; remove the password and upload it again';

/**
 * An OLE compound file (version 3, 512-byte sectors) whose directory (sector 0) holds the root entry and the named
 * streams, as Office writes a password-protected .docx: the encrypted zip goes in an EncryptedPackage stream, next to
 * EncryptionInfo.
 */
function compoundFile(streams: string[]): Buffer {
  const bytes = Buffer.alloc(512 * 4);
  Buffer.from('d0cf11e0a1b11ae1', 'hex').copy(bytes);
  bytes.writeUInt16LE(0x3e, 24);
  bytes.writeUInt16LE(3, 26);
  bytes.writeUInt16LE(0xfffe, 28);
  bytes.writeUInt16LE(9, 30);
  bytes.writeUInt16LE(6, 32);
  bytes.writeUInt32LE(0, 48);
  ['Root Entry', ...streams].forEach((name, i) => {
    const at = 512 + i * 128;
    const encoded = Buffer.from(`${name}\0`, 'utf16le');
    encoded.copy(bytes, at);
    bytes.writeUInt16LE(encoded.length, at + 64);
    bytes[at + 66] = i === 0 ? 5 : 2;
  });
  return bytes;
}

/** A readable PDF given the standard security handler with a user password nobody supplies. */
function encryptedPdf(): Buffer {
  const pdf = fixture('heading.pdf').toString('latin1');
  const handler = `/Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -4 /O <${'ab'.repeat(32)}> /U <${'cd'.repeat(32)}> >> `;
  const encrypted = pdf.replace(/trailer\s*<</, (trailer) => `${trailer}${handler}`);
  expect(encrypted).not.toBe(pdf);
  return Buffer.from(encrypted, 'latin1');
}

describe('password-protected documents', () => {
  it('a .docx or .odt that is an OLE file holding EncryptedPackage / EncryptionInfo is refused as password-protected', () => {
    for (const format of ['docx', 'odt'] as const) {
      expect(() => checkMagicBytes(format, compoundFile(['EncryptionInfo', 'EncryptedPackage']))).toThrow(PROTECTED);
      expect(() => checkMagicBytes(format, compoundFile(['\u0006DataSpaces', 'EncryptedPackage']))).toThrow(PROTECTED);
    }
  });

  it('another OLE file named .docx (a .doc renamed) is said to be one, not password-protected', () => {
    expect(() => checkMagicBytes('docx', compoundFile(['WordDocument', '1Table']))).toThrow(
      'base64_docx_file: the content is not a .docx document (no zip container: it is an OLE compound file, as a .doc is)',
    );
    // The names only count as directory entries: the same text elsewhere in the file is no stream.
    const mentioned = compoundFile(['WordDocument']);
    Buffer.from('EncryptedPackage\0', 'utf16le').copy(mentioned, 512 * 2 + 10);
    expect(() => checkMagicBytes('docx', mentioned)).toThrow(/OLE compound file, as a \.doc is/);
    expect(() => checkMagicBytes('docx', Buffer.from('not a zip at all'))).toThrow('base64_docx_file: the content is not a .docx document (no zip container)');
  });

  it('a PDF that needs a password is refused at upload as password-protected, not with the library words', async () => {
    await expect(new LibraryDocumentReader().inspect('pdf', encryptedPdf())).rejects.toThrow(PROTECTED);
  });

  it('its ingestion (when the upload check ran out of time) records the same reason', async () => {
    const err = await new LibraryDocumentReader().parse('pdf', encryptedPdf()).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnreadableDocumentError);
    expect((err as Error).message).toBe('the document is password-protected; remove the password and upload it again');
    expect(readingFailure('pdf', new UnreadableDocumentError('Incorrect Password')).message).toBe('the document is password-protected; remove the password and upload it again');
  });
});
