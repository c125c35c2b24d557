import { existsSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join, resolve } from 'node:path';
import express, { type Express } from 'express';
import type { Logger } from '@cards/platform';

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

/**
 * Serves the built web app at `/`: hashed assets cached for a year, every other non-/api GET answered
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
  const withPolicy = (res: ServerResponse, path: string) => {
    res.setHeader('content-security-policy', WEB_APP_CSP);
    if (path.endsWith('.html')) res.setHeader('cache-control', 'no-cache');
  };
  app.use('/assets', express.static(join(dir, 'assets'), { immutable: true, maxAge: '365d', index: false, setHeaders: withPolicy }));
  app.use(express.static(dir, { index: false, maxAge: 0, setHeaders: withPolicy }));
  app.use((req, res, next) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || req.path === '/api' || req.path.startsWith('/api/')) return next();
    // A client that asks for JSON only (an API call missing its /api prefix) gets the JSON 404, not a page.
    if (!req.accepts('html')) return next();
    // A missing file (a stale asset name, /favicon.ico) is a 404, not the app's HTML.
    if (req.path.startsWith('/assets/') || /\.[a-z0-9]{1,8}$/i.test(req.path)) {
      res.status(404).json({ message: 'No such file' });
      return;
    }
    res.setHeader('cache-control', 'no-cache');
    res.setHeader('content-security-policy', WEB_APP_CSP);
    res.cookie(SESSION_HINT_COOKIE, SESSION_COOKIE_SENT.test(req.headers.cookie ?? '') ? 'signed-in' : 'signed-out', { httpOnly: false, sameSite: 'lax', path: '/', secure: cookieSecure, maxAge: 120_000 });
    res.sendFile(index);
  });
}
