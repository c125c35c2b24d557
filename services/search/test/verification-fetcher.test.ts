import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { buildConnector } from 'undici';
import { UndiciPageFetcher } from '../src/verification/adapters/undici/undici-page-fetcher';
import { DnsHostResolver } from '../src/verification/adapters/dns/dns-host-resolver';
import { AddressGuard } from '../src/verification/domain/address-guard';
import { hostPortKey } from '../src/verification/domain/address-policy';
import type { HostResolver } from '../src/verification/domain/ports';

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

const PAGE = '<html><head><title>T</title><style>.x{color:red}</style></head><body><p>Hello &amp; welcome</p></body></html>';

/** The page server the tests allow (VERIFY_ALLOW_HOSTS) and a loopback "victim" that must never be reached. */
let pages: Server;
let pagesPort: number;
let victim: Server;
let victimPort: number;
const victimRequests: string[] = [];

beforeAll(async () => {
  pages = createServer((req: IncomingMessage, res: ServerResponse) => {
    const url = req.url ?? '/';
    if (url === '/page') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    if (url === '/latin1') return res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' }).end(Buffer.from('<p>caf\xe9</p>', 'latin1'));
    if (url === '/gzip') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' }).end(gzipSync(PAGE));
    if (url === '/br') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'br' }).end(brotliCompressSync(PAGE));
    if (url === '/deflate-gzip') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'deflate, gzip' }).end(gzipSync(deflateSync(PAGE)));
    if (url === '/gzip-bomb') return res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync('<p>' + 'a'.repeat(1_000_000) + '</p>'));
    if (url === '/bad-gzip') return res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end('<p>not gzip at all</p>');
    if (url === '/zstd') return res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'zstd' }).end('whatever');
    // Content negotiation as some sites do it: XHTML to any client that says it takes it, HTML otherwise.
    if (url === '/negotiated') {
      const xhtml = /application\/xhtml\+xml/.test(req.headers.accept ?? '');
      return res.writeHead(200, { 'content-type': xhtml ? 'application/xhtml+xml; charset=utf-8' : 'text/html; charset=utf-8', vary: 'accept' }).end(PAGE);
    }
    if (url === '/json') return res.writeHead(200, { 'content-type': 'application/json' }).end('{"a":1}');
    if (url === '/big') return res.writeHead(200, { 'content-type': 'text/html' }).end('<p>' + 'a'.repeat(2048) + '</p>');
    if (url === '/big-chunked') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.write('<p>' + 'a'.repeat(1500));
      return res.end('b'.repeat(1500) + '</p>');
    }
    if (url === '/unavailable') return res.writeHead(503, { 'content-type': 'text/html' }).end('busy');
    if (url === '/missing') return res.writeHead(404, { 'content-type': 'text/html' }).end('no');
    if (url === '/hang') return; // never answers
    if (url === '/trickle') {
      // One byte every 50 ms for 4 s: undici's bodyTimeout (gaps between chunks) never fires.
      res.writeHead(200, { 'content-type': 'text/html' });
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed || ++sent > 80) {
          clearInterval(timer);
          if (!res.destroyed) res.end('</p>');
          return;
        }
        res.write('a');
      }, 50);
      res.on('close', () => clearInterval(timer));
      return;
    }
    if (url === '/to-page') return res.writeHead(302, { location: '/page' }).end();
    if (url === '/to-victim') return res.writeHead(302, { location: `http://127.0.0.1:${victimPort}/secret` }).end();
    if (url === '/to-victim-by-name') return res.writeHead(301, { location: `http://localhost:${victimPort}/secret` }).end();
    if (url === '/to-file') return res.writeHead(302, { location: 'file:///etc/passwd' }).end();
    if (url === '/loop') return res.writeHead(302, { location: '/loop' }).end();
    res.writeHead(500).end();
  });
  pagesPort = await listen(pages, '127.0.0.1');
  victim = createServer((req, res) => {
    victimRequests.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html' }).end('<p>secret</p>');
  });
  victimPort = await listen(victim, '::'); // dual stack: 127.0.0.1 and ::1 both reach it
});
afterAll(async () => {
  pages.closeAllConnections();
  await new Promise((r) => pages.close(r));
  await new Promise((r) => victim.close(r));
});

function fetcherWith(options: { resolver?: HostResolver; timeoutMs?: number; maxBytes?: number; baseConnector?: buildConnector.connector; allowPrivate?: boolean } = {}) {
  const guard = new AddressGuard(options.resolver ?? new DnsHostResolver(), {
    allowPrivate: options.allowPrivate ?? false,
    allowedHosts: new Set([hostPortKey('127.0.0.1', pagesPort)]),
  });
  return new UndiciPageFetcher({ guard, timeoutMs: options.timeoutMs ?? 5000, maxBytes: options.maxBytes ?? 5 * 1024 * 1024, baseConnector: options.baseConnector });
}

