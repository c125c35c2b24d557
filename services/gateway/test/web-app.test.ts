import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import express from 'express';
import { createLogger } from '@cards/platform';
import { serveWebApp, WEB_APP_CSP } from '../src/http/web-app';
import { testTempDir } from '../../../test/support/cleanup';
import { appWithoutServices, closed, listening } from './app-without-services';

/** A bare express app with the web-app hook and a JSON 404 after it, as app.ts arranges them. */
async function serve(dir: string): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  app.get('/api/ping', (_req, res) => void res.json({ ok: true }));
  serveWebApp(app, dir, createLogger('web-app-test', 'silent'));
  app.use((_req, res) => void res.status(404).json({ message: 'fell through' }));
  const { server } = await listening(createServer(app));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

const BIG_SCRIPT = Array.from({ length: 3000 }, (_, i) => `export const value${i} = ${JSON.stringify(`text number ${i}`)};`).join('\n');

describe('serving the built web app (serveWebApp)', () => {
  let dir: string;
  let app: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    dir = testTempDir('web-dist-');
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="app"></div>');
    writeFileSync(join(dir, 'assets', 'index-abc123.js'), 'console.log(1)');
    writeFileSync(join(dir, 'assets', 'app-def456.js'), BIG_SCRIPT);
    writeFileSync(join(dir, 'logo.svg'), '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>');
    app = await serve(dir);
  });
  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers / and deep links (e-mail links included) with index.html, never cached, never kept by a shared cache (it sets the caller\'s session hint)', async () => {
    for (const path of ['/', '/card/6f1c2b1e-0000-4000-8000-000000000000', '/auth/register/6f1c2b1e-0000-4000-8000-000000000000?email=a%40b.c']) {
      const res = await fetch(app.url + path);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('private, no-cache');
      expect(res.headers.get('set-cookie')).toMatch(/^ai-editor-hint=signed-out/);
      expect(res.headers.get('content-security-policy')).toBe(WEB_APP_CSP);
      expect(WEB_APP_CSP).toContain("script-src 'self'");
      expect(await res.text()).toContain('<div id="app">');
    }
  });

  it("answers byte ranges of its files as RFC 9110 has them: a suffix longer than the file, an invalid header, several ranges, a weak or later If-Range get the whole file, never range-parser's 416", async () => {
    const text = async (res: Response) => ({ status: res.status, contentRange: res.headers.get('content-range'), body: await res.text() });
    for (const path of ['/index.html', '/logo.svg', '/assets/index-abc123.js', '/assets/app-def456.js']) {
      const get = (headers: Record<string, string>, method = 'GET') => fetch(app.url + path, { method, headers: { 'accept-encoding': 'identity', ...headers } });
      const plain = await get({});
      const [whole, etag, lastModified] = [await plain.text(), plain.headers.get('etag')!, plain.headers.get('last-modified')!];
      expect(plain.headers.get('accept-ranges')).toBe('bytes');
      // Before: `bytes=-<more than the file>` and `bytes=5-2` were 416, `bytes=0-1abc` and `bytes=0-1,5-2` served 0-1,
      // and If-Range with the (weak) ETag or any later date served the range.
      const later = new Date(Date.parse(lastModified) + 60_000).toUTCString();
      const cases: Array<Record<string, string>> = [
        { range: `bytes=-${whole.length + 100}` },
        { range: 'bytes=5-2' },
        { range: 'bytes=0-1abc' },
        { range: 'bytes=0-1,5-2' },
        { range: 'bytes=0-1, 3-4' },
        { range: 'bytes=0-1', 'if-range': etag },
        { range: 'bytes=0-1', 'if-range': later },
      ];
      for (const headers of cases) expect({ path, headers, ...(await text(await get(headers))) }).toEqual({ path, headers, status: 200, contentRange: null, body: whole });
      // One valid range: its bytes; If-Range with the exact Last-Modified holds; past the end: 416.
      for (const headers of [{ range: 'bytes=0-1' }, { range: 'bytes=-2' }, { range: 'bytes=0-1', 'if-range': lastModified }] as Array<Record<string, string>>) {
        const expected = headers.range === 'bytes=-2' ? whole.slice(-2) : whole.slice(0, 2);
        const start = headers.range === 'bytes=-2' ? whole.length - 2 : 0;
        expect({ path, headers, ...(await text(await get(headers))) }).toEqual({ path, headers, status: 206, contentRange: `bytes ${start}-${start + 1}/${whole.length}`, body: expected });
      }
      expect((await get({ range: `bytes=${whole.length}-` })).status).toBe(416);
      // HEAD ignores Range (14.2): the 200's head.
      const head = await get({ range: 'bytes=0-1' }, 'HEAD');
      expect({ status: head.status, contentRange: head.headers.get('content-range') }).toEqual({ status: 200, contentRange: null });
    }
    // The app's page (deep links, /): no ranges at all.
    const page = await fetch(`${app.url}/`, { headers: { range: 'bytes=-100000' } });
    expect({ status: page.status, acceptRanges: page.headers.get('accept-ranges'), contentRange: page.headers.get('content-range') }).toEqual({ status: 200, acceptRanges: null, contentRange: null });
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

  it('sends assets compressed to a browser that accepts it (brotli first, else gzip), still immutable, Vary: Accept-Encoding', async () => {
    const br = await fetch(`${app.url}/assets/app-def456.js`, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    // fetch decompresses the body itself: the wire bytes are checked below with a client that does not.
    expect(br.status).toBe(200);
    expect(br.headers.get('content-encoding')).toBe('br');
    expect(br.headers.get('vary')).toMatch(/accept-encoding/i);
    expect(br.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(br.headers.get('content-type')).toMatch(/javascript/);
    expect(br.headers.get('content-security-policy')).toBe(WEB_APP_CSP);
    expect(await br.text()).toBe(BIG_SCRIPT);

    const raw = async (encoding: string | undefined, extra: Record<string, string> = {}, method = 'GET') => {
      const { request } = await import('node:http');
      return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
        const req = request(`${app.url}/assets/app-def456.js`, { method, headers: { ...(encoding ? { 'accept-encoding': encoding } : {}), ...extra } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        });
        req.on('error', reject);
        req.end();
      });
    };
    const b = await raw('br;q=1, gzip;q=0.5');
    expect(b.headers['content-encoding']).toBe('br');
    expect(Number(b.headers['content-length'])).toBe(b.body.length);
    expect(b.body.length).toBeLessThan(BIG_SCRIPT.length / 4);
    expect(brotliDecompressSync(b.body).toString()).toBe(BIG_SCRIPT);

    const g = await raw('gzip');
    expect(g.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(g.body).toString()).toBe(BIG_SCRIPT);
    expect(g.headers.etag).not.toBe(b.headers.etag);
    // The same representation asked for again with its tag: 304, no body.
    const again = await raw('gzip', { 'if-none-match': String(g.headers.etag) });
    expect({ status: again.status, length: again.body.length }).toEqual({ status: 304, length: 0 });
    const head = await raw('gzip', {}, 'HEAD');
    expect({ status: head.status, encoding: head.headers['content-encoding'], length: head.headers['content-length'], body: head.body.length }).toEqual({ status: 200, encoding: 'gzip', length: String(g.body.length), body: 0 });

    // No Accept-Encoding, identity only, or gzip refused with q=0: the file as it is.
    for (const encoding of [undefined, 'identity', 'gzip;q=0, br;q=0']) {
      const plain = await raw(encoding);
      expect({ encoding, status: plain.status, contentEncoding: plain.headers['content-encoding'], body: plain.body.toString() }).toEqual({ encoding, status: 200, contentEncoding: undefined, body: BIG_SCRIPT });
      expect(plain.headers.vary).toMatch(/accept-encoding/i);
    }
    // A Range request gets the bytes of the file as it is, never a slice of the compressed one.
    const range = await raw('gzip, br', { range: 'bytes=0-9' });
    expect({ status: range.status, encoding: range.headers['content-encoding'], body: range.body.toString() }).toEqual({ status: 206, encoding: undefined, body: BIG_SCRIPT.slice(0, 10) });
    // A missing asset is still the JSON 404.
    expect((await raw('gzip').then(() => fetch(`${app.url}/assets/missing-000.js`, { headers: { 'accept-encoding': 'gzip' } }))).status).toBe(404);
  });

  it('answers If-Match and If-Unmodified-Since on an asset whatever the encoding asked for: a failed one is 412 (from send; the error handler makes it JSON), a holding one the file', async () => {
    const asked = async (headers: Record<string, string>) => {
      const res = await fetch(`${app.url}/assets/app-def456.js`, { headers: { 'accept-encoding': 'gzip, br', ...headers } });
      const text = await res.text();
      return { status: res.status, file: text === BIG_SCRIPT };
    };
    // Before, the compressed answer took neither into account: 200 with the file, where the file as it is was 412.
    for (const headers of [{ 'if-match': '"another"' }, { 'if-unmodified-since': 'Sun, 06 Nov 1994 08:49:37 GMT' }] as Array<Record<string, string>>) {
      expect({ headers, ...(await asked(headers)) }).toEqual({ headers, status: 412, file: false });
    }
    expect(await asked({ 'if-match': '*', 'if-unmodified-since': new Date(Date.now() + 3_600_000).toUTCString() })).toEqual({ status: 200, file: true });
  });

  it('answers a missing asset or file-like path with a JSON 404, not the app', async () => {
    for (const path of ['/assets/index-gone.js', '/favicon.ico']) {
      const res = await fetch(app.url + path);
      expect(res.status).toBe(404);
      // Not kept by a CDN: the name may exist on the next pod of a rolling deploy.
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(await res.json()).toEqual({ message: 'No such file' });
    }
  });

  // serve-static answered a directory's name with a 301 to its name with a slash and an HTML page of its own ("Redirecting
  // to /assets/"), which led to the JSON 404 anyway.
  it('answers a directory of the build asked for by name (/assets, /assets/) with the JSON 404, not a redirect page', async () => {
    for (const path of ['/assets', '/assets/', '/assets?v=1']) {
      const res = await fetch(app.url + path, { redirect: 'manual' });
      expect(res.status).toBe(404);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ message: 'No such file' });
    }
  });

  it('leaves /api and non-GET requests to the routes after it', async () => {
    expect(await (await fetch(`${app.url}/api/ping`)).json()).toEqual({ ok: true });
    const unknownApi = await fetch(`${app.url}/api/nope`);
    expect(unknownApi.status).toBe(404);
    expect(await unknownApi.json()).toEqual({ message: 'fell through' });
    // The gateway's own roots are never the app's (api-paths.ts): a path under them is the gateway's JSON 404.
    for (const path of ['/api', '/API/nope', '/healthz/x', '/livez/x/y', '/metrics/x', '/Metrics/x']) {
      const res = await fetch(app.url + path);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ message: 'fell through' });
    }
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

