import { existsSync, statSync, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { extname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, constants as zlibConstants, gzip } from 'node:zlib';
import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from '@cards/platform';
import { isUnderGatewayRoot } from './api-paths';
import { keepRangesToRfc9110 } from './static-ranges';

/**
 * The app loads only its own bundle and talks only to /api on the same origin; card HTML is sanitized by
 * the server, and this policy is the second line: no inline or foreign script can run on the page.
 */
export const WEB_APP_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** Where `pnpm --filter @cards/web build` writes the web app (web/dist at the repository root). */
export const DEFAULT_WEB_DIST_DIR = resolve(__dirname, '../../../../web/dist');

/**
 * A cookie the app reads (not HttpOnly) on the index.html answer: whether that page load came with a session cookie
 * (`signed-in`) or without one (`signed-out`). The session cookie itself is HttpOnly, so without it the app asked
 * GET /api/auth on every signed-out page load and the browser logged its 401 as an error; with `signed-out` the app
 * knows there is no session without asking. It says only what the request carried (whether the session is live is
 * still GET /api/auth's answer), the app drops it once read, and it lives two minutes at most.
 */
export const SESSION_HINT_COOKIE = 'ai-editor-hint';
const SESSION_COOKIE_SENT = /(?:^|;\s*)ai-editor=[^;\s]/;

/** Asset types sent compressed (text); images and fonts are compressed already, and the app has none. */
const COMPRESSIBLE = new Set(['.js', '.mjs', '.css', '.svg', '.json', '.map', '.txt', '.html']);
const ASSET_NAME = /^\/([A-Za-z0-9][A-Za-z0-9._-]*)$/;
const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

interface CompressedAsset {
  mtimeMs: number;
  size: number;
  br: Buffer;
  gzip: Buffer;
}

/**
 * The hashed assets sent brotli- or gzip-compressed to a browser that accepts it (the app's script 97 KiB -> ~29 KiB,
 * the editor's 226 KiB -> ~62 KiB), each compressed once, off the event loop, and kept in memory (the build is a few
 * files; a rebuilt file, seen by its mtime, is compressed again). Vary: Accept-Encoding on every asset answer, so a
 * shared cache keeps the encodings apart. A Range request, one with If-Match or If-Unmodified-Since, a client that
 * accepts neither, or a type not worth it (already compressed) gets the file as it is from express.static.
 */
function compressedAssets(assetsDir: string, setHeaders: (res: ServerResponse, path: string) => void): RequestHandler {
  const cache = new Map<string, Promise<CompressedAsset | null>>();
  const load = (file: string): Promise<CompressedAsset | null> => {
    let stat;
    try {
      stat = statSync(file);
    } catch {
      return Promise.resolve(null);
    }
    if (!stat.isFile()) return Promise.resolve(null);
    const kept = cache.get(file);
    if (kept) {
      return kept.then((c) => (c && c.mtimeMs === stat.mtimeMs && c.size === stat.size ? c : (cache.delete(file), load(file))));
    }
    const made = (async () => {
      const raw = await readFile(file);
      const [br, gz] = await Promise.all([
        brotli(raw, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: raw.length } }),
        gzipAsync(raw, { level: 9 }),
      ]);
      return { mtimeMs: stat.mtimeMs, size: stat.size, br, gzip: gz };
    })();
    made.catch(() => cache.delete(file));
    cache.set(file, made);
    return made;
  };
  return (req, res, next) => {
    res.vary('Accept-Encoding');
    const name = ASSET_NAME.exec(req.path)?.[1];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !name || !COMPRESSIBLE.has(extname(name).toLowerCase()) || req.headers.range || !req.headers['accept-encoding']) return next();
    // If-Match and If-Unmodified-Since (RFC 9110 13.2.2, before If-None-Match) are send's to evaluate: 412 when they
    // fail, else the file as it is. Answered here, a failed one got the compressed file (req.fresh looks at neither).
    if (req.headers['if-match'] !== undefined || req.headers['if-unmodified-since'] !== undefined) return next();
    // Brotli when accepted at all (browsers list it after gzip with the same weight, and it is ~15 % smaller), else gzip.
    const encoding = req.acceptsEncodings('br') === 'br' ? 'br' : req.acceptsEncodings('gzip') === 'gzip' ? 'gzip' : undefined;
    if (!encoding) return next();
    const file = join(assetsDir, name);
    load(file).then(
      (asset) => {
        if (!asset) return next();
        const body = encoding === 'br' ? asset.br : asset.gzip;
        setHeaders(res, file);
        res.type(extname(name));
        res.setHeader('cache-control', 'public, max-age=31536000, immutable');
        res.setHeader('content-encoding', encoding);
        res.setHeader('last-modified', new Date(asset.mtimeMs).toUTCString());
        res.setHeader('etag', `W/"${asset.size.toString(16)}-${Math.floor(asset.mtimeMs).toString(16)}-${encoding}"`);
        if (req.fresh) {
          res.status(304).end();
          return;
        }
        res.setHeader('content-length', body.length);
        if (req.method === 'HEAD') res.end();
        else res.end(body);
      },
      (err: unknown) => next(err),
    );
  };
}

