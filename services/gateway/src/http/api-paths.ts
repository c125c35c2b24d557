import type { NextFunction, Request, Response } from 'express';
import { notFound } from './http-error';
import type { RouteMethodIndex } from './unmatched';

/** First path segments the gateway answers itself; the web app's page is never served under them. */
const GATEWAY_ROOTS = ['api', 'livez', 'healthz', 'metrics'] as const;

/**
 * A path in normal form under one of those roots, as the routes match it: the root spelled out (any case),
 * then non-empty segments that are neither `.` nor `..` (nor percent-encoded ones) and hold no `\`,
 * an optional trailing slash. Percent-encoding inside a segment (an e-mail's %40 or %2F) is the route's to decode.
 */
const NORMAL_GATEWAY_PATH = new RegExp(`^/(?:${GATEWAY_ROOTS.join('|')})(?:/(?!(?:\\.|%2e){1,2}(?:/|$))[^/\\\\]+)*/?$`, 'i');

/** Whether `path` (as routed) is under one of the gateway's own roots (`/api/...`, `/healthz/x`; any case, as routes match). */
export function isUnderGatewayRoot(path: string): boolean {
  return isGatewayRoot(path.split('/')[1] ?? '');
}

const isGatewayRoot = (segment: string) => (GATEWAY_ROOTS as readonly string[]).includes(segment.toLowerCase());

/** The path as a browser or proxy would resolve it: decoded once, `\` read as `/`, empty and dot segments removed. */
function resolvedPath(rawPath: string): string {
  let decoded = rawPath;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    // Broken percent-encoding: resolve what is there.
  }
  const segments: string[] = [];
  for (const segment of decoded.replace(/\\/g, '/').split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  return `/${segments.join('/')}`;
}

/** The resolved path under one of the gateway's roots (a `;param` on the first segment dropped), or undefined. */
function gatewayPathOf(rawPath: string): string | undefined {
  const [, first = '', ...rest] = resolvedPath(rawPath).split('/');
  const root = first.split(';')[0]!.toLowerCase();
  return isGatewayRoot(root) ? ['', root, ...rest].join('/') : undefined;
}

/**
 * A path that reaches the API, /healthz or /metrics only once normalized (`//api/...`, `/./api/...`,
 * `/x/../api/...`, `/api%2Fcard`, `/%61pi/...`, `/api\card`, `/api//card`) is a JSON 404 naming the
 * normal path when a route answers it with the request's method: never rewritten (a proxy or access rule in front
 * may have judged the raw path) and never the web app's page.
 */
export function refuseNonNormalGatewayPaths(routes: Pick<RouteMethodIndex, 'methodsFor'>) {
  return (req: Request, _res: Response, next: NextFunction): void => {
    if (NORMAL_GATEWAY_PATH.test(req.path)) return next();
    const normal = gatewayPathOf(req.path);
    if (normal === undefined) return next();
    // /api/password/%2e%2e resolves to /api, where no route is: a suggestion would send the client nowhere.
    const suggestion = routes.methodsFor(normal).includes(req.method) ? `; did you mean ${req.method} ${normal}?` : '';
    next(notFound(`No such route: the path is not in normal form (no empty, "." or ".." segments, encoded or back slashes)${suggestion}`));
  };
}

/** RFC 3986 §2.3: the characters a URI may hold as they are, whose escapes are the same URI (§6.2.2.2). */
const UNRESERVED = /^[A-Za-z0-9\-._~]$/;
const ESCAPE = /%([0-9A-Fa-f]{2})/g;
/** A `%` that does not start an escape (`%zz`, a lone `%`). */
const BROKEN_ESCAPE = /%(?![0-9A-Fa-f]{2})/;
/** The scheme and authority of an absolute-form request target (`http://host:port`), before its path. */
const ABSOLUTE_FORM_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

/**
 * `/api/card/%63ount` is `/api/card/count` (RFC 3986 §6.2.2.2: an escaped unreserved character, a letter, digit,
 * `-`, `.`, `_` or `~`, is the character), so a path under the gateway's roots is routed with those escapes decoded:
 * a fixed segment then matches its route and a parameter holds what it held before (the router decodes it).
 * Every other escape stays as sent for the route to decode into its parameter: `%2F` is never a separator, `%25`
 * never starts a second escape, `%00` reaches the parameter's own check. A path with a broken escape (`%zz`) is left
 * alone: decoding around it could make one (`%%34%31` would become `%41`); a parameter holding it is 400.
 * Runs after refuseNonNormalGatewayPaths, which has refused `.`/`..` segments, escaped ones included, and the
 * escaped root (`/%61pi`): decoding makes no dot segment and no new root. req.originalUrl keeps the path as sent.
 */
export function decodeUnreservedEscapes(req: Request, _res: Response, next: NextFunction): void {
  const url = req.url;
  const start = url.startsWith('/') ? 0 : (ABSOLUTE_FORM_PREFIX.exec(url)?.[0].length ?? -1);
  if (start < 0) return next();
  const queryAt = url.indexOf('?', start);
  const end = queryAt < 0 ? url.length : queryAt;
  const path = url.slice(start, end);
  if (!path.includes('%') || !NORMAL_GATEWAY_PATH.test(path)) return next();
  const decoded = unreservedDecoded(path);
  if (decoded !== path) req.url = url.slice(0, start) + decoded + url.slice(end);
  next();
}

/** `path` with its escaped unreserved characters decoded; as it is when it holds a broken escape (see above). */
export function unreservedDecoded(path: string): string {
  if (!path.includes('%') || BROKEN_ESCAPE.test(path)) return path;
  return path.replace(ESCAPE, (escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : escape;
  });
}
