import type { NextFunction, Request, Response } from 'express';
import { notFound } from './http-error';

/** First path segments the gateway answers itself; the web app's page is never served under them. */
const GATEWAY_ROOTS = ['api', 'livez', 'healthz', 'metrics'] as const;

/**
 * A path in normal form under one of those roots, as the routes match it: the root spelled out (any case),
 * then non-empty segments that are neither `.` nor `..` (nor percent-encoded ones) and hold no `\`,
 * an optional trailing slash. Percent-encoding inside a segment (an e-mail's %40 or %2F) is the route's to decode.
 */
const NORMAL_GATEWAY_PATH = new RegExp(`^/(?:${GATEWAY_ROOTS.join('|')})(?:/(?!(?:\\.|%2e){1,2}(?:/|$))[^/\\\\]+)*/?$`, 'i');

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
  return (GATEWAY_ROOTS as readonly string[]).includes(root) ? ['', root, ...rest].join('/') : undefined;
}

/**
 * A path that reaches the API, /healthz or /metrics only once normalized (`//api/...`, `/./api/...`,
 * `/x/../api/...`, `/api%2Fcard`, `/%61pi/...`, `/api\card`, `/api//card`) is a JSON 404 naming the
 * normal path: never rewritten (a proxy or access rule in front may have judged the raw path) and never
 * the web app's page.
 */
export function refuseNonNormalGatewayPaths(req: Request, _res: Response, next: NextFunction): void {
  if (NORMAL_GATEWAY_PATH.test(req.path)) return next();
  const normal = gatewayPathOf(req.path);
  if (normal === undefined) return next();
  next(notFound(`No such route: the path is not in normal form (no empty, "." or ".." segments, encoded or back slashes); did you mean ${req.method} ${normal}?`));
}
