import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * helmet's headers, worked out once: with fixed options they are the same on every response, and
 * helmet's own middleware runs a dozen sub-middlewares per request to set them again. helmet stays
 * the source of the values; this only replays what it set (and removed) on a recording response.
 */
export function securityHeaders(options: Readonly<HelmetOptions>): RequestHandler {
  const set: Array<[string, string | number | readonly string[]]> = [];
  const removed: string[] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      set.push([name, value]);
      return recorder;
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  let completed = false;
  helmet(options)({} as never, recorder as never, (err?: unknown) => {
    if (err) throw err;
    completed = true;
  });
  // helmet is synchronous today; if a future version is not, fall back to running it per request.
  if (!completed) return helmet(options);
  return (_req: Request, res: Response, next: NextFunction) => {
    for (const [name, value] of set) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
  };
}