describe('UndiciPageFetcher', () => {
  const fetcher = () => fetcherWith();

  it('fetches an HTML page from an allowed host and follows a same-host redirect', async () => {
    const f = fetcher();
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/page`)).resolves.toEqual({ ok: true, html: PAGE, finalUrl: `http://127.0.0.1:${pagesPort}/page` });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/to-page`)).resolves.toMatchObject({ ok: true, html: PAGE });
    await f.close();
  });

  it('decodes the declared charset', async () => {
    const f = fetcher();
    const result = await f.fetchPage(`http://127.0.0.1:${pagesPort}/latin1`);
    expect(result.ok && result.html).toBe('<p>café</p>');
    await f.close();
  });

  it('undoes the Content-Encoding a server applied unasked (gzip, br, a chain), as a browser does', async () => {
    const f = fetcher();
    for (const path of ['/gzip', '/br', '/deflate-gzip']) {
      await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}${path}`)).resolves.toMatchObject({ ok: true, html: PAGE });
    }
    await f.close();
  });

  it('caps the decompressed size and refuses corrupt or unknown encodings, as final failures', async () => {
    const f = fetcherWith({ maxBytes: 100_000 });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/gzip-bomb`)).resolves.toEqual({ ok: false, transient: false, failure: 'page larger than 100000 bytes' });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/bad-gzip`)).resolves.toMatchObject({ ok: false, transient: false });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/zstd`)).resolves.toEqual({ ok: false, transient: false, failure: 'unsupported content-encoding zstd' });
    await f.close();
  });

  it('refuses loopback literals, [::1], a name resolving to loopback and a redirect to loopback; the victim receives nothing', async () => {
    const f = fetcher();
    for (const link of [
      `http://127.0.0.1:${victimPort}/secret`,
      `http://[::1]:${victimPort}/secret`,
      `http://localhost:${victimPort}/secret`,
      `http://[::ffff:127.0.0.1]:${victimPort}/secret`,
      `http://2130706433:${victimPort}/secret`,
      `http://127.0.0.1:${pagesPort}/to-victim`,
      `http://127.0.0.1:${pagesPort}/to-victim-by-name`,
    ]) {
      const result = await f.fetchPage(link);
      expect(result).toMatchObject({ ok: false, transient: false, failure: expect.stringMatching(/^refused/) });
    }
    expect(victimRequests).toEqual([]);
    await f.close();
  });

  it('never opens a connection to a host resolving to a private address (injected resolver, spy connector)', async () => {
    const connects: string[] = [];
    const spy: buildConnector.connector = (opts, callback) => {
      connects.push(opts.hostname);
      callback(new Error('the test connector must not be reached'), null);
    };
    const resolver: HostResolver = {
      async resolve(host) {
        return ({ 'intranet.example': ['10.0.0.5'], 'metadata.example': ['169.254.169.254'], 'ula.example': ['fd00::1'], 'mapped.example': ['::ffff:172.16.0.1'] } as Record<string, string[]>)[host] ?? [];
      },
    };
    const f = fetcherWith({ resolver, baseConnector: spy });
    for (const host of ['intranet.example', 'metadata.example', 'ula.example', 'mapped.example']) {
      await expect(f.fetchPage(`https://${host}/`)).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/^refused/) });
    }
    expect(connects).toEqual([]);
    await f.close();
  });

  it('refuses non-http schemes, also after a redirect, and endless redirects', async () => {
    const f = fetcher();
    await expect(f.fetchPage('file:///etc/passwd')).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/scheme/) });
    await expect(f.fetchPage('ftp://example.org/x')).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/scheme/) });
    await expect(f.fetchPage('not a url')).resolves.toMatchObject({ ok: false, transient: false });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/to-file`)).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/scheme/) });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/loop`)).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/redirects/) });
    await f.close();
  });

  it('asks for text/html only, so a server choosing by Accept sends the HTML page it scores, not XHTML it refuses', async () => {
    const f = fetcher();
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/negotiated`)).resolves.toMatchObject({ ok: true, html: PAGE });
    await f.close();
  });

  it('accepts text/html only and caps the size, declared or streamed', async () => {
    const f = fetcherWith({ maxBytes: 1024 });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/json`)).resolves.toMatchObject({ ok: false, transient: false, failure: expect.stringMatching(/not an HTML page/) });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/big`)).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/larger than 1024/) });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/big-chunked`)).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/larger than 1024/) });
    await f.close();
  });

  it('classifies failures: 5xx and timeouts are transient, 404 and refused connections final or transient as they deserve', async () => {
    const f = fetcherWith({ timeoutMs: 300 });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/unavailable`)).resolves.toMatchObject({ ok: false, transient: true, failure: 'the page answered HTTP 503' });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/missing`)).resolves.toMatchObject({ ok: false, transient: false, failure: 'the page answered HTTP 404' });
    await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/hang`)).resolves.toMatchObject({ ok: false, transient: true, failure: 'timed out' });
    await f.close();
    // Nothing listens on the closed port: a refused connection may be a restart, so it is retried.
    const closed = createServer();
    const closedPort = await listen(closed, '127.0.0.1');
    await new Promise((r) => closed.close(r));
    const g = fetcherWith({ allowPrivate: true });
    await expect(g.fetchPage(`http://127.0.0.1:${closedPort}/`)).resolves.toMatchObject({ ok: false, transient: true, failure: 'fetch failed: ECONNREFUSED' });
    await g.close();
  });

  it('times a trickled body out at the budget even when the garbage collector runs during the read', async () => {
    // On Node 20 an AbortSignal.any() over AbortSignal.timeout() could lose its timer to GC and read the page to its end.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const collecting = setInterval(gc, 20);
    const f = fetcherWith({ timeoutMs: 500 });
    try {
      // A lost timer would have read the page to its end ({ ok: true, ... }): the outcome is the proof, not the clock (a
      // bound of 3.5 s failed at 5.9 s on a machine loaded ~20, where the trickle itself slows down).
      await expect(f.fetchPage(`http://127.0.0.1:${pagesPort}/trickle`)).resolves.toEqual({ ok: false, transient: true, failure: 'timed out' });
    } finally {
      clearInterval(collecting);
      await f.close();
    }
  });
});

