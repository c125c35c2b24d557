import { createHash } from 'node:crypto';
import { dirname } from 'node:path';
import express, { type Express } from 'express';
import { buildOpenApiDocument } from './document';
import { keepRangesToRfc9110 } from '../http/static-ranges';

/** swagger-ui-dist's files (npm assets: the docs page loads nothing from a CDN). */
const SWAGGER_UI_DIR = dirname(require.resolve('swagger-ui-dist/package.json'));

const DOCS_ASSETS = new Set(['/swagger-ui.css', '/swagger-ui-bundle.js', '/swagger-ui-standalone-preset.js', '/favicon-32x32.png']);

const INIT_SCRIPT = `window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#swagger-ui', deepLinking: true, presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout', withCredentials: true });`;

const DOCS_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Card Library API</title>
    <link rel="stylesheet" href="/api/docs/swagger-ui.css" />
    <link rel="icon" type="image/png" href="/api/docs/favicon-32x32.png" sizes="32x32" />
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/api/docs/swagger-ui-bundle.js"></script>
    <script src="/api/docs/swagger-ui-standalone-preset.js"></script>
    <script>${INIT_SCRIPT}</script>
  </body>
</html>
`;

/** The one inline script is allowed by its hash; Swagger UI needs inline style attributes and data: images. */
const DOCS_CSP = [
  "default-src 'self'",
  `script-src 'self' 'sha256-${createHash('sha256').update(INIT_SCRIPT).digest('base64')}'`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** GET /api/openapi.json (the document) and GET /api/docs (Swagger UI from npm assets under /api/docs/). */
export function serveApiDocs(app: Express): void {
  const document = JSON.stringify(buildOpenApiDocument());
  app.get('/api/openapi.json', (_req, res) => {
    res.setHeader('cache-control', 'no-cache');
    res.type('application/json').send(document);
  });
  app.get('/api/docs', (_req, res) => {
    res.setHeader('content-security-policy', DOCS_CSP);
    res.setHeader('cache-control', 'no-cache');
    res.type('html').send(DOCS_HTML);
  });
  // The page's assets only; anything else under /api/docs/ falls through to the API's JSON 404.
  const assets = express.static(SWAGGER_UI_DIR, { index: false, maxAge: '1d', setHeaders: (res, _path, stat) => keepRangesToRfc9110(res, stat) });
  app.use('/api/docs', (req, res, next) => (DOCS_ASSETS.has(req.path) ? assets(req, res, next) : next()));
}
