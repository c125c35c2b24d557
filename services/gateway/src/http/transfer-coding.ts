import type { NextFunction, Request, Response } from 'express';
import { badRequest } from './http-error';

/**
 * A request body framed with a transfer coding besides chunked (`Transfer-Encoding: gzip, chunked`) is 400. Node's
 * parser reads the chunks and drops the other codings without a word, so a gzipped body was read as if plain, and a
 * proxy in front that applies them would see another body than the gateway does (RFC 9112 §6.1: a coding the server
 * does not understand is refused). Node itself refuses a list that does not end in chunked, likewise 400.
 */
export function refuseUnknownTransferCodings(req: Request, res: Response, next: NextFunction): void {
  const field = req.headers['transfer-encoding'];
  if (field === undefined) return next();
  const unknown = field
    .split(',')
    .map((coding) => coding.trim())
    .filter((coding) => coding.toLowerCase() !== 'chunked');
  if (unknown.length === 0) return next();
  // The body is not read: the connection is not kept for another request.
  res.setHeader('connection', 'close');
  next(badRequest(`Transfer-Encoding ${unknown.map((coding) => JSON.stringify(coding.slice(0, 40))).join(', ')} is not supported: send the body with chunked alone or with Content-Length (compress it with Content-Encoding)`));
}