/**
 * Serves the built web app at `/`: hashed assets cached for a year (compressed when the browser accepts it), every other GET outside the gateway's own roots (/api, /livez, /healthz, /metrics) answered
 * with index.html so the app's own router handles deep links (e-mail links such as /auth/register/<id>).
 * Without a build the gateway still serves /api and says once how to build the app.
 */
export function serveWebApp(app: Express, dir: string, logger: Logger, { cookieSecure = false }: { cookieSecure?: boolean } = {}): void {
  const index = join(dir, 'index.html');
  if (!existsSync(index)) {
    logger.warn({ dir }, 'web app not built: / is not served (run `pnpm build:web`)');
    return;
  }
  logger.info({ dir }, 'serving the web app at /');
  // Every file carries the page's policy: index.html asked for by name is the page, and an SVG opened on its own is a
  // document that could run script. (For scripts and styles the header is inert.)
  const withPolicy = (res: ServerResponse, path: string, stat?: Stats) => {
    res.setHeader('content-security-policy', WEB_APP_CSP);
    if (path.endsWith('.html')) res.setHeader('cache-control', 'no-cache');
    // express.static's files (the compressed assets take no Range): byte ranges as RFC 9110 has them.
    if (stat) keepRangesToRfc9110(res, stat);
  };
  app.use('/assets', compressedAssets(join(dir, 'assets'), withPolicy));
  // redirect: false: a directory's name is not answered with serve-static's 301 and HTML page, but with the JSON 404 below.
  app.use('/assets', express.static(join(dir, 'assets'), { immutable: true, maxAge: '365d', index: false, redirect: false, setHeaders: withPolicy }));
  app.use(express.static(dir, { index: false, maxAge: 0, redirect: false, setHeaders: withPolicy }));
  app.use((req, res, next) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || isUnderGatewayRoot(req.path)) return next();
    // A client that asks for JSON only (an API call missing its /api prefix) gets the JSON 404, not a page.
    if (!req.accepts('html')) return next();
    // A missing file (a stale asset name, /favicon.ico) is a 404, not the app's HTML.
    if (req.path === '/assets' || req.path.startsWith('/assets/') || /\.[a-z0-9]{1,8}$/i.test(req.path)) {
      // A CDN would keep a 404 without freshness information heuristically: an asset name missing during a rolling
      // deploy (a pod still on the older build) must not stay missing for everyone once every pod has it.
      res.setHeader('cache-control', 'no-store');
      res.status(404).json({ message: 'No such file' });
      return;
    }
    // private: the answer sets the caller's own session hint, which a shared cache must never replay to someone else.
    res.setHeader('cache-control', 'private, no-cache');
    res.setHeader('content-security-policy', WEB_APP_CSP);
    res.cookie(SESSION_HINT_COOKIE, SESSION_COOKIE_SENT.test(req.headers.cookie ?? '') ? 'signed-in' : 'signed-out', { httpOnly: false, sameSite: 'lax', path: '/', secure: cookieSecure, maxAge: 120_000 });
    // The app's page, with the caller's own session hint: no byte ranges (send's range-parser answers some RFC 9110
    // ranges 416, static-ranges.ts; sendFile has no hook to correct it, and no client resumes a page).
    res.sendFile(index, { acceptRanges: false });
  });
}
