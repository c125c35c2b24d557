import { createServer, type Server } from 'node:http';
import { appWithoutServices, listening } from './app-without-services';

// A fixed path segment (count, update, search, bookmark, ...) is never taken for a neighbouring route's parameter:
// /card/:card_id would also match /card/count, /card_collection/:collection_id/:page /card_collection/search/1
// (contract audit: their Allow listed the parameter route's methods, which answered "card_id: must be a UUID").

let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer(appWithoutServices());
  await listening(server);
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(() => server.close());

async function call(method: string, path: string) {
  const res = await fetch(`${base}${path}`, { method, ...(method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? {} : { headers: { 'content-type': 'application/json' }, body: '{}' }) });
  const text = await res.text();
  return { method, path, status: res.status, allow: res.headers.get('allow'), message: text ? (JSON.parse(text) as { message?: string }).message : undefined };
}

describe('fixed path segments next to parameter routes', () => {
  it('answers OPTIONS on a fixed path with exactly the methods it serves', async () => {
    const cases = [
      ['/api/card/count', 'GET, HEAD, OPTIONS'],
      ['/api/card/update', 'PUT, OPTIONS'],
      ['/api/card_collection/bookmark', 'POST, OPTIONS'],
      ['/api/card/search/1', 'POST, OPTIONS'],
      ['/api/card_collection/search/1', 'POST, OPTIONS'],
      ['/api/card_collection/fulltextsearch/1', 'POST, OPTIONS'],
      ['/api/user/collections/00000000-0000-4000-8000-000000000000', 'GET, HEAD, OPTIONS'],
      // The parameter routes still answer their own paths.
      ['/api/card/00000000-0000-4000-8000-000000000000', 'GET, DELETE, HEAD, OPTIONS'],
      ['/api/card_collection/00000000-0000-4000-8000-000000000000', 'POST, DELETE, OPTIONS'],
      ['/api/card_collection/00000000-0000-4000-8000-000000000000/1', 'GET, HEAD, OPTIONS'],
    ] as const;
    for (const [path, allow] of cases) {
      expect(await call('OPTIONS', path)).toEqual({ method: 'OPTIONS', path, status: 204, allow, message: undefined });
    }
  });

  it('answers another method on a fixed path 405 with its own Allow, not the parameter route\'s 401/400', async () => {
    const cases = [
      ['DELETE', '/api/card/count', 'GET, HEAD, OPTIONS'],
      ['POST', '/api/card/count', 'GET, HEAD, OPTIONS'],
      ['GET', '/api/card/update', 'PUT, OPTIONS'],
      ['DELETE', '/api/card/update', 'PUT, OPTIONS'],
      ['DELETE', '/api/card_collection/bookmark', 'POST, OPTIONS'],
      ['GET', '/api/card_collection/search/1', 'POST, OPTIONS'],
      ['GET', '/api/card_collection/fulltextsearch/1', 'POST, OPTIONS'],
      ['GET', '/api/card/search/1', 'POST, OPTIONS'],
    ] as const;
    for (const [method, path, allow] of cases) {
      expect(await call(method, path)).toEqual({ method, path, status: 405, allow, message: `${method} is not allowed here; allowed: ${allow}` });
    }
  });

  it('answers 404 where a fixed segment would only have been a parameter (no route has that path)', async () => {
    for (const [method, path] of [
      ['POST', '/api/card/search'],
      ['GET', '/api/card/search'],
      ['DELETE', '/api/card/fulltextsearch'],
      ['GET', '/api/card_collection/bookmark/2'],
      ['GET', '/api/card_collection/search/x/1'],
    ] as const) {
      expect(await call(method, path)).toEqual({ method, path, status: 404, allow: null, message: 'No such route' });
    }
  });

  it('takes a fixed segment in any letter case as fixed, as the router matches routes', async () => {
    expect(await call('DELETE', '/api/card/COUNT')).toEqual({ method: 'DELETE', path: '/api/card/COUNT', status: 405, allow: 'GET, HEAD, OPTIONS', message: 'DELETE is not allowed here; allowed: GET, HEAD, OPTIONS' });
  });
});
