import type { NextFunction, Request, RequestHandler, Response } from 'express';
import cors from 'cors';
import { HttpError } from './http-error';

export interface CrossOriginOptions {
  /** Origins (scheme://host[:port]) of other sites allowed to call the API with the cookie. */
  allowedOrigins: readonly string[];
  /** The gateway's public URL: its origin always counts as the same site. */
  publicUrl?: string;
  /** Name of the session cookie whose presence makes a request worth checking. */
  cookieName: string;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Whether originCheck judges a request of `method` (under /api, carrying the session cookie): every method but the
 * safe ones. The OpenAPI document lists the 403 it answers on exactly these operations (document.ts).
 */
export function originCheckJudges(method: string): boolean {
  return !SAFE_METHODS.has(method.toUpperCase());
}

/** `https://a.example:8443/x` -> `https://a.example:8443`; undefined for anything that is not an http(s) URL. */
export function originOf(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CORS with credentials for the configured origins only: other origins get no
 * Access-Control-Allow-Origin, so a browser keeps the answer from their scripts.
 */
export function corsForConfiguredOrigins({ allowedOrigins }: CrossOriginOptions): RequestHandler {
  const allowed = new Set(allowedOrigins);
  const handle = cors({
    origin: (origin, callback) => callback(null, origin !== undefined && allowed.has(origin)),
    credentials: true,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'],
    allowedHeaders: ['content-type', 'x-request-id', 'idempotency-key', 'if-match'],
    exposedHeaders: ['location', 'x-request-id', 'etag'],
    maxAge: 600,
  });
  // Every answer varies by Origin for caches, also those that got no CORS headers (no Origin, or one not
  // allowed); without an Origin header there is nothing for CORS to answer (same-origin, curl, servers).
  return (req: Request, res: Response, next: NextFunction) => {
    res.vary('Origin');
    if (req.headers.origin === undefined) return next();
    handle(req, res, next);
  };
}

/**
 * Whether an origin a request claims (undefined: none, `null`, or not http(s)) may act on the gateway: its own origin
 * (scheme + Host of the request, honouring trust proxy), the origin of its public URL, or a configured one.
 */
function allowedOriginJudge({ allowedOrigins, publicUrl }: CrossOriginOptions): (req: Request, claimed: string | undefined) => boolean {
  const allowed = new Set(allowedOrigins);
  const publicOrigin = publicUrl ? originOf(publicUrl) : undefined;
  if (publicOrigin) allowed.add(publicOrigin);
  // req.protocol and req.host read X-Forwarded-Proto and X-Forwarded-Host only from a trusted proxy (TRUST_PROXY); a
  // proxy that passes the upstream's name in Host (nginx's default, Traefik) names the public one there.
  return (req, claimed) => claimed !== undefined && (claimed === originOf(`${req.protocol}://${req.host ?? ''}`) || allowed.has(claimed));
}

/** The origin an `Origin` header names; `null` (sandboxed frames, redirects across sites) names none. */
const claimedOrigin = (origin: string): string | undefined => (origin === 'null' ? undefined : originOf(origin));

/**
 * CSRF defence for cookie sessions: a state-changing request that carries the session cookie must come
 * from the gateway's own origin (or a configured one), judged by Origin, else by Referer. A request with
 * neither header is not from a browser page (browsers send Origin on every cross-site POST/PUT/DELETE),
 * so API clients such as curl keep working. SameSite=Lax on the cookie is the first line; this is the second.
 */
export function originCheck(options: CrossOriginOptions): RequestHandler {
  const isAllowed = allowedOriginJudge(options);
  return (req: Request, _res: Response, next: NextFunction) => {
    if (!originCheckJudges(req.method)) return next();
    const cookies = req.cookies as Record<string, unknown> | undefined;
    if (typeof cookies?.[options.cookieName] !== 'string') return next();
    const origin = req.get('origin');
    const referer = req.get('referer');
    if (origin === undefined && referer === undefined) return next();
    if (isAllowed(req, origin !== undefined ? claimedOrigin(origin) : originOf(referer!))) return next();
    next(new HttpError(403, 'Cross-site request refused: the page this request comes from is not allowed to use your session'));
  };
}

/**
 * For a GET that does something (GET /api/password/:email sends mail), which originCheck lets through as every GET and
 * which any page can make a visitor's browser send (`<img src>`), with or without a cookie: refused when the browser
 * says it comes from another site. A foreign `Origin` (or `null`) is refused by originCheck's rule; without Origin,
 * `Sec-Fetch-Site: cross-site` is refused (an `<img>` sends no Origin), and a browser that sends neither is judged by
 * its Referer. Requests without any of these headers come from no browser page (curl, SDKs) and pass.
 */
export function refuseCrossSite(options: CrossOriginOptions): RequestHandler {
  const isAllowed = allowedOriginJudge(options);
  const refuse = () => new HttpError(403, 'Cross-site request refused: this request sends e-mail and is taken only from this site\'s own pages');
  return (req: Request, _res: Response, next: NextFunction) => {
    const origin = req.get('origin');
    if (origin !== undefined) return next(isAllowed(req, claimedOrigin(origin)) ? undefined : refuse());
    const site = req.get('sec-fetch-site');
    if (site !== undefined) return next(site === 'cross-site' ? refuse() : undefined);
    const referer = req.get('referer');
    next(referer === undefined || isAllowed(req, originOf(referer)) ? undefined : refuse());
  };
}
