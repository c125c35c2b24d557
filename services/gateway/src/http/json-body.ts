import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { HttpError } from './http-error';

/** Media types read as JSON: application/json and structured-syntax JSON such as application/merge-patch+json. */
const JSON_TYPES = ['application/json', 'application/*+json'];

/** Chunked bodies count as present (their length is unknown until read); `Content-Length: 0` does not. */
function carriesBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * Refuses a body that is not declared as JSON (form, multipart, text/plain, no Content-Type) with 415,
 * instead of ignoring it and reporting every field as missing. It also keeps text/plain, which a
 * cross-site page may send without a CORS preflight, from ever being read as a request.
 */
export function requireJsonBodies(req: Request, _res: Response, next: NextFunction): void {
  if (!carriesBody(req) || req.is(JSON_TYPES)) return next();
  next(new HttpError(415, 'The request body must be JSON, sent with Content-Type: application/json'));
}

/** Parses JSON bodies up to `limit`. */
export function jsonBodyParser(limit: string | number): RequestHandler {
  return express.json({ limit, type: JSON_TYPES });
}
