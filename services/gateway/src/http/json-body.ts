import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import bytes from 'bytes';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { HttpError } from './http-error';
import { API_JSON_SHAPE, refuseUnacceptedJson, type JsonShapeBounds } from './json-shape';

/** Media types read as JSON: application/json and structured-syntax JSON such as application/merge-patch+json. */
const JSON_TYPES = ['application/json', 'application/*+json'];

/** Chunked bodies count as present (their length is unknown until read); `Content-Length: 0` does not. */
function carriesBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * The length a body declares when that is what the parser will hold: sent plain (no Transfer-Encoding, no
 * Content-Encoding other than identity) with a Content-Length. A compressed body's length says nothing of what it
 * inflates to (17.5 KB of gzip inflate to a route's whole limit), a chunked one has none.
 */
export function declaredPlainLength(req: Request): number | undefined {
  if (req.headers['transfer-encoding'] !== undefined) return undefined;
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding !== undefined && encoding !== '' && encoding !== 'identity') return undefined;
  const declared = Number(req.headers['content-length']);
  return Number.isFinite(declared) ? declared : undefined;
}

/** The charset parameter of a Content-Type header, lower-cased, or undefined when none is given. */
function charsetOf(contentType: string | undefined): string | undefined {
  const found = /;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/i.exec(contentType ?? '');
  return found ? (found[1] ?? found[2] ?? '').toLowerCase() : undefined;
}

/**
 * Refuses a body that is not declared as JSON (form, multipart, text/plain, no Content-Type) with 415,
 * instead of ignoring it and reporting every field as missing. It also keeps text/plain, which a
 * cross-site page may send without a CORS preflight, from ever being read as a request. A JSON body is
 * UTF-8 (RFC 8259 8.1): another declared charset is 415 too, since the parser would read UTF-16 with an odd byte
 * dropped, UTF-32 with U+FFFD and UTF-7 with characters spelled in base64, none of which a client means.
 */
export function requireJsonBodies(req: Request, _res: Response, next: NextFunction): void {
  if (!carriesBody(req)) return next();
  if (!req.is(JSON_TYPES)) return next(new HttpError(415, 'The request body must be JSON, sent with Content-Type: application/json'));
  const charset = charsetOf(req.headers['content-type']);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return next(new HttpError(415, `The request body must be JSON encoded as UTF-8 (charset "${charset.slice(0, 40)}" is not accepted)`));
  }
  next();
}

/** Why each byte can not start a UTF-8 character, or what it must be followed by: [lowest, highest] second byte. */
function secondByteRange(lead: number): [number, number] | string {
  if (lead >= 0x80 && lead <= 0xbf) return 'a continuation byte with no lead byte';
  if (lead === 0xc0 || lead === 0xc1 || lead >= 0xf5) return 'a byte that never appears in UTF-8';
  if (lead === 0xe0) return [0xa0, 0xbf]; // lower: an overlong encoding
  if (lead === 0xed) return [0x80, 0x9f]; // higher: a surrogate U+D800-U+DFFF
  if (lead === 0xf0) return [0x90, 0xbf]; // lower: an overlong encoding
  if (lead === 0xf4) return [0x80, 0x8f]; // higher: above U+10FFFF
  return [0x80, 0xbf];
}

const hex = (byte: number) => `0x${byte.toString(16).toUpperCase().padStart(2, '0')}`;

/**
 * What is wrong with bytes that are not UTF-8 (the first ill-formed sequence, its bytes in hex and its offset), or
 * null when they are UTF-8. Node's isUtf8 (simdutf) answers the common case; only a body that fails it is walked.
 */
export function utf8Problem(bytes: Uint8Array): string | null {
  if (isUtf8(bytes)) return null;
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i]!;
    if (lead < 0x80) {
      i++;
      continue;
    }
    const range = secondByteRange(lead);
    if (typeof range === 'string') return `${range} (${hex(lead)}) at byte ${i}`;
    const length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;
    for (let k = 1; k < length; k++) {
      const byte = bytes[i + k];
      const [low, high] = k === 1 ? range : [0x80, 0xbf];
      if (byte === undefined || byte < 0x80 || byte > 0xbf) {
        const seen = Array.from(bytes.subarray(i, i + k), hex).join(' ');
        return `an incomplete sequence (${seen}${byte === undefined ? ', then the end of the body' : `, then ${hex(byte)}`}) at byte ${i}`;
      }
      if (byte < low || byte > high) {
        const what = lead === 0xed ? 'an encoded surrogate, which UTF-8 cannot hold' : lead === 0xf4 ? 'a code point above U+10FFFF' : 'an overlong encoding';
        return `${what} (${hex(lead)} ${hex(byte)}) at byte ${i}`;
      }
    }
    i += length;
  }
  // isUtf8 and this walk follow the same standard; should they ever differ, the body is still refused.
  return 'an ill-formed sequence';
}

