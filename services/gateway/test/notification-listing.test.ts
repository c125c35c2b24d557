// GET /api/notifications answers the whole list (the interface defines no paging), read from the notifications
// service a page at a time. A user with thousands of cards has thousands of notifications (every linked card makes
// one), and the listing must not hold the event loop while it reads and writes them: other requests are answered
// between its pages.
import { createServer, type Server } from 'node:http';
import { ClientError, Status } from 'nice-grpc';
import { notifications } from '@cards/proto';
import type { GatewayClients } from '../src/clients';
import { presentNotification } from '../src/routes/notification-routes';
import { appWithoutServices, closed, listening } from './app-without-services';

const USER_ID = '0b3c6a52-2f1e-4c61-9a8e-3f7a9d8e1c01';
const user = (token: string) => ({ id: USER_ID, email: `${token}@example.com`, visibleEmail: false });

function notification(i: number): notifications.Notification {
  const at = new Date(Date.UTC(2026, 0, 1) - i * 1000);
  const id = `6f1c2b1e-0000-4000-8000-${String(i).padStart(12, '0')}`;
  return i % 10 === 0
    ? { id, userId: USER_ID, type: notifications.NotificationType.NOTIFICATION_TYPE_COLLECTION_CREATED, collectionId: id, userRead: false, createdAt: at, updatedAt: at }
    : { id, userId: USER_ID, type: notifications.NotificationType.NOTIFICATION_TYPE_VERIFICATION, cardId: id, verificationId: `v${i}`, similarityScore: i % 101, userRead: i % 3 === 0, createdAt: at, updatedAt: at };
}

/**
 * Identity knows every cookie; the notifications service holds `total` notifications and answers pages of `pageSize`
 * at once (already resolved: the gateway's own work is all there is between pages); `seen` records each page read and
 * each card count asked, in order; `onFirstPage` runs when the listing reads its first page.
 */
function fakeClients(total: number, pageSize: number, seen: string[], onFirstPage: () => void = () => undefined, version: () => Promise<string> = async () => ''): GatewayClients {
  const all = Array.from({ length: total }, (_, i) => notification(i));
  return {
    identity: {
      resolveSession: async ({ token }: { token: string }) => user(token),
      resolveSessions: async ({ tokens }: { tokens: string[] }) => ({ resolutions: tokens.map((token) => ({ user: user(token) })) }),
    },
    notifications: {
      listNotifications: ({ pageToken }: { pageToken: string }) => {
        const start = pageToken === '' ? 0 : Number(pageToken);
        seen.push(`page ${start / pageSize}`);
        if (start === 0) onFirstPage();
        const end = Math.min(start + pageSize, total);
        return Promise.resolve({ notifications: all.slice(start, end), nextPageToken: end < total ? String(end) : '' });
      },
      getListVersion: async () => {
        seen.push('version');
        return { version: await version() };
      },
    },
    cards: {
      countCards: () => {
        seen.push('count');
        return Promise.resolve({ totalCount: 7 });
      },
    },
  } as unknown as GatewayClients;
}

async function serve(clients: GatewayClients): Promise<{ server: Server; base: string }> {
  const server = createServer(appWithoutServices({ clients, accessLogLevel: 'silent' }));
  return listening(server);
}

const close = closed;

const list = (base: string, headers: Record<string, string> = {}) => fetch(`${base}/api/notifications`, { headers: { cookie: 'ai-editor=token-a', ...headers } });

