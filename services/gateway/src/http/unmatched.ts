import type { NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { unwrappedHandler } from './route-work';
import { unreservedDecoded } from './api-paths';
import { HttpError, notFound } from './http-error';

/** What the router keeps per `use` or route; `match` is its own matching (path-to-regexp), with no state kept. */
interface Layer {
  route?: { methods: Record<string, boolean | undefined>; stack?: Array<{ handle: unknown }> };
  handle: unknown;
  match(path: string): { path: string; pattern?: unknown } | false;
}

/** The handlers `noHead` made: a route holding one answers GET only. */
const headRefusers = new WeakSet<object>();

/**
 * The first handler of a GET route whose GET does something besides reading (GET /api/password/:email sends a mail
 * and counts toward the mail limits): express hands HEAD to GET's handlers, and a HEAD is what link checkers,
 * prefetchers and monitors send freely. A HEAD leaves the route before any of its handlers (limits, CSRF check, the
 * call) runs and reaches the API's last handler, which answers 405 with `Allow` as for any method the path does not
 * answer; the route index leaves HEAD out of that path's methods (`Allow`, OPTIONS).
 */
export function noHead(): RequestHandler {
  const handler: RequestHandler = (req, _res, next) => (req.method === 'HEAD' ? next('route') : next());
  headRefusers.add(handler);
  return handler;
}

function refusesHead(layer: Layer): boolean {
  // By the handler registered: endRouteWorkWhenHandlersReturn (route-work.ts) wraps every route handler.
  return (layer.route!.stack ?? []).some((inner) => typeof inner.handle === 'function' && headRefusers.has(unwrappedHandler(inner.handle)));
}

function stackOf(handle: unknown): Layer[] | undefined {
  const stack = (handle as { stack?: unknown } | null)?.stack;
  return typeof handle === 'function' && Array.isArray(stack) ? (stack as Layer[]) : undefined;
}

function methodsOf(layer: Layer): string[] {
  return Object.entries(layer.route!.methods)
    .filter(([method, on]) => on && method !== '_all')
    .map(([method]) => method.toUpperCase());
}

/** The methods of the routes a path has, and whether the route its GET reaches refuses HEAD (`noHead`). */
interface PathMethods {
  methods: Set<string>;
  headRefused?: boolean;
}

/** The methods of every route under `stack` that answers `path`, mounted routers searched as the router descends into them. */
function collectMethods(stack: Layer[], path: string, into: PathMethods): void {
  for (const layer of stack) {
    const matched = layer.match(path);
    if (!matched) continue;
    if (layer.route) {
      const methods = methodsOf(layer);
      for (const method of methods) into.methods.add(method);
      // The router hands HEAD to the first route with GET, as it routes.
      if (into.headRefused === undefined && methods.includes('GET')) into.headRefused = refusesHead(layer);
      continue;
    }
    const mounted = stackOf(layer.handle);
    if (!mounted) continue;
    // As the router strips a mount path before handing the rest on.
    const rest = path.slice(matched.path.length);
    collectMethods(mounted, rest.startsWith('/') ? rest : `/${rest}`, into);
  }
}

/** The pattern of the first route under `stack` that answers `method` on `path` (mount paths as registered), or undefined. */
function findPattern(stack: Layer[], method: string, path: string, prefix: string): string | undefined {
  for (const layer of stack) {
    const matched = layer.match(path);
    if (!matched) continue;
    if (layer.route) {
      const methods = methodsOf(layer);
      const pattern = (layer.route as { path?: unknown }).path;
      if (typeof pattern === 'string' && (methods.includes(method) || (method === 'HEAD' && methods.includes('GET')))) return `${prefix}${pattern}`;
      continue;
    }
    const mounted = stackOf(layer.handle);
    // A mount path is one of ours as registered ("/api"), never the request's spelling of it.
    if (!mounted || typeof matched.pattern !== 'string') continue;
    const rest = path.slice(matched.path.length);
    const found = findPattern(mounted, method, rest.startsWith('/') ? rest : `/${rest}`, `${prefix}${matched.pattern === '/' ? '' : matched.pattern}`);
    if (found) return found;
  }
  return undefined;
}

function collectAllMethods(stack: Layer[], into: Set<string>): void {
  for (const layer of stack) {
    if (layer.route) for (const method of methodsOf(layer)) into.add(method);
    const mounted = stackOf(layer.handle);
    if (mounted) collectAllMethods(mounted, into);
  }
}

/** What a path (or the whole server) answers besides its routes' own methods: HEAD with GET unless refused, OPTIONS. */
function withImplied(methods: Set<string>, headRefused = false): string[] {
  if (methods.size === 0) return [];
  if (methods.has('GET') && !headRefused) methods.add('HEAD');
  methods.add('OPTIONS');
  return [...methods];
}

export interface RouteMethodIndex {
  /** The methods the routes answer for a full path (`/api/card/count`, `/healthz`); none for a path no route has. */
  methodsFor(path: string): string[];
  /** Every method some route answers: what `OPTIONS *` lists. */
  serverMethods(): string[];
  /** The pattern of the route that would answer (`/api/card/:card_id`), for a request that failed before reaching it. */
  patternFor(method: string, path: string): string | undefined;
}

/**
 * Looks up methods in the app's router as it routes: each route's pattern is matched by the router's own layer,
 * so a path is known here exactly when a route would take it. Reads the routes at each call; the first request
 * comes after they are all registered.
 */
export function routeMethodIndex(appRouter: Router): RouteMethodIndex {
  const stack = () => stackOf(appRouter) ?? [];
  let serverMethods: string[] | undefined;
  return {
    methodsFor(path) {
      const found: PathMethods = { methods: new Set<string>() };
      collectMethods(stack(), path, found);
      return withImplied(found.methods, found.headRefused);
    },
    patternFor(method, path) {
      return findPattern(stack(), method, path, '');
    },
    serverMethods() {
      if (!serverMethods) {
        const methods = new Set<string>();
        collectAllMethods(stack(), methods);
        serverMethods = withImplied(methods);
      }
      return serverMethods;
    },
  };
}

/** 405 with `Allow` (RFC 9110) for a path that exists for other methods; OPTIONS on it is 204 with `Allow`. */
function answerOtherMethod(allowed: string[], req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Allow', allowed.join(', '));
  if (req.method === 'OPTIONS') {
    res.status(204).end();
    return;
  }
  // A HEAD where GET is allowed reaches here only from a `noHead` route (the answer's head carries the message's size only).
  const why = req.method === 'HEAD' && allowed.includes('GET') ? ': GET here does more than read (a mail, a count), which a HEAD must not' : '';
  next(new HttpError(405, `${req.method} is not allowed here${why}; allowed: ${allowed.join(', ')}`));
}

/**
 * `OPTIONS *` asks about the server rather than a resource (RFC 9110 §9.3.7): 204 with the methods it supports in `Allow`.
 * The asterisk-form is allowed with OPTIONS only (RFC 9110 §7.1), so any other method on `*` is a malformed request.
 */
export function serverWideOptions(index: RouteMethodIndex) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.url !== '*') return next();
    if (req.method !== 'OPTIONS') return next(new HttpError(400, `The request target * is allowed only with OPTIONS; ${req.method} needs a path`));
    res.setHeader('Allow', index.serverMethods().join(', '));
    res.status(204).end();
  };
}

