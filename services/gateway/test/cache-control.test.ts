// What a cache in front of the gateway (a CDN, nginx proxy_cache, a corporate proxy) may keep. Every /api answer is
// no-store (test/e2e/http.test.ts); the probes, the metrics and the JSON errors outside /api carried no Cache-Control,
// and a 404 or a 200 without one may be stored on heuristic freshness (RFC 9111 §4.2.2), so a cache could answer
// /healthz from a reading minutes old, or keep a 404 after the path started to exist.
import { createServer } from 'node:http';
import { appWithoutServices, closed, listening } from './app-without-services';

describe('Cache-Control outside /api', () => {
  it('is no-store on /livez, /healthz (ready or not) and /metrics', async () => {
    for (const checkPeers of [async () => [], async () => ['cards']]) {
      const { server, base } = await listening(createServer(appWithoutServices({ checkPeers, accessLogLevel: 'silent' })));
      try {
        for (const path of ['/livez', '/healthz', '/metrics']) {
          const res = await fetch(`${base}${path}`);
          await res.arrayBuffer();
          expect({ path, cacheControl: res.headers.get('cache-control') }).toEqual({ path, cacheControl: 'no-store' });
        }
      } finally {
        await closed(server);
      }
    }
  });

  it('is no-store on the JSON errors answered outside /api (unknown path, other method, a path that is /api only once normalized)', async () => {
    const { server, base } = await listening(createServer(appWithoutServices({ accessLogLevel: 'silent' })));
    try {
      for (const [method, path, status] of [
        ['GET', '/no-such-page', 404],
        ['GET', '//api/card/count', 404],
        ['GET', '/card/count', 404],
        ['POST', '/healthz', 405],
      ] as const) {
        const res = await fetch(`${base}${path}`, { method });
        expect({ path, status: res.status, body: await res.json(), cacheControl: res.headers.get('cache-control') }).toEqual({ path, status, body: { message: expect.any(String) }, cacheControl: 'no-store' });
      }
    } finally {
      await closed(server);
    }
  });
});
