import type { NextFunction, Request, Response } from 'express';
import { currentRequestContext, runWithRequestContext } from '@cards/platform';

/**
 * Requests whose work is wanted by their client only: reads (GET, HEAD) and searches. Their gRPC calls end when the
 * client goes away before the answer is sent. A write's calls run to their end whatever the client does: cancelling
 * one from the client's side rolls nothing back that the service committed, but it would cut a route's later steps
 * (a card written, then its collections), leaving the write half-done. GET /password/:email sends a mail: a write.
 */
export function isAbandonedWithItsClient(req: Pick<Request, 'method' | 'path'>): boolean {
  // Case-insensitive as the router's matching (express's default), as isHeavyRequest.
  if (req.method === 'GET' || req.method === 'HEAD') return !/^\/password\//i.test(req.path);
  return req.method === 'POST' && /^\/(?:card|card_collection)\/(?:search|fulltextsearch)\/[^/]+\/?$/i.test(req.path);
}

/**
 * Runs the route of a read or a search in a request context whose signal is aborted when the answer's 'close' comes
 * before the answer was ended (the client closed the connection, or Node timed the request out): every gRPC call the
 * route makes, and any it makes later, ends CANCELLED (callPolicyMiddleware), so the services stop the work (a
 * search's scoring) for a client that has gone and may be retrying. An answer already ended is not touched. Mounted
 * once the request holds its slot: the session lookups before it are batched across requests and never cut.
 */
export function abandonWorkOfClientsGone() {
  return (req: Request, res: Response, next: NextFunction) => {
    const context = currentRequestContext();
    if (!context || !isAbandonedWithItsClient(req)) return next();
    const clientGone = new AbortController();
    res.once('close', () => {
      if (!res.writableEnded) clientGone.abort();
    });
    runWithRequestContext({ ...context, signal: clientGone.signal }, next);
  };
}

/** The error a route ends with when its calls were cut because its client went away: nothing left to answer. */
export function isWorkOfClientGone(error: unknown, res: Response): boolean {
  // nice-grpc's and the in-process path's rejection of a call whose signal was aborted (abort-controller-x's AbortError, or a DOMException named so).
  return typeof error === 'object' && error !== null && (error as { name?: unknown }).name === 'AbortError' && (res.destroyed || currentRequestContext()?.signal?.aborted === true);
}
