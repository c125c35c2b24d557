// DELETE /api/auth when identity cannot be asked about the cookie (it is down, or its storage full at the session lookup):
// the session middleware lets the logout through, and the route clears the cookie with its documented 503; every
// other request with a cookie still fails closed.
import { randomUUID } from 'node:crypto';
import { createServer as createNetServer } from 'node:net';
import { ServerError, Status } from 'nice-grpc';
import { LOGOUT_NOT_REVOKED_MESSAGE } from '../src/routes/identity-routes';
import { describeBehindGateway, gatewayInFrontOf, sqliteFullError, stubPeersForSuite } from './fake-peer';

const CLEARED = /^ai-editor=;.*Expires=Thu, 01 Jan 1970/;

const revoked: string[] = [];
const created: unknown[] = [];

const peers = stubPeersForSuite({
  identity: {
    // No session can be looked up: its store is full (lookup-full-...) or unavailable (anything else).
    async resolveSession(req) {
      if (req.token.startsWith('lookup-full-')) throw sqliteFullError();
      throw new ServerError(Status.UNAVAILABLE, 'identity store down');
    },
    async resolveSessions() {
      throw new ServerError(Status.UNAVAILABLE, 'identity store down');
    },
    // ...-logout-ok-... is revoked; any other logout cannot be recorded.
    async logout(req) {
      if (!req.token.includes('-logout-ok-')) throw new ServerError(Status.UNAVAILABLE, 'identity store down');
      revoked.push(req.token);
      return {};
    },
  },
  cards: {
    async createCard(req) {
      created.push(req);
      throw new Error('not reached');
    },
  },
});

describeBehindGateway('identity cannot look up the session, behind the gateway', () => peers.address, (gateway) => {
  it.each([
    ['unavailable', 'lookup-down'],
    ['its storage full', 'lookup-full'],
  ])('identity %s at the lookup and at the logout: DELETE /api/auth is the documented 503 and clears the cookie', async (_why, prefix) => {
    const res = await fetch(`${gateway.base}/api/auth`, { method: 'DELETE', headers: { cookie: `ai-editor=${prefix}-${randomUUID()}` } });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 503, body: { message: LOGOUT_NOT_REVOKED_MESSAGE } });
    expect(res.headers.get('set-cookie')).toMatch(CLEARED);
    expect(res.headers.get('retry-after')).toBeNull();
  });

  it('identity down at the lookup but recording the logout: the cookie is revoked as it is, 204 and cleared', async () => {
    const token = `lookup-down-logout-ok-${randomUUID()}`;
    const res = await fetch(`${gateway.base}/api/auth/`, { method: 'DELETE', headers: { cookie: `ai-editor=${token}` } });
    expect(res.status).toBe(204);
    expect(res.headers.get('set-cookie')).toMatch(CLEARED);
    expect(revoked).toContain(token);
  });

  it('every other request with a cookie still fails closed: 503, the cookie kept, the route not run', async () => {
    const cookie = `ai-editor=lookup-down-${randomUUID()}`;
    const current = await fetch(`${gateway.base}/api/auth`, { headers: { cookie } });
    expect({ status: current.status, body: await current.json() }).toEqual({ status: 503, body: { message: 'A backing service is unavailable, try again' } });
    expect(current.headers.get('set-cookie')).toBeNull();
    const create = await fetch(`${gateway.base}/api/card`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ card_html: '<p>a card</p>', link: 'https://example.com/a', private: false }) });
    expect(create.status).toBe(503);
    expect(create.headers.get('set-cookie')).toBeNull();
    expect(created).toEqual([]);
  });

  it('a logout without a cookie is unchanged: 204, identity not asked', async () => {
    const res = await fetch(`${gateway.base}/api/auth`, { method: 'DELETE' });
    expect(res.status).toBe(204);
  });
});

it('identity stopped (nothing listening at its address): DELETE /api/auth with a cookie is 503 and clears the cookie', async () => {
  // A port that was free a moment ago: connections to it are refused, as to a stopped identity.
  const probe = createNetServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const gateway = await gatewayInFrontOf(`127.0.0.1:${port}`);
  try {
    const res = await fetch(`${gateway.base}/api/auth`, { method: 'DELETE', headers: { cookie: `ai-editor=${randomUUID()}` } });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 503, body: { message: LOGOUT_NOT_REVOKED_MESSAGE } });
    expect(res.headers.get('set-cookie')).toMatch(CLEARED);
  } finally {
    await gateway.close();
  }
});
