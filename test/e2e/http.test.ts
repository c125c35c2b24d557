import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';

// The HTTP layer every route shares: body types, methods, paths, headers, metrics, parser-level errors.

const APP_ORIGIN = 'https://app.example.com';
let system: RunningSystem;
let mailbox: Mailbox;
let alice: TestUser;
let webDist: string;

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  webDist = mkdtempSync(join(tmpdir(), 'http-web-'));
  writeFileSync(join(webDist, 'index.html'), '<!doctype html><div id="app"></div>');
  system = await startSystem({ env: { SMTP_URL: mailbox.url, CORS_ORIGINS: APP_ORIGIN, WEB_DIST_DIR: webDist } });
  alice = await signUp(system.baseUrl, mailbox, 'http-alice');
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
  if (webDist) rmSync(webDist, { recursive: true, force: true });
});

async function call(method: string, path: string, init: { headers?: Record<string, string>; body?: string | Buffer; cookie?: boolean } = {}) {
  const headers = { ...init.headers, ...(init.cookie ? { cookie: alice.client.cookie! } : {}) };
  const res = await fetch(`${system.baseUrl}${path}`, { method, headers, body: init.body });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json: json as { message?: string } | undefined };
}

/** Writes raw bytes on a fresh connection and collects everything the server sends until it closes. */
function rawExchange(bytes: string): Promise<string> {
  const url = new URL(system.baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.write(bytes);
  });
}

const jsonBodyOf = (raw: string) => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)) as { message: string };

describe('request bodies', () => {
  it('reads application/*+json as JSON', async () => {
    const res = await call('POST', '/api/card_collection', { cookie: true, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ name: 'typed json', is_public: true }) });
    expect(res.status).toBe(204);
  });

  it('refuses a body that is not JSON (form, multipart, text/plain, no Content-Type) with 415 instead of ignoring it', async () => {
    const bodies: Array<[Record<string, string>, string]> = [
      [{ 'content-type': 'text/plain' }, '{"name":"x","is_public":true}'],
      [{ 'content-type': 'application/x-www-form-urlencoded' }, 'name=x&is_public=true'],
      [{ 'content-type': 'multipart/form-data; boundary=b' }, '--b\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--b--\r\n'],
    ];
    for (const [headers, body] of bodies) {
      const res = await call('POST', '/api/card_collection', { cookie: true, headers, body });
      expect({ headers, status: res.status, json: res.json }).toEqual({ headers, status: 415, json: { message: expect.stringMatching(/application\/json/) } });
    }
    // fetch labels a string body text/plain; a Blob without a type goes with no Content-Type at all.
    const untyped = await fetch(`${system.baseUrl}/api/card/search/1`, { method: 'POST', body: new Blob(['{"content":"x"}']) });
    expect(untyped.headers.get('content-type')).toMatch(/json/);
    expect(untyped.status).toBe(415);
  });

  it('lets a request without a body through whatever Content-Type it names', async () => {
    const res = await call('PUT', '/api/notifications/all', { cookie: true, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
    expect(res.status).toBe(204);
  });

  it('says what is wrong with a body that does not decompress and with broken percent-encoding', async () => {
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await call('POST', '/api/card/search/1', { headers: { 'content-type': 'application/json', 'content-encoding': encoding }, body: '{"content":"not compressed"}' });
      expect({ encoding, status: res.status, message: res.json?.message }).toEqual({ encoding, status: 400, message: expect.stringMatching(/decompress/) });
    }
    const gzipped = await call('POST', '/api/card/search/1', { headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: gzipSync('{"content":"compressed"}') });
    expect(gzipped.status).toBe(200);
    const badPath = await call('GET', '/api/card/%E0%A4%A');
    expect(badPath.status).toBe(400);
    expect(badPath.json).toEqual({ message: expect.stringMatching(/percent-encoding/) });
  });
});

