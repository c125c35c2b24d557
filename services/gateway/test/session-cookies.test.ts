// Two `ai-editor` cookies in one request: a browser sends both when one was set for another path or for a parent
// domain (which a sibling subdomain may set), the more specific first.
import { createServer, type Server } from 'node:http';
import { ClientError, Status } from 'nice-grpc';
import type { GatewayClients } from '../src/clients';
import { sessionTokensOf } from '../src/http/session';
import { appWithoutServices, closed, listening } from './app-without-services';

const ALICE = { id: '6f1c2b1e-0000-4000-8000-00000000a11c', email: 'alice@example.com', username: 'alice', website: '', visibleEmail: true, createdAt: undefined };
/** Identity knows one live session, `alice-session`; every other token is none. */
const live = (token: string) => (token === 'alice-session' ? ALICE : null);
const identity = {
  resolveSession: async ({ token }: { token: string }) => {
    const user = live(token);
    if (!user) throw new ClientError('/identity.IdentityService/ResolveSession', Status.UNAUTHENTICATED, 'not a session');
    return user;
  },
  resolveSessions: async ({ tokens }: { tokens: string[] }) => ({ resolutions: tokens.map((token) => ({ user: live(token) ?? undefined })) }),
};

describe('a request with two ai-editor cookies', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => ({ server, base } = await listening(createServer(appWithoutServices({ clients: { identity } as unknown as GatewayClients })))));
  afterAll(() => closed(server));

  const whoAmI = (cookie: string) => fetch(`${base}/api/auth`, { headers: { cookie } });

  it('is signed in by the live one wherever it comes, and keeps its cookie', async () => {
    for (const cookie of ['ai-editor=tossed-by-a-sibling; ai-editor=alice-session', 'ai-editor=alice-session; ai-editor=tossed-by-a-sibling', 'ai-editor=""; other=1; ai-editor="alice-session"']) {
      const res = await whoAmI(cookie);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { email: string }).email).toBe('alice@example.com');
      expect(res.headers.get('set-cookie')).toBeNull();
    }
  });

  it('is anonymous when neither is a live session, and the cookie is cleared as before', async () => {
    const res = await whoAmI('ai-editor=stale; ai-editor=also-stale');
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ message: 'You must be logged in' });
    expect(res.headers.get('set-cookie')).toMatch(/^ai-editor=;/);
  });

  it('reads the values as cookie-parser does, each once, at most four', () => {
    expect(sessionTokensOf('a=1; ai-editor="q%20v"; ai-editor=q%20v; ai-editor=; ai-editorx=no; ai-editor=%zz')).toEqual(['q v', '%zz']);
    expect(sessionTokensOf(Array.from({ length: 9 }, (_, i) => `ai-editor=t${i}`).join('; '))).toEqual(['t0', 't1', 't2', 't3']);
    expect(sessionTokensOf(undefined)).toEqual([]);
  });
});