describe('GET /api/notifications', () => {
  let running: { server: Server; base: string } | undefined;
  afterEach(async () => {
    if (running) await close(running.server);
    running = undefined;
  });

  it('answers every notification of every page, newest first, as the interface names them', async () => {
    const seen: string[] = [];
    running = await serve(fakeClients(2500, 1000, seen));
    const res = await list(running.base);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Array<Record<string, unknown>>;
    expect(body).toHaveLength(2500);
    expect(body).toEqual(Array.from({ length: 2500 }, (_, i) => JSON.parse(JSON.stringify(presentNotification(notification(i))))));
    expect(body[0]).toEqual({ type: 'collection_created', id: notification(0).id, user_uuid: USER_ID, collection_uuid: notification(0).id, user_read: false, created_at: '2026-01-01T00:00:00.000', updated_at: '2026-01-01T00:00:00.000' });
    expect(body[1]).toEqual({
      type: 'verification',
      id: notification(1).id,
      user_uuid: USER_ID,
      card_uuid: notification(1).id,
      verification_uuid: 'v1',
      similarity_score: 1,
      user_read: false,
      created_at: '2025-12-31T23:59:59.000',
      updated_at: '2025-12-31T23:59:59.000',
    });
    expect(seen).toEqual(['version', 'page 0', 'page 1', 'page 2']);
  });

  it('answers an empty list as []', async () => {
    running = await serve(fakeClients(0, 1000, []));
    const res = await list(running.base);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('[]');
  });

  it('lets a request that arrives during a 4,000-item listing be answered before the listing has read its last page', async () => {
    const seen: string[] = [];
    let count: Promise<Response> | undefined;
    // Pages of 100: the service may answer fewer than the 1000 asked, and 40 pages leave the event loop 39 chances to turn.
    running = await serve(
      fakeClients(4000, 100, seen, () => {
        count = fetch(`${running!.base}/api/card/count`);
      }),
    );
    const listing = list(running.base);
    const res = await listing;
    expect((await res.json()) as unknown[]).toHaveLength(4000);
    expect(await (await count!).json()).toEqual({ total_count: 7 });
    // Before, every page was read and written in one turn of the event loop: the count was asked after page 39.
    expect(seen.indexOf('count')).toBeGreaterThan(0);
    expect(seen.indexOf('count')).toBeLessThan(seen.indexOf('page 39'));
  });

  it('tags the list with its version (read before the list) and answers 304, without listing, to a poll naming an unchanged one', async () => {
    const seen: string[] = [];
    let version = '3.1';
    running = await serve(fakeClients(3, 1000, seen, undefined, async () => version));
    // As it is: the compressed answer carries the weak form of the tag (api-compression.test.ts).
    const first = await list(running.base, { 'accept-encoding': 'identity' });
    expect(first.status).toBe(200);
    const tag = first.headers.get('etag');
    expect(tag).toMatch(/^"[^"]+"$/);
    expect(tag).toContain(USER_ID);
    expect((await first.json()) as unknown[]).toHaveLength(3);
    expect(seen).toEqual(['version', 'page 0']);

    seen.length = 0;
    for (const ifNoneMatch of [tag!, `W/${tag}`, `"other", ${tag}`, '*']) {
      const again = await list(running.base, { 'if-none-match': ifNoneMatch });
      expect(again.status).toBe(304);
      expect(again.headers.get('etag')).toBe(tag);
      expect(await again.text()).toBe('');
    }
    expect(seen).toEqual(['version', 'version', 'version', 'version']);

    // Marked read (or a notification added): another version, so the old tag gets the whole list again.
    version = '3.2';
    const changed = await list(running.base, { 'if-none-match': tag! });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(tag);
    expect((await changed.json()) as unknown[]).toHaveLength(3);
    expect((await list(running.base, { 'if-none-match': '"n1.someone-else.3.2"' })).status).toBe(200);
  });

  it('answers the list without a process warning (a "possible memory leak" line per poll on stderr before)', async () => {
    // Each concern of the gateway listens once for an answer's 'close' (access log, admission slot, idle cut, client
    // gone, ...) and a streamed answer's pipeline adds its own: 11 on one answer, past Node's default of 10, so every
    // poll of the list wrote "MaxListenersExceededWarning: Possible EventEmitter memory leak detected" to the process's
    // stderr (not the JSON log) — no leak is there (the listeners go with the answer), but an operator's log filled
    // with it. Node warns when one event of an emitter has more listeners than the emitter's limit, so that is what is
    // checked, at each 'close' listener added (jest's sandboxed `process` does not see the real process's warnings).
    const answers: Array<{ most: number; limit: number }> = [];
    const app = appWithoutServices({ clients: fakeClients(3, 1000, []), accessLogLevel: 'silent' });
    running = await listening(
      createServer((req, res) => {
        const answer = { most: 0, limit: res.getMaxListeners() };
        answers.push(answer);
        res.on('newListener', (event) => {
          // 'newListener' comes before the listener is added: it makes one more.
          if (event === 'close') answer.most = Math.max(answer.most, res.listenerCount('close') + 1);
          answer.limit = res.getMaxListeners();
        });
        app(req, res);
      }),
    );
    for (const encoding of ['identity', 'gzip']) {
      const res = await list(running.base, { 'accept-encoding': encoding });
      expect(res.status).toBe(200);
      expect((await res.json()) as unknown[]).toHaveLength(3);
    }
    expect(answers).toHaveLength(2);
    for (const answer of answers) expect(answer.most).toBeLessThanOrEqual(answer.limit);
  });

  it('lists without a tag when the notifications service has no list versions yet (UNIMPLEMENTED)', async () => {
    const seen: string[] = [];
    running = await serve(
      fakeClients(2, 1000, seen, undefined, async () => {
        throw new ClientError('/notifications.v1.NotificationService/GetListVersion', Status.UNIMPLEMENTED, 'no');
      }),
    );
    const res = await list(running.base, { 'if-none-match': '*' });
    expect(res.status).toBe(200);
    expect(res.headers.get('etag')).toBeNull();
    expect((await res.json()) as unknown[]).toHaveLength(2);
  });
});