describe('methods and paths', () => {
  it('answers a known path with another method 405 and Allow, OPTIONS on it 204 and Allow, and an unknown path 404', async () => {
    const patch = await call('PATCH', '/api/card/update', { headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')?.split(', ')).toEqual(expect.arrayContaining(['PUT', 'OPTIONS']));
    expect(Object.keys(patch.json!)).toEqual(['message']);
    const getOnPost = await call('GET', '/api/card');
    expect(getOnPost.status).toBe(405);
    expect(getOnPost.headers.get('allow')).toBe('POST, OPTIONS');
    const propfind = await call('PROPFIND', '/api/card/count');
    expect(propfind.status).toBe(405);
    expect(propfind.headers.get('allow')?.split(', ')).toEqual(expect.arrayContaining(['GET', 'HEAD']));
    const options = await call('OPTIONS', '/api/top_users/1');
    expect(options.status).toBe(204);
    expect(options.text).toBe('');
    expect(options.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
    for (const method of ['GET', 'PATCH', 'OPTIONS']) {
      const unknown = await call(method, '/api/no/such/route');
      expect({ method, status: unknown.status, json: unknown.json }).toEqual({ method, status: 404, json: { message: 'No such route' } });
    }
  });

  it('serves the API under /api only, tells a call without the prefix where it is, and keeps paths like /card/<id> for the web app', async () => {
    const post = await call('POST', '/card/search/1', { headers: { 'content-type': 'application/json' }, body: '{"content":"x"}' });
    expect(post.status).toBe(404);
    expect(post.json!.message).toContain('POST /api/card/search/1');
    const jsonOnly = await call('GET', '/card/count', { headers: { accept: 'application/json' } });
    expect(jsonOnly.status).toBe(404);
    expect(jsonOnly.json!.message).toContain('/api/card/count');
    const browser = await call('GET', '/card/count', { headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(browser.status).toBe(200);
    expect(browser.headers.get('content-type')).toContain('text/html');
  });
});

describe('headers', () => {
  it('marks every API answer no-store and varying by Origin, whatever Origin it came with', async () => {
    for (const origin of [undefined, APP_ORIGIN, 'https://elsewhere.example', system.baseUrl]) {
      for (const path of ['/api/card/count', '/api/auth', '/api/nope']) {
        const res = await call('GET', path, { headers: origin ? { origin } : {} });
        const seen = { origin, path, cacheControl: res.headers.get('cache-control'), vary: res.headers.get('vary') };
        expect(seen).toEqual({ origin, path, cacheControl: 'no-store', vary: expect.stringMatching(/origin/i) });
      }
    }
  });
});

describe('metrics', () => {
  it('counts a failed request under the same /api route pattern as a successful one', async () => {
    expect((await call('GET', '/api/auth')).status).toBe(401);
    expect((await call('GET', '/api/auth', { cookie: true })).status).toBe(200);
    const text = await (await fetch(`${system.baseUrl}/metrics`)).text();
    const routes = new Set([...text.matchAll(/http_request_duration_seconds_count\{[^}]*route="([^"]*)"/g)].map((m) => m[1]));
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/api\/auth",status="401"\}/);
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/api\/auth",status="200"\}/);
    for (const route of routes) expect(route === 'unmatched' || route!.startsWith('/api/') || route === '/healthz' || route === '/metrics').toBe(true);
  });
});

describe('requests the HTTP parser rejects before any route', () => {
  it('answers a malformed request and oversized headers with a JSON {"message"}', async () => {
    const malformed = await rawExchange('GET /api/card/count HTTP/1.1\r\nHost: x\r\nBad Header Name: 1\r\n\r\n');
    expect(malformed).toMatch(/^HTTP\/1\.1 400 /);
    expect(malformed).toMatch(/content-type: application\/json/i);
    expect(Object.keys(jsonBodyOf(malformed))).toEqual(['message']);
    const huge = await rawExchange(`GET /api/card/count HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    expect(jsonBodyOf(huge).message).toMatch(/headers/);
    expect((await fetch(`${system.baseUrl}/healthz`)).status).toBe(200);
  });
});