/**
 * The first /api handler that looks at more than the request line: a request no route answers (an unknown path, a
 * method the path does not take, OPTIONS) is answered here, as unmatchedApiRequest would, before its body is checked
 * or read and before the session lookup. Before, `PATCH /api/card/count` with a text body was 415 "must be JSON" and
 * OPTIONS with a malformed JSON body 400: a client fixing the body was then told the route does not exist.
 */
export function answerUnroutedApiRequest(index: RouteMethodIndex) {
  const unmatched = unmatchedApiRequest(index);
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.method !== 'OPTIONS' && index.methodsFor(`${req.baseUrl}${req.path}`).includes(req.method)) return next();
    unmatched(req, res, next);
  };
}

/**
 * The last handler of the API router: a path no route has is 404; a path that exists for other methods
 * (the documents and docs page registered on the app included) is 405 with `Allow`.
 */
export function unmatchedApiRequest(index: RouteMethodIndex) {
  return (req: Request, res: Response, next: NextFunction) => {
    const allowed = index.methodsFor(`${req.baseUrl}${req.path}`);
    if (allowed.length === 0) return next(notFound('No such route'));
    answerOtherMethod(allowed, req, res, next);
  };
}

/**
 * The last handler of the whole app. The interface's headings sometimes leave out /api, but paths such as
 * /card/<id> and /user/<id> belong to the web app, so the API is served under /api only; a request that
 * would have been an API call there is told so. /healthz and /metrics answer other methods 405 as API paths do.
 */
export function unmatchedRequest(index: RouteMethodIndex) {
  return (req: Request, res: Response, next: NextFunction) => {
    const allowed = index.methodsFor(req.path);
    if (allowed.length > 0) return answerOtherMethod(allowed, req, res, next);
    // As the API routes it (/card/%73earch/1 is /card/search/1).
    const apiPath = `/api${unreservedDecoded(req.path)}`;
    if (index.methodsFor(apiPath).includes(req.method)) {
      return next(notFound(`No such route: the HTTP interface is served under /api (${req.method} ${apiPath})`));
    }
    next(notFound('No such route'));
  };
}
