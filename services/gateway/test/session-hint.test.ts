// The web app's session cookie is HttpOnly, so it asked GET /api/auth on every page load and a signed-out load logged
// that 401 as an error in the browser's console. The page's answer now says whether the request carried a session
// cookie (a hint the app reads and drops), and GET /api/auth, still 401 for a cookie that is no live session, takes that
// cookie away so the next load carries none.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { createLogger } from '@cards/platform';
import type { GatewayClients } from '../src/clients';
import { SESSION_HINT_COOKIE } from '../src/http/web-app';
import { appWithoutServices, closed, listening } from './app-without-services';
import { testTempDir } from '../../../test/support/cleanup';

const USER_ID = '0b3c6a52-2f1e-4c61-9a8e-3f7a9d8e1c01';
const user = (token: string) => (token === 'live' ? { id: USER_ID, email: 'live@example.com', visibleEmail: false } : null);

function fakeClients(): GatewayClients {
  return {
    identity: {
      resolveSession: async ({ token }: { token: string }) => user(token),
      resolveSessions: async ({ tokens }: { tokens: string[] }) => ({ resolutions: tokens.map((token) => ({ user: user(token) ?? undefined })) }),
    },
  } as unknown as GatewayClients;
}

describe('the session hint of a page load and GET /api/auth with a stale cookie', () => {
  let dir: string;
  let server: Server;
  let base: string;
  beforeAll(async () => {
    dir = testTempDir('web-dist-hint-');
    mkdirSync(join(dir, 'assets'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><div id="app"></div>');
    ({ server, base } = await listening(createServer(appWithoutServices({ clients: fakeClients(), webDistDir: dir, accessLogLevel: 'silent', logger: createLogger('t', 'error') }))));
  });
  afterAll(async () => {
    await closed(server);
    rmSync(dir, { recursive: true, force: true });
  });

  const hintOf = async (path: string, cookie?: string) => {
    const res = await fetch(`${base}${path}`, { headers: cookie ? { cookie } : {} });
    expect(res.status).toBe(200);
    return res.headers.getSetCookie().find((c) => c.startsWith(`${SESSION_HINT_COOKIE}=`));
  };

  it('says on the page whether the request carried a session cookie, readable by the app (not HttpOnly)', async () => {
    const signedOut = await hintOf('/');
    expect(signedOut).toMatch(/^ai-editor-hint=signed-out; Max-Age=120; Path=\/; Expires=[^;]+; SameSite=Lax$/);
    expect(await hintOf('/card/6f1c2b1e-0000-4000-8000-000000000000', 'ai-editor=live')).toMatch(/^ai-editor-hint=signed-in;/);
    // Another cookie whose name starts the same is no session cookie; an empty one neither.
    expect(await hintOf('/', 'ai-editor-hint=signed-in; ai-editor=')).toMatch(/^ai-editor-hint=signed-out;/);
    expect(await hintOf('/', 'other=1; ai-editor=x')).toMatch(/^ai-editor-hint=signed-in;/);
  });

  it('answers GET /api/auth 401 as before, and takes away a session cookie that is no live session', async () => {
    const stale = await fetch(`${base}/api/auth`, { headers: { cookie: 'ai-editor=revoked' } });
    expect(stale.status).toBe(401);
    expect(stale.headers.getSetCookie()).toEqual([expect.stringMatching(/^ai-editor=; Path=\/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax$/)]);
    const none = await fetch(`${base}/api/auth`);
    expect(none.status).toBe(401);
    expect(none.headers.getSetCookie()).toEqual([]);
    const live = await fetch(`${base}/api/auth`, { headers: { cookie: 'ai-editor=live' } });
    expect(live.status).toBe(200);
    expect(live.headers.getSetCookie()).toEqual([]);
  });
});
