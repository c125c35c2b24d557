import type { NextFunction, Request, Response } from 'express';
import { badRequest } from './http-error';

function hostFieldCount(rawHeaders: string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.length === 4 && rawHeaders[i]!.toLowerCase() === 'host') count++;
  return count;
}

/**
 * RFC 9112 §3.2: an HTTP/1.1 request without a Host (or with an empty one) and any request with more than
 * one is 400. Node's own check answers with an empty body, so the server leaves it to this one
 * (`requireHostHeader: false`, node-server.ts) and the answer is the API's {"message"}.
 */
export function requireOneHost(req: Request, res: Response, next: NextFunction): void {
  const hosts = hostFieldCount(req.rawHeaders);
  const http11 = req.httpVersionMajor > 1 || req.httpVersionMinor >= 1;
  const problem = hosts > 1 ? 'The request has more than one Host header' : http11 && !req.headers.host ? 'The request has no Host header (HTTP/1.1 requires one)' : undefined;
  if (!problem) return next();
  // As Node's own check does: a client this confused is not kept for another request.
  res.setHeader('connection', 'close');
  next(badRequest(problem));
}
