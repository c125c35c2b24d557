import { createServer, request, type Server } from 'node:http';
import { ClientError, Status } from 'nice-grpc';
import type { GatewayClients } from '../src/clients';
import { appWithoutServices, closed, listening } from './app-without-services';

// RFC 3986 §6.2.2.2: an escaped unreserved character (letter, digit, - . _ ~) is the character itself, so
// /api/card/%63ount is /api/card/count (it was a 404: the parameter route refused "count" as a fixed segment and the
// literal route did not match the escape). Other escapes stay the parameter's: %2F is no separator, %00 and broken
// escapes are 400 {"message"}, never a 500, and no escape makes a dot segment.

const UUID = '0a1b2c3d-0000-4000-8000-00000000000f';
const cardIdsAsked: string[] = [];
const clients = {
  cards: {
    countCards: async () => ({ totalCount: 7 }),
    getCard: async ({ cardId }: { cardId: string }) => {
      cardIdsAsked.push(cardId);
      throw new ClientError('/cards.Cards/GetCard', Status.NOT_FOUND, 'Card not found');
    },
  },
} as unknown as GatewayClients;

let server: Server;
let base: string;

beforeAll(async () => {
  ({ server, base } = await listening(createServer(appWithoutServices({ clients }))));
});

afterAll(() => closed(server));

/** Sends the path as written (fetch, or a URL string, would resolve %2e%2e before sending). */
function call(method: string, path: string): Promise<{ path: string; status: number; allow: string | null; body: unknown }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(base);
    const req = request({ hostname, port, path, method }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ path, status: res.statusCode!, allow: res.headers.allow ?? null, body: text ? (JSON.parse(text) as unknown) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('percent-encoded unreserved characters in API paths', () => {
  it('routes an escaped letter of a fixed segment to its route, in any case and with a trailing slash', async () => {
    for (const path of ['/api/card/%63ount', '/api/card/%63%6F%75%6e%74', '/api/%63ard/count', '/api/card/%43OUNT', '/api/card/coun%74/', '/api/card/%63ount?x=%zz']) {
      expect(await call('GET', path)).toEqual({ path, status: 200, allow: null, body: { total_count: 7 } });
    }
  });

  it('answers OPTIONS and other methods on an escaped fixed path as on the plain one', async () => {
    expect(await call('OPTIONS', '/api/card/%63ount')).toEqual({ path: '/api/card/%63ount', status: 204, allow: 'GET, HEAD, OPTIONS', body: undefined });
    expect(await call('DELETE', '/api/card/%63ount')).toEqual({ path: '/api/card/%63ount', status: 405, allow: 'GET, HEAD, OPTIONS', body: { message: 'DELETE is not allowed here; allowed: GET, HEAD, OPTIONS' } });
    expect(await call('OPTIONS', '/api/card_collection/%73earch/1')).toMatchObject({ status: 204, allow: 'POST, OPTIONS' });
    expect(await call('OPTIONS', '/api/%6Fpenapi.json')).toMatchObject({ status: 204, allow: 'GET, HEAD, OPTIONS' });
  });

  it('passes an escaped parameter on decoded, as before', async () => {
    cardIdsAsked.length = 0;
    const escaped = UUID.replace('0a1b', '%30%61%31%62').replace('-0000-', '%2D0000%2d');
    expect(await call('GET', `/api/card/${escaped}`)).toEqual({ path: `/api/card/${escaped}`, status: 404, allow: null, body: { message: 'Card not found' } });
    expect(cardIdsAsked).toEqual([UUID]);
  });

  it('answers an escaped "/", NUL, percent sign or a broken escape 400 {"message"}, never decoding twice', async () => {
    const cases: Array<[string, number, string]> = [
      ['/api/card/%2Fcount', 400, 'card_id: must be a UUID'],
      ['/api/card/%63ount%2F', 400, 'card_id: must be a UUID'],
      ['/api/card/%00', 400, 'card_id: must be a UUID'],
      ['/api/card/%2563ount', 400, 'card_id: must be a UUID'],
      ['/api/card/%zz', 400, 'Malformed percent-encoding in the URL'],
      ['/api/card/%E0%A4', 400, 'Malformed percent-encoding in the URL'],
      // %34%31 decoded next to a lone % would make %41: the path is left as sent.
      ['/api/card/%%34%31', 400, 'Malformed percent-encoding in the URL'],
      ['/api/top_users/%', 400, 'Malformed percent-encoding in the URL'],
      ['/api/card%2Fcount', 404, 'No such route'],
    ];
    for (const [path, status, message] of cases) {
      expect(await call('GET', path)).toEqual({ path, status, allow: null, body: { message } });
    }
  });

  // An escaped "/" keeps the segment a card id for every method: GET and HEAD 400, OPTIONS the card route's Allow
  // (not the count route's "GET, HEAD, OPTIONS"). A guard: they already agreed when this was written.
  it('routes HEAD and OPTIONS of a path with an escaped "/" as GET routes it', async () => {
    for (const path of ['/api/card/count%2F', '/api/card/%63ount%2F', '/api/card/count%2f', '/api/card/%2Fcount']) {
      const get = await call('GET', path);
      expect({ path, status: get.status, body: get.body }).toEqual({ path, status: 400, body: { message: 'card_id: must be a UUID' } });
      expect({ ...(await call('HEAD', path)), body: undefined }).toEqual({ path, status: get.status, allow: null, body: undefined });
      expect(await call('OPTIONS', path)).toEqual({ path, status: 204, allow: 'GET, DELETE, HEAD, OPTIONS', body: undefined });
    }
  });

  it('tells a call without the /api prefix where it is whatever its escapes, as the API routes it', async () => {
    for (const path of ['/card/search/1', '/card/%73earch/1', '/card/search/%31']) {
      expect(await call('POST', path)).toEqual({ path, status: 404, allow: null, body: { message: 'No such route: the HTTP interface is served under /api (POST /api/card/search/1)' } });
    }
  });

  it('makes no dot segment and no root from escapes: those paths stay the documented 404 naming the normal path', async () => {
    for (const [path, normal] of [
      ['/api/card/%2e%2e/card/count', 'GET /api/card/count'],
      ['/api/%2E/card/count', 'GET /api/card/count'],
      ['/%61pi/card/count', 'GET /api/card/count'],
    ] as const) {
      const answer = await call('GET', path);
      expect(answer).toMatchObject({ path, status: 404 });
      expect((answer.body as { message: string }).message).toContain(`did you mean ${normal}?`);
    }
  });

  // /api/password/%2e%2e was told "did you mean GET /api?", where no route is.
  it('suggests the normal path only when a route answers it with that method', async () => {
    for (const [method, path] of [
      ['GET', '/api/password/%2e%2e'],
      ['GET', '/api/notifications/%2e%2e/nothing'],
      ['POST', '/api//card/count'],
    ] as const) {
      expect(await call(method, path)).toEqual({
        path,
        status: 404,
        allow: null,
        body: { message: 'No such route: the path is not in normal form (no empty, "." or ".." segments, encoded or back slashes)' },
      });
    }
  });
});
