import type { Router } from 'express';
import type { ServerResponse } from 'node:http';

/**
 * When a request's route work is over, for what waits for it (request-admission.ts: a write's or a login's slot and
 * client share, held while its work goes on without its client). The end is told by whichever comes first:
 * - the route answered or dropped its answer (res.end, res.destroy: request-admission.ts whenWorkEnds);
 * - the error handler was reached, whatever it then does (error-handler.ts; it writes nothing to an answer whose client
 *   has gone, and an answer destroyed already is not destroyed again);
 * - the route's handler returned, or the promise it returned settled, without passing the request on (next()): there
 *   is nothing more it can do for this request, whether it answered or not (endRouteWorkWhenHandlersReturn).
 * Before, only the first counted: a write route failing with the client-gone error after its client left (the error
 * handler leaves an answer destroyed already as it is), or one returning early without ending its answer, held its
 * slot for good. Each waiter is called once.
 */
const waiting = new WeakMap<ServerResponse, () => void>();

/** Calls `ended` once the route's work for `res` is over (see above); one waiter per answer. */
export function whenRouteWorkEnds(res: ServerResponse, ended: () => void): void {
  waiting.set(res, ended);
}

/** The route's work for `res` is over: its waiter, if any, is called (once). */
export function routeWorkEnded(res: ServerResponse): void {
  const ended = waiting.get(res);
  if (!ended) return;
  waiting.delete(res);
  ended();
}

/** The handler each wrapper stands for: what is told by identity (unmatched.ts's noHead) is asked of it. */
const wrappedHandlers = new WeakMap<object, object>();

/** The route handler `handle` stands for: itself, or the one endRouteWorkWhenHandlersReturn wrapped in it. */
export function unwrappedHandler(handle: object): object {
  return wrappedHandlers.get(handle) ?? handle;
}

interface RouteLayer {
  handle: (req: unknown, res: ServerResponse, next: (err?: unknown) => void) => unknown;
}

/**
 * Every handler of every route of `router` tells routeWorkEnded when it returns (or the promise it returned settles)
 * without having passed the request on. Express 5 passes a returned promise's rejection to the error handler, which
 * tells it too. Call once, after every route is registered on `router`.
 */
export function endRouteWorkWhenHandlersReturn(router: Router): void {
  const stack = (router as unknown as { stack?: Array<{ route?: { stack: RouteLayer[] } }> }).stack ?? [];
  for (const { route } of stack) {
    for (const layer of route?.stack ?? []) {
      const handle = layer.handle;
      // Express skips a handler of four parameters (an error handler) for a request without error: kept as it is.
      if (handle.length > 3) continue;
      // Three parameters, as the router counts them (Layer.handleRequest).
      const wrapper = function (this: unknown, req: unknown, res: ServerResponse, next: (err?: unknown) => void) {
        let passedOn = false;
        const ended = () => {
          if (!passedOn) routeWorkEnded(res);
        };
        const returned = handle.call(this, req, res, (err?: unknown) => {
          passedOn = true;
          next(err);
        });
        if (returned instanceof Promise) returned.then(ended, ended);
        else ended();
        return returned;
      };
      wrappedHandlers.set(wrapper, handle);
      layer.handle = wrapper;
    }
  }
}
