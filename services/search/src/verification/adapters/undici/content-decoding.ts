import { pipeline, type Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** More codings than any server sends for one page; bounds the work a hostile one can ask for. */
const MAX_CODINGS = 2;

/**
 * The body as the page's bytes: its Content-Encoding (gzip, deflate, br, applied in the order listed) undone, as a
 * browser undoes it. Some servers compress whether or not the client asked (pre-compressed static files), and the
 * compressed bytes read as text match nothing. undefined when a coding is one this cannot undo. The caller still
 * counts what comes out against its size cap, so a small body inflating to gigabytes is stopped there.
 */
export function decodedBody(body: Readable, contentEncoding: string | string[] | undefined): Readable | undefined {
  const codings = [contentEncoding ?? '']
    .flat()
    .join(',')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter((coding) => coding !== '' && coding !== 'identity');
  if (codings.length === 0) return body;
  if (codings.length > MAX_CODINGS || codings.some((coding) => !DECODERS[coding])) return undefined;
  const decoders = codings.reverse().map((coding) => DECODERS[coding]!());
  // pipeline destroys every stage on an error (a corrupt stream, or the caller destroying the last one at its cap),
  // and the last stage then fails the caller's read with it.
  return pipeline([body, ...decoders], () => undefined) as unknown as Readable;
}
