import { fitsCharacters, truncatedToCharacters } from '@cards/card-rules';
import { PASSWORD_PROTECTED } from '../../domain/document-format';
import type { DocumentFormat } from '../../domain/model';
import { UnreadableDocumentError } from '../../domain/ports';
import { ReadingOutOfMemoryError, ReadingTimedOutError } from './worker-parse';

const MAX_CAUSE_CHARS = 160;
const ADVICE = 'It may be damaged: open it in the program that made it, save it again and upload the new copy';
const SPLIT_ADVICE = 'Split it into smaller documents and upload those';

/**
 * The one-line reason stored on a file whose ingestion could not read it, for its uploader to act on. The library's own
 * text (multi-line parser messages, positions, stacks) stays on the error as its cause, for the log.
 */
export function readingFailure(format: DocumentFormat, err: unknown): UnreadableDocumentError {
  const what = `the .${format} document`;
  let reason: string;
  if (isPasswordError(err)) reason = PASSWORD_PROTECTED;
  else if (err instanceof ReadingTimedOutError) reason = `${what} could not be read within ${seconds(err.timeoutMs)}, the time allowed for one document. ${SPLIT_ADVICE}`;
  else if (err instanceof ReadingOutOfMemoryError) reason = `${what} could not be read within ${err.maxHeapMb} MB, the memory allowed for one document. ${SPLIT_ADVICE}`;
  else reason = `${what} could not be read: ${shortCause(err instanceof Error ? err.message : String(err))}. ${ADVICE}`;
  return new UnreadableDocumentError(reason, { cause: err });
}

/**
 * A refusal of a document that needs a password to open: pdf.js PasswordException's messages, the .doc reading's
 * (word-documents.mjs WORD_ENCRYPTED: the FIB's fEncrypted) and the container check's (an encrypted .odt).
 */
export function isPasswordError(err: unknown): boolean {
  const message = (err instanceof Error ? err.message : String(err)).trim();
  return /^(?:PasswordException: )?(?:No password given|Incorrect Password)$/i.test(message) || message === WORD_ENCRYPTED || message === `base64_docx_file: ${PASSWORD_PROTECTED}`;
}

/** The parser worker's message for a .doc whose FIB says it is encrypted or obfuscated (word-documents.mjs). */
export const WORD_ENCRYPTED = 'WordEncrypted: the .doc document is encrypted';

/** A library's message as one short line: no stack frames, parser positions or tags, whitespace collapsed. */
export function shortCause(message: string): string {
  const malformedXml = /xmldom|\bsax\b/i.test(message);
  const cause = message
    .replace(/^base64_docx_file: /, '')
    .split(/\r?\n/)
    .filter((line) => !/^\s*at\s/.test(line))
    .join(' ')
    .replace(/@#\[line:[^\]]*\]/g, ' ')
    .replace(/\[xmldom [a-z]+\]/gi, ' ')
    .replace(/[\p{Cc}\p{Cf}\s]+/gu, ' ')
    .replace(/\bError: /g, '')
    .replace(/^\s*(?:error:\s*)+/i, '')
    .trim()
    .replace(/[\s:;,.]+$/, '');
  const stated = malformedXml ? `its XML is malformed (${cause})` : cause || 'unknown error';
  return fitsCharacters(stated, MAX_CAUSE_CHARS) ? stated : `${truncatedToCharacters(stated, MAX_CAUSE_CHARS - 1).trimEnd()}…`;
}

function seconds(ms: number): string {
  return ms >= 1000 && ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