describe('the API docs page assets (serveApiDocs)', () => {
  it('answer byte ranges as RFC 9110 has them: a suffix longer than the file is the whole file (200), not 416; one range its bytes; past the end a JSON 416 kept by no cache', async () => {
    const { server, base } = await listening(createServer(appWithoutServices()));
    try {
      const url = `${base}/api/docs/swagger-ui.css`;
      const whole = Buffer.from(await (await fetch(url, { headers: { 'accept-encoding': 'identity' } })).arrayBuffer());
      const longer = await fetch(url, { headers: { range: `bytes=-${whole.length + 1}`, 'accept-encoding': 'identity' } });
      expect({ status: longer.status, same: Buffer.from(await longer.arrayBuffer()).equals(whole) }).toEqual({ status: 200, same: true });
      const one = await fetch(url, { headers: { range: 'bytes=0-9', 'accept-encoding': 'identity' } });
      expect({ status: one.status, same: Buffer.from(await one.arrayBuffer()).equals(whole.subarray(0, 10)) }).toEqual({ status: 206, same: true });
      // Past the end: 416 as a JSON error, not the file's type and cache lifetime around a JSON body. Before: Content-Type
      // text/css, Cache-Control public, max-age=86400, the file's ETag, and {"message":"Bad request"}.
      const past = await fetch(url, { headers: { range: `bytes=${whole.length}-`, 'accept-encoding': 'identity' } });
      expect({
        status: past.status,
        type: past.headers.get('content-type'),
        cacheControl: past.headers.get('cache-control'),
        etag: past.headers.get('etag'),
        contentRange: past.headers.get('content-range'),
        body: await past.json(),
      }).toEqual({
        status: 416,
        type: 'application/json; charset=utf-8',
        cacheControl: 'no-store',
        etag: null,
        contentRange: `bytes */${whole.length}`,
        body: { message: `Range: no byte of the range asked for is in the file (${whole.length} bytes); ask for bytes from 0 to ${whole.length - 1}` },
      });
    } finally {
      await closed(server);
    }
  });

  it('answer a failed If-Match or If-Unmodified-Since with a JSON 412 that says which condition failed and what the file is now', async () => {
    const { server, base } = await listening(createServer(appWithoutServices()));
    try {
      const url = `${base}/api/docs/swagger-ui.css`;
      const first = await fetch(url, { headers: { 'accept-encoding': 'identity' } });
      await first.arrayBuffer();
      const etag = first.headers.get('etag');
      const lastModified = first.headers.get('last-modified');
      expect({ etag: typeof etag, lastModified: typeof lastModified }).toEqual({ etag: 'string', lastModified: 'string' });
      // Its own ETag and Last-Modified hold: the file.
      expect((await fetch(url, { headers: { 'if-match': etag!, 'if-unmodified-since': lastModified!, 'accept-encoding': 'identity' } })).status).toBe(200);
      // Before: {"message":"Bad request"}, which names neither the header nor why.
      const answerTo = async (headers: Record<string, string>) => {
        const res = await fetch(url, { headers: { ...headers, 'accept-encoding': 'identity' } });
        return { status: res.status, type: res.headers.get('content-type'), cacheControl: res.headers.get('cache-control'), etag: res.headers.get('etag'), body: await res.json() };
      };
      const refused = (message: string) => ({ status: 412, type: 'application/json; charset=utf-8', cacheControl: 'no-store', etag: null, body: { message } });
      expect(await answerTo({ 'if-match': '"another"' })).toEqual(
        refused(`If-Match: the file is not the version named; its ETag is now ${etag}`),
      );
      expect(await answerTo({ 'if-unmodified-since': 'Sun, 06 Nov 1994 08:49:37 GMT' })).toEqual(
        refused(`If-Unmodified-Since: the file was modified after that date; its Last-Modified is ${lastModified}`),
      );
    } finally {
      await closed(server);
    }
  });
});
