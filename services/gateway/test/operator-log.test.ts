import { createServer, request, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { ClientError, Status } from 'nice-grpc';
import { createLogger } from '@cards/platform';
import type { GatewayClients } from '../src/clients';
import { appWithoutServices, closed, listening, until } from './app-without-services';

const USER_ID = '0f3c9c1e-1111-4222-8333-444455556666';
const EMAIL = 'bob.private.person@example.com';

/** Identity resolving the cookie "live" to a user, any other to no session, and not answering a reset request (an outage). */
const clients = {
  identity: {
    resolveSession: async ({ token }: { token: string }) => {
      if (token === 'live') return { id: USER_ID, email: EMAIL };
      throw new ClientError('/identity.v1.IdentityService/ResolveSession', Status.UNAUTHENTICATED, 'No such session');
    },
    requestPasswordReset: async () => {
      throw new ClientError('/identity.v1.IdentityService/RequestPasswordReset', Status.UNAVAILABLE, 'No connection established');
    },
  },
} as unknown as GatewayClients;

type Line = Record<string, unknown> & { level: number; msg: string };

describe("what the gateway's log tells an operator", () => {
  const lines: Line[] = [];
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Line);
        done();
      },
    });
    ({ server, base } = await listening(
      createServer(appWithoutServices({ clients, logger: createLogger('gateway', 'info', sink), accessLogLevel: 'info' })),
    ));
  });
  afterAll(() => closed(server));
  beforeEach(() => (lines.length = 0));

  /** The access line of the request answered with `requestId`, once written. */
  async function accessLine(requestId: string): Promise<Line> {
    await until(() => lines.some((l) => l.msg === 'http request' && l.reqId === requestId));
    return lines.find((l) => l.msg === 'http request' && l.reqId === requestId)!;
  }

  it('logs a peer outage by route pattern, without the path (an e-mail) or a stack: the first, then one a minute', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${base}/api/password/${encodeURIComponent(EMAIL)}`, { headers: { 'x-request-id': `outage-request-${i}` } });
      expect(res.status).toBe(503);
      await accessLine(`outage-request-${i}`);
    }
    expect(JSON.stringify(lines)).not.toMatch(/bob|example\.com/);
    expect(lines.filter((line) => line.level >= 40).map(({ level, msg, route, status, err }) => ({ level, msg, route, status, hasErr: err !== undefined }))).toEqual([
      { level: 40, msg: 'request refused: a service behind the gateway is unavailable', route: '/api/password/:email', status: 503, hasErr: false },
    ]);
    expect(await accessLine('outage-request-2')).toMatchObject({ route: '/api/password/:email', status: 503, reason: 'grpc:UNAVAILABLE' });
  });

  it("names the signed-in caller by user id (not e-mail) and a 400's field, never its value", async () => {
    const res = await fetch(`${base}/api/card`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: 'ai-editor=live', 'x-request-id': 'invalid-card-1' },
      body: JSON.stringify({ card_html: 12345, link: 'https://secret.example/x' }),
    });
    expect(res.status).toBe(400);
    const line = await accessLine('invalid-card-1');
    expect(line).toMatchObject({ userId: USER_ID, route: '/api/card', status: 400, reason: 'invalid:card_html' });
    expect(JSON.stringify(line)).not.toMatch(/12345|secret|bob/);
  });

  it('tells a session cookie that is no live session from no cookie at all, the answers being the same', async () => {
    const expired = await fetch(`${base}/api/auth`, { headers: { cookie: 'ai-editor=expired', 'x-request-id': 'expired-session' } });
    const none = await fetch(`${base}/api/auth`, { headers: { 'x-request-id': 'no-session-1' } });
    expect([expired.status, none.status]).toEqual([401, 401]);
    expect(await expired.json()).toEqual(await none.json());
    expect((await accessLine('expired-session')).reason).toBe('unauthenticated:session-not-live');
    expect((await accessLine('no-session-1')).reason).toBe('unauthenticated');
  });

  it("labels a malformed body with the route it was sent to, and a body cut off by the client as aborted", async () => {
    const malformed = await fetch(`${base}/api/card`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'malformed-1' }, body: '{"card_html": ' });
    expect(malformed.status).toBe(400);
    expect(await accessLine('malformed-1')).toMatchObject({ route: '/api/card', status: 400, reason: 'body:entity.parse.failed' });

    const cut = request(`${base}/api/card`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '1000', 'x-request-id': 'cut-off-1' } });
    cut.on('error', () => undefined);
    cut.write('{"card_html": "<p>');
    await new Promise((resolve) => setTimeout(resolve, 100));
    cut.destroy();
    expect(await accessLine('cut-off-1')).toMatchObject({ route: '/api/card', aborted: true, reason: 'body:aborted' });
  });

  it('keeps a plain x-request-id of 8 to 128 characters and replaces any other', async () => {
    const kept = await fetch(`${base}/livez`, { headers: { 'x-request-id': 'trace-12345' } });
    expect(kept.headers.get('x-request-id')).toBe('trace-12345');
    for (const sent of ['1', 'x'.repeat(129)]) {
      const res = await fetch(`${base}/livez`, { headers: { 'x-request-id': sent } });
      expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    }
  });
});
