import { performance } from 'node:perf_hooks';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routeLabel } from './route-label';

/** A request once the answer is sent or the client is gone. */
export interface EndedRequest {
  req: Request;
  res: Response;
  /** The route pattern that answered (`/api/card/:card_id`) or "unmatched" (route-label.ts). */
  route: string;
  /** From the request reaching the gateway's handlers to the answer's last byte (or the connection's end). */
  ms: number;
  /** The whole answer was written; false when the connection closed first. */
  answered: boolean;
}

/** Something that records finished requests: the access log, the request metrics. */
export type RequestEndObserver = (ended: EndedRequest) => void;

/** One end-of-request listener per request, feeding every observer the same route label and duration. */
export function observeRequestEnds(observers: readonly RequestEndObserver[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = performance.now();
    res.once('close', () => {
      const ended: EndedRequest = { req, res, route: routeLabel(req, res), ms: performance.now() - start, answered: res.writableFinished };
      for (const observe of observers) observe(ended);
    });
    next();
  };
}