// Bodies whose bytes were not UTF-8, with what is wrong: parseBody refuses them (logging in only compares, as before).
const notUtf8 = new WeakMap<object, string>();

/** What is wrong with the bytes of the request's JSON body when they were not UTF-8, else undefined. */
export function bodyEncodingProblem(req: Request): string | undefined {
  return notUtf8.get(req);
}

/**
 * Parses JSON bodies up to `limit`. The bytes (after any Content-Encoding) are checked to be UTF-8 before they are
 * decoded: a decoder replaces each ill-formed sequence with U+FFFD, so a body sent in Latin-1 by mistake ("Caf\xe9")
 * would be stored as "Caf\ufffd". The body is still parsed (its syntax errors answer as before); parseBody then
 * refuses it 400 naming the first bad sequence (bodyEncodingProblem).
 *
 * First, a body holding more values or nesting than `shape` allows is refused 400 after a byte scan (json-shape.ts),
 * never parsed: the parse of a few million values blocks the event loop for seconds, and a gzipped body reaches the
 * limit from a few KB on the wire. The same scan refuses an object holding one key twice (ambiguous: the parser would
 * keep the last value).
 */
export function jsonBodyParser(limit: string | number, shape: JsonShapeBounds = API_JSON_SHAPE): RequestHandler {
  const parse = express.json({
    limit,
    type: JSON_TYPES,
    verify: (req: IncomingMessage, _res, bytes: Buffer) => {
      refuseUnacceptedJson(bytes, shape);
      const problem = utf8Problem(bytes);
      if (problem) notUtf8.set(req, `The request body is not valid UTF-8: ${problem}; JSON must be sent encoded as UTF-8`);
    },
  });
  // The parser (strict: an object or an array) refuses `null` and a body of only whitespace as malformed, though
  // `null` is JSON and both say "nothing", as an empty body does, which it reads as none. They are no body too: a route
  // that reads none ignores them (DELETE /api/card/:id, PUT /api/notifications/all, DELETE /api/auth ...), one that
  // reads a body names the fields it misses, as for an empty body.
  const limitBytes = bytes.parse(limit);
  return (req, res, next) => {
    if (limitBytes !== null && declaresMoreThan(req, limitBytes)) return refuseUnread(req, res, next, limitBytes);
    parse(req, res, (err?: unknown) => {
      if (err !== undefined && isNothingSent(err)) {
        req.body = undefined;
        return next();
      }
      next(err);
    });
  };
}

/**
 * Whether the request declares a body longer than `limitBytes` that is still to be read: a plain one (no Transfer-Encoding,
 * no Content-Encoding: the limit is on the inflated bytes, which the declared length does not tell). A body read
 * already (an upload, parsed within its admission) is not looked at again.
 */
function declaresMoreThan(req: Request, limitBytes: number): boolean {
  if (req.readableEnded) return false;
  const declared = declaredPlainLength(req);
  return declared !== undefined && declared > limitBytes;
}

/**
 * The 413 of a body declared over the limit, answered before it is read: body-parser read the whole body (tens of
 * megabytes, at the client's pace) and dropped it before answering, and with `Expect: 100-continue` Node had asked the
 * client to send it. After the answer Node reads and drops what the client still sends, as after an upload's early 413
 * (refuseUploadUnread): closing instead, with the client's bytes unread, reset the connection, and a client that
 * writes its whole body before reading (Python's urllib) reported a broken pipe instead of the 413. A request that
 * expected 100-continue got no 100, so Node closes its connection itself. The error is body-parser's own kind, so it is
 * answered and logged as its 413 is.
 */
function refuseUnread(req: Request, _res: Response, next: NextFunction, limitBytes: number): void {
  next(Object.assign(new Error('request entity too large'), { status: 413, expose: true, type: 'entity.too.large', expected: Number(req.headers['content-length']), limit: limitBytes }));
}

/** Whether a parse failure is of a body holding only JSON `null` or only whitespace (RFC 8259's ws). */
function isNothingSent(err: unknown): boolean {
  const failure = err as { type?: unknown; body?: unknown } | null;
  if (failure?.type !== 'entity.parse.failed' || typeof failure.body !== 'string') return false;
  const text = failure.body.replace(/^[ \t\n\r]+|[ \t\n\r]+$/g, '');
  return text === '' || text === 'null';
}
