import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { join } from 'node:path';
import express from 'express';
import { createLogger } from '@cards/platform';
import { serveWebApp, WEB_APP_CSP } from '../src/http/web-app';
import { testTempDir } from '../../../test/support/cleanup';

/** A bare express app with the web-app hook and a JSON 404 after it, as app.ts arranges them. */
async function serve(dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.get('/api/ping', (_req, res) => void res.json({ ok: true }));
  serveWebApp(app, dir, createLogger('web-app-test', 'silent'));
  app.use((_req, res) => void res.status(404).json({ message: 'fell through' }));
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

describe('serving the built web app (serveWebApp)', () => {
  let dir: string;
  let app: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    dir = testTempDir('web-dist-');
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="app"></div>');
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
    writeFileSync(join(dir, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    app = await serve(dir);
  });
  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers / and deep links (e-mail links included) with index.html, never cached', async () => {
    for (const path of ['/', '/card/6f1c2b1e-0000-4000-8000-000000000000', '/auth/register/6f1c2b1e-0000-4000-8000-000000000000?email=a%40b.c']) {
      const res = await fetch(app.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('content-security-policy')).toBe(WEB_APP_CSP);
      expect(WEB_APP_CSP).toContain("script-src 'self'");
      expect(await res.text()).toContain('<div id="app">');
    }
  });

  it('gives every file it serves the page policy: index.html asked for by name, an SVG opened on its own', async () => {
    for (const path of ['/index.html', '/logo.svg', '/assets/index-abc123.js']) {
      const res = await fetch(app.url + path);
      expect({ path, status: res.status, csp: res.headers.get('content-security-policy') }).toEqual({ path, status: 200, csp: WEB_APP_CSP });
    }
    expect((await fetch(`${app.url}/index.html`)).headers.get('cache-control')).toBe('no-cache');
  });

  it('serves hashed assets as immutable for a year', async () => {
    const res = await fetch(`${app.url}/assets/index-abc123.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await res.text()).toBe('console.log(1)');
  });

  it('answers a missing asset or file-like path with a JSON 404, not the app', async () => {
    for (const path of ['/assets/index-gone.js', '/favicon.ico']) {
      const res = await fetch(app.url + path);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ message: 'No such file' });
    }
  });

  it('leaves /api and non-GET requests to the routes after it', async () => {
    expect(await (await fetch(`${app.url}/api/ping`)).json()).toEqual({ ok: true });
    const unknownApi = await fetch(`${app.url}/api/nope`);
    expect(unknownApi.status).toBe(404);
    expect(await unknownApi.json()).toEqual({ message: 'fell through' });
    const post = await fetch(`${app.url}/card/x`, { method: 'POST' });
    expect(post.status).toBe(404);
    expect(await post.json()).toEqual({ message: 'fell through' });
  });

  it('serves nothing at / when the directory holds no build', async () => {
    const empty = testTempDir('web-empty-');
    const bare = await serve(empty);
    try {
      const res = await fetch(`${bare.url}/`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ message: 'fell through' });
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
