// Routes that read no body (logging out, deleting a card, a file or a vote, marking every notification read) hold a
// body sent anyway to what every other route takes: a JSON object whose bytes are UTF-8 (its fields ignored). Before,
// "[1,2]" and Latin-1 bytes were 204 there while "{oops" was 400, and every route that reads a body refuses all three.
import { createServer, type Server } from 'node:http';
import { createLogger } from '@cards/platform';
import type { GatewayClients } from '../src/clients';
import { appWithoutServices, closed, listening } from './app-without-services';

const USER_ID = '0b3c6a52-2f1e-4c61-9a8e-3f7a9d8e1c01';
const ID = '6f1c2b1e-0000-4000-8000-000000000001';
const user = (token: string) => ({ id: USER_ID, email: `${token}@example.com`, visibleEmail: false });

function fakeClients(calls: string[]): GatewayClients {
  const record = (name: string) => async () => {
    calls.push(name);
    return {};
  };
  return {
    identity: {
      resolveSession: async ({ token }: { token: string }) => user(token),
      resolveSessions: async ({ tokens }: { tokens: string[] }) => ({ resolutions: tokens.map((token) => ({ user: user(token) })) }),
      logout: record('logout'),
    },
    notifications: { markAllRead: record('markAllRead') },
    cards: { deleteCard: record('deleteCard'), deleteVote: record('deleteVote') },
    files: { deleteFile: record('deleteFile') },
  } as unknown as GatewayClients;
}

const ROUTES: Array<[string, string]> = [
  ['DELETE', '/api/auth'],
  ['PUT', '/api/notifications/all'],
  ['DELETE', `/api/card/${ID}`],
  ['DELETE', `/api/vote/${ID}`],
  ['DELETE', `/api/file/${ID}`],
];

describe('a body sent to a route that reads none', () => {
  const calls: string[] = [];
  let server: Server;
  let base: string;
  beforeAll(async () => {
    ({ server, base } = await listening(createServer(appWithoutServices({ clients: fakeClients(calls), accessLogLevel: 'silent', logger: createLogger('t', 'error') }))));
  });
  afterAll(() => closed(server));

  const send = async (method: string, path: string, body?: Buffer | string) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { cookie: 'ai-editor=token', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body,
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };

  it('is refused 400, as on every other route, when it is not a JSON object or its bytes are not UTF-8', async () => {
    const latin1 = Buffer.concat([Buffer.from('{"note":"Caf'), Buffer.from([0xe9]), Buffer.from('"}')]);
    for (const [method, path] of ROUTES) {
      expect([path, await send(method, path, '[1,2]')]).toEqual([path, { status: 400, body: { message: 'The request body must be a JSON object' } }]);
      expect([path, await send(method, path, latin1)]).toEqual([path, { status: 400, body: { message: 'The request body is not valid UTF-8: an incomplete sequence (0xE9, then 0x22) at byte 12; JSON must be sent encoded as UTF-8' } }]);
      expect([path, await send(method, path, '{oops')]).toEqual([path, { status: 400, body: { message: 'Malformed JSON body' } }]);
    }
    expect(calls).toEqual([]);
  });

  it('is ignored when it is a JSON object, and no body is fine', async () => {
    calls.length = 0;
    for (const [method, path] of ROUTES) {
      expect([path, (await send(method, path)).status]).toEqual([path, 204]);
      expect([path, (await send(method, path, '{}')).status]).toEqual([path, 204]);
      expect([path, (await send(method, path, '{"unknown": [1, "\\ud800"]}')).status]).toEqual([path, 204]);
    }
    expect(calls).toEqual(['logout', 'markAllRead', 'deleteCard', 'deleteVote', 'deleteFile'].flatMap((call) => [call, call, call]));
  });

  it('is no body when it is JSON null or only whitespace (the strict JSON parser refused both as malformed)', async () => {
    calls.length = 0;
    const bodies = ['null', ' null\n', '  ', '\r\n\t'];
    for (const [method, path] of ROUTES) {
      for (const body of bodies) expect([path, JSON.stringify(body), await send(method, path, body)]).toEqual([path, JSON.stringify(body), { status: 204 }]);
    }
    expect(calls).toEqual(['logout', 'markAllRead', 'deleteCard', 'deleteVote', 'deleteFile'].flatMap((call) => bodies.map(() => call)));
    // A route that reads a body answers them as it answers an empty one: naming what is missing, not "Malformed JSON body".
    const empty = await send('POST', '/api/card', '');
    expect(empty.status).toBe(400);
    for (const body of bodies) expect([JSON.stringify(body), await send('POST', '/api/card', body)]).toEqual([JSON.stringify(body), empty]);
  });
});
