import type { NextFunction, Request, Response, Router } from 'express';
import { HttpError, notFound } from './http-error';

interface RouteLayer {
  route?: { path: unknown; methods: Record<string, boolean | undefined> };
}

interface RouteMethods {
  pattern: RegExp;
  methods: string[];
}

/** `/card/:card_id` -> a case-insensitive regexp with an optional trailing slash, as express matches it. */
function patternOf(path: string): RegExp {
  const source = path
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${source}/?$`, 'i');
}

/** The routes registered on each router, with the path it is mounted at (read once all of them are). */
function routeTable(routers: ReadonlyArray<readonly [string, Router]>): RouteMethods[] {
  const table: RouteMethods[] = [];
  for (const [mountPath, router] of routers) {
    for (const layer of router.stack as RouteLayer[]) {
      if (!layer.route || typeof layer.route.path !== 'string') continue;
      const methods = Object.entries(layer.route.methods)
        .filter(([method, on]) => on && method !== '_all')
        .map(([method]) => method.toUpperCase());
      table.push({ pattern: patternOf(`${mountPath}${layer.route.path}`), methods });
    }
  }
  return table;
}

/**
 * Looks up which methods the routes answer for a full path (`/api/card/count`, `/healthz`), given each
 * router with the path it is mounted at. Read lazily: the first request comes after start-up.
 */
export function routeMethodIndex(routers: ReadonlyArray<readonly [string, Router]>): (path: string) => string[] {
  let table: RouteMethods[] | undefined;
  return (path) => {
    table ??= routeTable(routers);
    const methods = new Set<string>();
    for (const route of table) if (route.pattern.test(path)) for (const m of route.methods) methods.add(m);
    if (methods.size === 0) return [];
    if (methods.has('GET')) methods.add('HEAD');
    methods.add('OPTIONS');
    return [...methods];
  };
}

/** 405 with `Allow` (RFC 9110) for a path that exists for other methods; OPTIONS on it is 204 with `Allow`. */
function answerOtherMethod(allowed: string[], req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Allow', allowed.join(', '));
  if (req.method === 'OPTIONS') {
    res.status(204).end();
    return;
  }
  next(new HttpError(405, `${req.method} is not allowed here; allowed: ${allowed.join(', ')}`));
}

/**
 * The last handler of the API router: a path no route has is 404; a path that exists for other methods
 * (the documents and docs page registered on the app included) is 405 with `Allow`.
 */
export function unmatchedApiRequest(methodsFor: (path: string) => string[]) {
  return (req: Request, res: Response, next: NextFunction) => {
    const allowed = methodsFor(`/api${req.path}`);
    if (allowed.length === 0) return next(notFound('No such route'));
    answerOtherMethod(allowed, req, res, next);
  };
}

/**
 * The last handler of the whole app. The interface's headings sometimes leave out /api, but paths such as
 * /card/<id> and /user/<id> belong to the web app, so the API is served under /api only; a request that
 * would have been an API call there is told so. /healthz and /metrics answer other methods 405 as API paths do.
 */
export function unmatchedRequest(methodsFor: (path: string) => string[]) {
  return (req: Request, res: Response, next: NextFunction) => {
    const allowed = methodsFor(req.path);
    if (allowed.length > 0) return answerOtherMethod(allowed, req, res, next);
    if (methodsFor(`/api${req.path}`).includes(req.method)) {
      return next(notFound(`No such route: the HTTP interface is served under /api (${req.method} /api${req.path})`));
    }
    next(notFound('No such route'));
  };
}
