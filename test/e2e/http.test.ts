import { randomUUID } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { ResponseValidator, eventually } from './openapi-support';
import { postCard } from './cards-support';
import { testTempDir } from '../support/cleanup';

// The HTTP layer every route shares: body types, methods, paths, headers, metrics, parser-level errors,
// the access log and the connection cap.

const APP_ORIGIN = 'https://app.example.com';
let system: RunningSystem;
let mailbox: Mailbox;
let alice: TestUser;
let webDist: string;

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  webDist = testTempDir('http-web-');
  writeFileSync(join(webDist, 'index.html'), '<!doctype html><div id="app"></div>');
  // LOG_LEVEL=info lets the access log through (its default level).
  system = await startSystem({ env: { SMTP_URL: mailbox.url, CORS_ORIGINS: APP_ORIGIN, WEB_DIST_DIR: webDist, LOG_LEVEL: 'info' } });
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
function rawExchange(bytes: string, baseUrl = system.baseUrl): Promise<string> {
  const url = new URL(baseUrl);
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

/** One request through node:http, which (unlike fetch) sends any method with any body, GET included. */
function nodeRequest(method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; json: unknown }>((resolve, reject) => {
    // node:http frames a GET or DELETE body only when told its length.
    const framing = body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) };
    const req = httpRequest(`${system.baseUrl}${path}`, { method, headers: { ...headers, ...framing }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, json: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A GET with the browser's Accept sent as written: fetch would resolve `.`/`..` and encoded letters first. */
const browserGet = (path: string) => rawExchange(`GET ${path} HTTP/1.1\r\nHost: x\r\nAccept: text/html,application/xhtml+xml,*/*;q=0.8\r\nConnection: close\r\n\r\n`);

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

  it('never takes a fixed path segment for a neighbouring route\'s UUID parameter: Allow and 405 list what the fixed path serves', async () => {
    // /api/card/:card_id would also match /api/card/count, /api/card_collection/:collection_id/:page .../search/1 (contract audit).
    for (const [method, path, allow] of [
      ['DELETE', '/api/card/count', 'GET, HEAD, OPTIONS'],
      ['POST', '/api/card/count', 'GET, HEAD, OPTIONS'],
      ['DELETE', '/api/card_collection/bookmark', 'POST, OPTIONS'],
      ['GET', '/api/card_collection/search/1', 'POST, OPTIONS'],
      ['GET', '/api/card_collection/fulltextsearch/1', 'POST, OPTIONS'],
    ] as const) {
      const res = await call(method, path, { cookie: true });
      expect({ method, path, status: res.status, allow: res.headers.get('allow'), json: res.json }).toEqual({ method, path, status: 405, allow, json: { message: `${method} is not allowed here; allowed: ${allow}` } });
    }
    const options = await call('OPTIONS', '/api/card/count');
    expect({ status: options.status, allow: options.headers.get('allow') }).toEqual({ status: 204, allow: 'GET, HEAD, OPTIONS' });
    for (const path of ['/api/card/search', '/api/card_collection/bookmark/2']) {
      const res = await call('GET', path, { cookie: true });
      expect({ path, status: res.status, json: res.json }).toEqual({ path, status: 404, json: { message: 'No such route' } });
    }
  });

  it('answers other methods on /healthz, /metrics, the document and the docs page 405 with Allow, as on API paths', async () => {
    for (const [method, path] of [['POST', '/healthz'], ['PUT', '/metrics'], ['POST', '/api/openapi.json'], ['DELETE', '/api/docs']] as const) {
      const res = await call(method, path);
      expect({ method, path, status: res.status, allow: res.headers.get('allow'), json: res.json }).toEqual({ method, path, status: 405, allow: 'GET, HEAD, OPTIONS', json: { message: expect.stringContaining('not allowed') } });
    }
    const options = await call('OPTIONS', '/healthz');
    expect({ status: options.status, allow: options.headers.get('allow') }).toEqual({ status: 204, allow: 'GET, HEAD, OPTIONS' });
  });

  it('answers OPTIONS * (about the server, RFC 9110 §9.3.7) 204 with every method it supports in Allow, and still answers a CORS preflight on a real path', async () => {
    const answer = await rawExchange('OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 204 /);
    const allow = /\r\nallow: ([^\r]*)\r\n/i.exec(answer)?.[1]?.split(', ');
    expect(allow?.sort()).toEqual(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT']);
    const preflight = await call('OPTIONS', '/api/card', { headers: { origin: APP_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(APP_ORIGIN);
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
  });

  it('answers * with any method but OPTIONS 400 {"message"} (RFC 9110 §7.1: asterisk-form is for OPTIONS only), never the web page or a 404', async () => {
    for (const method of ['GET', 'HEAD', 'POST', 'DELETE']) {
      const answer = await rawExchange(`${method} * HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      expect({ method, status: /^HTTP\/1\.1 (\d+) /.exec(answer)?.[1] }).toEqual({ method, status: '400' });
      if (method !== 'HEAD') expect(jsonBodyOf(answer).message).toMatch(/only with OPTIONS/);
    }
  });

  it("answers CONNECT 405 with the same Allow as OPTIONS *: both come from the routes", async () => {
    const allowOf = (answer: string) => /\r\nallow: ([^\r]*)\r\n/i.exec(answer)?.[1];
    const server = allowOf(await rawExchange('OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    const connectAnswer = await rawExchange('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(connectAnswer).toMatch(/^HTTP\/1\.1 405 /);
    expect(server).toBeDefined();
    expect(allowOf(connectAnswer)).toBe(server);
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

describe('paths that are not in normal form', () => {
  it('answers a path that reaches the API, /healthz or /metrics only once normalized with a JSON 404 naming the normal path, never the web page', async () => {
    const cases: Array<[string, string]> = [
      ['//api/card/count', 'GET /api/card/count'],
      ['/api//card/count', 'GET /api/card/count'],
      ['/./api/card/count', 'GET /api/card/count'],
      ['/api/./card/count', 'GET /api/card/count'],
      ['/web/../api/card/count', 'GET /api/card/count'],
      ['/.%2e/api/card/count', 'GET /api/card/count'],
      ['/api%2Fcard%2Fcount', 'GET /api/card/count'],
      ['/%61pi/card/count', 'GET /api/card/count'],
      ['/api\\card\\count', 'GET /api/card/count'],
      ['/api;v=1/card/count', 'GET /api/card/count'],
      ['/api/card/count//', 'GET /api/card/count'],
      ['//healthz', 'GET /healthz'],
    ];
    for (const [path, normal] of cases) {
      const answer = await browserGet(path);
      const seen = { path, status: answer.slice(0, 12), json: /content-type: application\/json/i.test(answer) };
      expect(seen).toEqual({ path, status: 'HTTP/1.1 404', json: true });
      expect(jsonBodyOf(answer).message).toContain(`did you mean ${normal}?`);
    }
  });

  it('matches API paths as the routes do (any case, a trailing slash, percent-encoded parameters) and leaves other paths to the web app', async () => {
    for (const path of ['/api/card/count', '/API/Card/Count', '/api/card/count/']) {
      const answer = await browserGet(path);
      expect({ path, status: answer.slice(0, 12), body: jsonBodyOf(answer) }).toEqual({ path, status: 'HTTP/1.1 200', body: { total_count: expect.any(Number) } });
    }
    expect((await browserGet('/api/password/a%2Fb%40example.com')).slice(0, 12)).toBe('HTTP/1.1 204');
    for (const path of ['/card/count', '//card/count', '/apiary']) {
      const answer = await browserGet(path);
      expect({ path, status: answer.slice(0, 12), html: /content-type: text\/html/i.test(answer) }).toEqual({ path, status: 'HTTP/1.1 200', html: true });
    }
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

/** A path of the OpenAPI document with its parameters filled in (page 1, an e-mail, fresh UUIDs). */
const concrete = (path: string) => path.replace(/\{page\}/g, '1').replace(/\{email\}/g, 'someone%40example.com').replace(/\{\w+\}/g, randomUUID());

describe('the OpenAPI document lists the answers the shared HTTP layer gives', () => {
  type Doc = { paths: Record<string, Record<string, unknown>> };

  it('lists 405 (with Allow) on every operation, and 415, 400 for malformed JSON and 413 on every operation behind the /api body check, as real answers show', async () => {
    const validator = await ResponseValidator.load(system.baseUrl);
    const doc = (await (await fetch(`${system.baseUrl}/api/openapi.json`)).json()) as Doc;
    const problems: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      const methods = Object.keys(item).map((m) => m.toUpperCase());
      const patch = await nodeRequest('PATCH', concrete(path), { 'content-type': 'application/json' }, '{}');
      if (patch.status !== 405 || typeof patch.headers.allow !== 'string') problems.push(`PATCH ${path}: ${patch.status}, Allow ${String(patch.headers.allow)}`);
      for (const method of methods) {
        problems.push(...validator.problems(method, path, patch.status, patch.json, String(patch.headers['content-type'])));
        if (!validator.checked.has(`${method} ${path} 405`)) problems.push(`${method} ${path} does not list 405`);
        if (path === '/api/openapi.json' || path === '/api/docs' || !path.startsWith('/api/')) continue;
        const form = await nodeRequest(method, concrete(path), { 'content-type': 'application/x-www-form-urlencoded' }, 'a=1');
        problems.push(...validator.problems(method, path, form.status, form.json, String(form.headers['content-type'])));
        if (form.status !== 415 || !validator.checked.has(`${method} ${path} 415`)) problems.push(`${method} ${path}: a form body got ${form.status}, or the operation does not list 415`);
        // An anonymous upload is refused 401 before its body is read: the malformed one is sent logged in.
        const session: Record<string, string> = method === 'POST' && path === '/api/file' ? { cookie: alice.client.cookie! } : {};
        const malformed = await nodeRequest(method, concrete(path), { 'content-type': 'application/json', ...session }, '{"a":');
        problems.push(...validator.problems(method, path, malformed.status, malformed.json, String(malformed.headers['content-type'])));
        if (malformed.status !== 400 || !validator.checked.has(`${method} ${path} 400`)) problems.push(`${method} ${path}: malformed JSON got ${malformed.status}, or the operation does not list 400`);
        if (path === '/api/file') continue; // its own, larger limit: listed as the operation's 413
        const oversize = await nodeRequest(method, concrete(path), { 'content-type': 'application/json' }, `{"a":"${'x'.repeat(1_100_000)}"}`);
        problems.push(...validator.problems(method, path, oversize.status, oversize.json, String(oversize.headers['content-type'])));
        if (oversize.status !== 413 || !validator.checked.has(`${method} ${path} 413`)) problems.push(`${method} ${path}: a body over the limit got ${oversize.status}, or the operation does not list 413`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('lists 431 on every operation, as a query string over the 16 KiB request head limit shows', async () => {
    const validator = await ResponseValidator.load(system.baseUrl);
    const doc = (await (await fetch(`${system.baseUrl}/api/openapi.json`)).json()) as Doc;
    const problems: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const method of Object.keys(item).map((m) => m.toUpperCase())) {
        const res = await fetch(`${system.baseUrl}${concrete(path)}?q=${'x'.repeat(20_000)}`, { method, redirect: 'manual' });
        const text = await res.text();
        problems.push(...validator.problems(method, path, res.status, JSON.parse(text) as unknown, res.headers.get('content-type')));
        if (res.status !== 431 || !validator.checked.has(`${method} ${path} 431`)) problems.push(`${method} ${path}: a 20 KB query string got ${res.status}, or the operation does not list 431`);
      }
    }
    expect(problems).toEqual([]);
  });
});

describe('metrics', () => {
  it('counts a failed request under the same /api route pattern as a successful one', async () => {
    expect((await call('GET', '/api/auth')).status).toBe(401);
    expect((await call('GET', '/api/auth', { cookie: true })).status).toBe(200);
    // Spelled another way, the same route: one label, so clients cannot mint new series.
    expect((await call('GET', '/API/Card/Count')).status).toBe(200);
    const text = await (await fetch(`${system.baseUrl}/metrics`)).text();
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/api\/card\/count",status="200"\}/);
    expect(text).not.toContain('route="/API');
    const routes = new Set([...text.matchAll(/http_request_duration_seconds_count\{[^}]*route="([^"]*)"/g)].map((m) => m[1]));
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/api\/auth",status="401"\}/);
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/api\/auth",status="200"\}/);
    for (const route of routes) expect(route === 'unmatched' || route!.startsWith('/api/') || route === '/healthz' || route === '/metrics').toBe(true);
  });

  it("shows the event pipeline: a new card's event published from the cards outbox and handled by search", async () => {
    const series = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
    const scrape = async () => {
      const text = await (await fetch(`${system.baseUrl}/metrics`)).text();
      return {
        published: series(text, 'card_library_events_published_total{topic="cards.card.v1"}'),
        indexed: series(text, 'card_library_events_handled_total{group="search-index",topic="cards.card.v1",outcome="ok"}'),
        pending: series(text, 'card_library_outbox_pending_entries{outbox="cards"}'),
      };
    };
    const before = await scrape();
    await postCard(alice);
    await eventually('the card event published and indexed', async () => {
      const now = await scrape();
      return now.published > before.published && now.indexed > before.indexed;
    });
    expect((await scrape()).pending).toBe(0);
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

  it('answers a request without Host, with two or an empty one, an unknown Expect, CONNECT, bad chunking and a huge URL with a JSON {"message"}', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['GET /api/card/count HTTP/1.1\r\n\r\n', '400', /Host/],
      ['GET /api/card/count HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', '400', /more than one Host/],
      ['GET /api/card/count HTTP/1.1\r\nHost:\r\n\r\n', '400', /Host/],
      ['GET /api/card/count HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n', '417', /Expect/],
      ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n', '405', /CONNECT/],
      ['POST /api/card/search/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n', '400', /Malformed/],
      [`GET /api/card/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, '431', /URL/],
    ];
    for (const [request, status, message] of cases) {
      const answer = await rawExchange(request);
      const head = request.slice(0, 60);
      expect({ head, status: answer.slice(9, 12), json: /content-type: application\/json/i.test(answer) }).toEqual({ head, status, json: true });
      expect(jsonBodyOf(answer)).toEqual({ message: expect.stringMatching(message) });
    }
    // HTTP/1.0 has no Host requirement.
    const http10 = await rawExchange('GET /api/card/count HTTP/1.0\r\n\r\n');
    expect(http10.slice(0, 12)).toBe('HTTP/1.1 200');
    expect((await fetch(`${system.baseUrl}/healthz`)).status).toBe(200);
  });
});

describe('access log', () => {
  /** The access-log line of the request that carried `requestId`, once the gateway has written it. */
  async function accessLine(requestId: string): Promise<{ text: string; fields: Record<string, unknown> }> {
    let text: string | undefined;
    await eventually(`the access-log line of ${requestId}`, async () => {
      text = system.logs().split('\n').find((line) => line.includes('"http request"') && line.includes(`"reqId":"${requestId}"`));
      return text !== undefined;
    });
    return { text: text!, fields: JSON.parse(text!) as Record<string, unknown> };
  }

  it('writes one line per request with method, route pattern, status, duration and request id, and no ids, query strings, cookies or bodies', async () => {
    const cardId = randomUUID();
    const requestId = `access-${randomUUID()}`;
    const res = await call('GET', `/api/card/${cardId}?token=query-secret-value`, { cookie: true, headers: { 'x-request-id': requestId } });
    expect(res.status).toBe(404);
    const { text, fields } = await accessLine(requestId);
    expect(fields).toMatchObject({ level: 30, service: 'gateway', reqId: requestId, method: 'GET', route: '/api/card/:card_id', status: 404, msg: 'http request' });
    expect(typeof fields.ms).toBe('number');
    const cookieValue = alice.client.cookie!.split('=')[1]!;
    for (const secret of [cardId, 'query-secret-value', cookieValue]) expect(text).not.toContain(secret);

    const loginId = `access-${randomUUID()}`;
    const login = await call('POST', '/api/auth', { headers: { 'content-type': 'application/json', 'x-request-id': loginId }, body: JSON.stringify({ email: alice.email, password: alice.password }) });
    expect(login.status).toBe(204);
    const loginLine = await accessLine(loginId);
    expect(loginLine.fields).toMatchObject({ method: 'POST', route: '/api/auth', status: 204 });
    for (const secret of [alice.email, alice.password]) expect(loginLine.text).not.toContain(secret);
    expect(system.logs().split('\n').filter((line) => line.includes(`"reqId":"${loginId}"`) && line.includes('"http request"'))).toHaveLength(1);
  });

  it("tells an operator a failed login's wrong password from its unknown account (the reason field only); the two answers are byte-identical", async () => {
    const refused = async (email: string) => {
      const requestId = `access-${randomUUID()}`;
      const res = await call('POST', '/api/auth', { headers: { 'content-type': 'application/json', 'x-request-id': requestId }, body: JSON.stringify({ email, password: 'not the password' }) });
      // What differs between any two answers whatever they say: the date, the request id echoed, the rate limits' counts.
      const headers = [...res.headers].filter(([name]) => !['date', 'x-request-id'].includes(name) && !name.startsWith('ratelimit'));
      return { answer: { status: res.status, headers, body: res.text }, line: await accessLine(requestId) };
    };
    const wrong = await refused(alice.email);
    const unknown = await refused(`nobody-${randomUUID()}@example.com`);
    expect(wrong.answer).toEqual(unknown.answer);
    expect(wrong.answer).toMatchObject({ status: 401, body: JSON.stringify({ message: 'Incorrect email or password' }) });
    expect(wrong.line.fields).toMatchObject({ route: '/api/auth', status: 401, reason: 'grpc:UNAUTHENTICATED:WRONG_PASSWORD' });
    expect(unknown.line.fields).toMatchObject({ route: '/api/auth', status: 401, reason: 'grpc:UNAUTHENTICATED:UNKNOWN_ACCOUNT' });
    for (const { line } of [wrong, unknown]) expect(line.text).not.toMatch(/nobody-|not the password|http-alice/);
  });
});

describe('connection cap (HTTP_MAX_CONNECTIONS)', () => {
  const CAP = 4;
  let capped: RunningSystem;
  beforeAll(async () => {
    capped = await startSystem({ env: { HTTP_MAX_CONNECTIONS: String(CAP) } });
  }, 120_000);
  afterAll(async () => {
    await capped?.stop();
  });

  /** Opens a connection and sends one keep-alive request on it: 'served' once a 200 arrives, 'refused' with the 503 the server answered, 'closed' if it closes it unanswered. */
  function openAndAsk(url: URL): Promise<{ socket: Socket; outcome: 'served' | 'refused' | 'closed'; answer: string }> {
    return new Promise((resolve) => {
      const socket = connect(Number(url.port), url.hostname);
      let answer = '';
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString('latin1');
        if (answer.startsWith('HTTP/1.1 200 ')) resolve({ socket, outcome: 'served', answer });
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve({ socket, outcome: answer.startsWith('HTTP/1.1 503 ') ? 'refused' : 'closed', answer }));
      socket.write('GET /api/card/count HTTP/1.1\r\nHost: x\r\n\r\n');
    });
  }

  it('keeps at most the configured number of connections open, answers the ones above it 503 with Retry-After and closes them, says so in the log, and serves again once they are gone', async () => {
    const url = new URL(capped.baseUrl);
    // Kept-alive connections of the harness's own health polling may hold some of the places.
    const opened: Array<{ socket: Socket; outcome: 'served' | 'refused' | 'closed'; answer: string }> = [];
    for (let i = 0; i <= CAP; i++) opened.push(await openAndAsk(url));
    const served = opened.filter((c) => c.outcome === 'served').length;
    expect(served).toBeGreaterThanOrEqual(1);
    expect(served).toBeLessThanOrEqual(CAP);
    const refused = opened.filter((c) => c.outcome === 'refused');
    expect(refused.length).toBe(opened.length - served);
    for (const { answer } of refused) {
      expect(answer).toMatch(/\r\nRetry-After: \d+\r\n/i);
      expect(jsonBodyOf(answer)).toEqual({ message: expect.any(String) });
    }
    await eventually('the warning about the cap in the log', async () => capped.logs().includes('connection cap reached'));
    for (const { socket } of opened) socket.destroy();
    await eventually('the capped gateway to answer again', async () => (await fetch(`${capped.baseUrl}/healthz`).catch(() => undefined))?.status === 200);
  });

  it('answers every operation over the cap as the document lists it: 503 with the JSON error and Retry-After', async () => {
    const validator = await ResponseValidator.load(capped.baseUrl);
    const doc = (await (await fetch(`${capped.baseUrl}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const url = new URL(capped.baseUrl);
    const holders: Socket[] = [];
    /** Fills every free place with a served keep-alive connection, until a new one is refused. */
    const fill = async () => {
      for (;;) {
        const opened = await openAndAsk(url);
        if (opened.outcome !== 'served') return;
        holders.push(opened.socket);
      }
    };
    const problems: string[] = [];
    try {
      await fill();
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const method of Object.keys(item).map((m) => m.toUpperCase())) {
          const target = concrete(path);
          let answer = '';
          // The harness's idle keep-alive connections may close and free a place: fill it and ask again.
          for (let attempt = 0; attempt < 3 && !answer.startsWith('HTTP/1.1 503 '); attempt++) {
            if (attempt > 0) await fill();
            answer = await rawExchange(`${method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`, capped.baseUrl);
          }
          const contentType = /\r\ncontent-type: ([^\r]*)/i.exec(answer)?.[1] ?? null;
          let body: unknown;
          try {
            body = jsonBodyOf(answer);
          } catch {
            body = answer.slice(answer.indexOf('\r\n\r\n') + 4, 200);
          }
          problems.push(...validator.problems(method, path, Number(answer.slice(9, 12)), body, contentType));
          if (!answer.startsWith('HTTP/1.1 503 ') || !/\r\nRetry-After: \d+\r\n/i.test(answer) || !validator.checked.has(`${method} ${path} 503`)) {
            problems.push(`${method} ${path}: over the cap got ${answer.slice(0, 12)}, or no Retry-After, or the operation does not list 503`);
          }
        }
      }
    } finally {
      for (const socket of holders) socket.destroy();
    }
    expect(problems).toEqual([]);
    await eventually('the capped gateway to answer again', async () => (await fetch(`${capped.baseUrl}/healthz`).catch(() => undefined))?.status === 200);
  });
});
