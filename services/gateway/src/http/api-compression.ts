import type { RequestHandler, Response } from 'express';
import compression from 'compression';
import { constants } from 'node:zlib';

/** res.locals' key (a string: locals is a Record<string, any>) for an answer that goes out as it is. */
const UNCOMPRESSED = 'sentUncompressed';

/** Answers below this many bytes (when their length is known) are sent as they are: the saving is not worth a frame. */
export const API_COMPRESSION_THRESHOLD_BYTES = 1024;
/**
 * zlib level 1 and brotli quality 1 (speed over ratio): on a 61 KiB page of search results they save nearly as
 * much as the defaults for a fraction of the CPU (docs/benchmarks.md, "API answers compressed").
 */
export const API_GZIP_LEVEL = 1;
export const API_BROTLI_QUALITY = 1;

/**
 * The answer under way goes out as it is, whatever the client accepts: file bytes (the raw download proxied from
 * the files service, which may be compressed already and answers Range requests; a file's content in JSON, whose
 * HEAD announces its exact Content-Length).
 */
export function sendUncompressed(res: Response): void {
  res.locals[UNCOMPRESSED] = true;
}

/** A strong ETag names one representation: the compressed one gets the weak form (If-None-Match compares weakly). */
function weakenStrongEtagWhenEncoded(res: Response): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: Response, ...args: unknown[]) {
    const etag = this.getHeader('etag');
    if (typeof etag === 'string' && etag.startsWith('"') && this.getHeader('content-encoding') !== undefined) this.setHeader('etag', `W/${etag}`);
    return (writeHead as (...a: unknown[]) => Response).apply(this, args);
  } as Response['writeHead'];
}

/**
 * /api answers compressed (br, else gzip) when the request's Accept-Encoding allows it and the answer is at least
 * API_COMPRESSION_THRESHOLD_BYTES, with Vary: Accept-Encoding. HEAD answers and answers marked with sendUncompressed
 * are never compressed. Streamed listings stay streamed: each page goes through the compressor as it is written, with
 * back-pressure (the compressor's 'drain' is the answer's).
 */
export function apiCompression(): RequestHandler {
  const compress = compression({
    threshold: API_COMPRESSION_THRESHOLD_BYTES,
    level: API_GZIP_LEVEL,
    brotli: { params: { [constants.BROTLI_PARAM_QUALITY]: API_BROTLI_QUALITY } },
    filter: (req, res) => res.locals[UNCOMPRESSED] !== true && compression.filter(req, res),
  });
  return (req, res, next) => {
    weakenStrongEtagWhenEncoded(res);
    compress(req, res, next);
  };
}