// Self-signed for "pages.test" only (valid until 2126), so certificate checks can be exercised offline.
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgWvJ9+L/7jzjtLAPF
TXQ1HGJHZurGyC5Crv8u8OgFjBShRANCAASeGsKCbZeZSPZI3xasJL8IQq9luN4U
6tNSx9d2I11nIvEpYYpup2Vse19PuK/aL+kf+nFjOHkGxIq3h5bEm9m2
-----END PRIVATE KEY-----`;
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBlzCCAT2gAwIBAgITa3OnNMZs7lPZi9tfA7VF8E6bfDAKBggqhkjOPQQDAjAV
MRMwEQYDVQQDDApwYWdlcy50ZXN0MCAXDTI2MTEyMjExNTM1MVoYDzIxMjYxMDI5
MTE1MzUxWjAVMRMwEQYDVQQDDApwYWdlcy50ZXN0MFkwEwYHKoZIzj0CAQYIKoZI
zj0DAQcDQgAEnhrCgm2XmUj2SN8WrCS/CEKvZbjeFOrTUsfXdiNdZyLxKWGKbqdl
bHtfT7iv2i/pH/pxYzh5BsSKt4eWxJvZtqNqMGgwHQYDVR0OBBYEFEinzwmunIkK
zqJ+GXFsqAnr/D9NMB8GA1UdIwQYMBaAFEinzwmunIkKzqJ+GXFsqAnr/D9NMA8G
A1UdEwEB/wQFMAMBAf8wFQYDVR0RBA4wDIIKcGFnZXMudGVzdDAKBggqhkjOPQQD
AgNIADBFAiEAqvyYfjUv0S3NavX4nY9Z57RY4WfNLcJz1nOV5CP9aYkCID4yDaDK
FXeqpKcEdD+EXSS37oar29gO1W+Cu+ovfnhC
-----END CERTIFICATE-----`;

describe('UndiciPageFetcher over TLS', () => {
  it('connects to the checked address but verifies the certificate against the host name in the link', async () => {
    const server = createTlsServer({ key: TLS_KEY, cert: TLS_CERT }, (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>secure page</p>'));
    const port = await listen(server as unknown as Server, '127.0.0.1');
    const resolver: HostResolver = { resolve: async (host) => (host === 'pages.test' || host === 'other.test' ? ['127.0.0.1'] : []) };
    const fetcherFor = () =>
      new UndiciPageFetcher({
        guard: new AddressGuard(resolver, { allowPrivate: false, allowedHosts: new Set([hostPortKey('pages.test', port), hostPortKey('other.test', port), hostPortKey('127.0.0.1', port)]) }),
        timeoutMs: 5000,
        maxBytes: 1024 * 1024,
        baseConnector: buildConnector({ ca: TLS_CERT }),
      });
    const f = fetcherFor();
    await expect(f.fetchPage(`https://pages.test:${port}/`)).resolves.toMatchObject({ ok: true, html: '<p>secure page</p>' });
    // The same server reached under a name (or address) its certificate does not carry is refused.
    await expect(f.fetchPage(`https://other.test:${port}/`)).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/ERR_TLS_CERT_ALTNAME_INVALID/) });
    await expect(f.fetchPage(`https://127.0.0.1:${port}/`)).resolves.toMatchObject({ ok: false, failure: expect.stringMatching(/ERR_TLS_CERT_ALTNAME_INVALID/) });
    await f.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
});
