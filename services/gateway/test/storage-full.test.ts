import { randomUUID } from 'node:crypto';
import { STORAGE_FULL_MESSAGE } from '@cards/platform';
import { STORAGE_FULL_RETRY_AFTER_SECONDS } from '../src/http/error-handler';
import { LOGOUT_NOT_REVOKED_MESSAGE } from '../src/routes/identity-routes';
import { describeBehindGateway, sqliteFullError, stubPeersForSuite } from './fake-peer';

const peers = stubPeersForSuite({
  identity: {
    async resolveSession(req) {
      return { id: req.token, email: `${req.token}@example.com`, visibleEmail: false };
    },
    async logout() {
      throw sqliteFullError();
    },
  },
  cards: {
    async createCard() {
      throw sqliteFullError();
    },
  },
  files: {
    async uploadFile(requests) {
      for await (const _ of requests);
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    },
  },
});

describeBehindGateway('a service whose storage is full, behind the gateway', () => peers.address, (gateway) => {
  const cookie = `ai-editor=${randomUUID()}`;

  beforeEach(() => (gateway.logged.length = 0));
  const logLines = () => (gateway.logged.map((line) => JSON.parse(line)) as { level: number; msg: string; err?: unknown; status?: number }[]).filter((line) => line.level >= 40).map((line) => ({ level: line.level, msg: line.msg, hasErr: line.err !== undefined, status: line.status }));

  it('a write is 503 "Storage is full" with Retry-After (clients back off), not 500 "Internal error"; a warning without a stack', async () => {
    const res = await fetch(`${gateway.base}/api/card`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ card_html: '<p>a card</p>', link: 'https://example.com/a', private: false }) });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 503, body: { message: STORAGE_FULL_MESSAGE } });
    expect(res.headers.get('retry-after')).toBe(String(STORAGE_FULL_RETRY_AFTER_SECONDS));
    expect(logLines()).toEqual([{ level: 40, msg: "request refused: a service's storage is full", hasErr: false, status: 503 }]);
  });

  it('an upload the files service cannot store is 503 "Storage is full" with the same Retry-After, not its busy answer', async () => {
    const body = { base64_docx_file: Buffer.from('PK a document').toString('base64url'), file_name: 'a.docx', file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', private: false };
    const res = await fetch(`${gateway.base}/api/file`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify(body) });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 503, body: { message: STORAGE_FULL_MESSAGE } });
    expect(res.headers.get('retry-after')).toBe(String(STORAGE_FULL_RETRY_AFTER_SECONDS));
    // Counted with the other refusals of a service unavailable (one warning a minute), not a "server busy" line each.
    expect(logLines().filter((line) => line.level >= 50 || line.msg === 'request refused: server busy')).toEqual([]);
  });

  it('a logout identity cannot record is 503 saying so, and the cookie is cleared all the same (signed out in this browser)', async () => {
    const res = await fetch(`${gateway.base}/api/auth`, { method: 'DELETE', headers: { cookie } });
    expect({ status: res.status, body: await res.json() }).toEqual({ status: 503, body: { message: LOGOUT_NOT_REVOKED_MESSAGE } });
    expect(res.headers.get('set-cookie')).toMatch(/^ai-editor=;.*Expires=Thu, 01 Jan 1970/);
    // Nothing to try again: the browser holds no session cookie any more.
    expect(res.headers.get('retry-after')).toBeNull();
    // Logged as what it is, identity's full store (once a minute with the writes it refuses), not as the gateway's overload.
    expect(logLines().filter((line) => line.msg !== "request refused: a service's storage is full")).toEqual([]);
    expect(gateway.logged.map((line) => JSON.parse(line) as { msg: string }).some((line) => line.msg === 'request refused: server busy')).toBe(false);
  });
});
