import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Topics, createLogger, openSqlite, SqliteEventLog } from '@cards/platform';
import { events } from '@cards/proto';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { uniqueText } from './cards-support';

/**
 * Notifications end to end. Verification notifications come from the real pipeline (card created
 * through the gateway -> search verifies -> notifications), collection-created ones from a collection
 * created through the gateway. Replays are written into the system's own event log file, exactly as
 * a redelivering broker would hand them over again.
 */

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
let log: SqliteEventLog;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'notify-alice'), signUp(system.baseUrl, mailbox, 'notify-bob')]);
  log = new SqliteEventLog({ path: join(system.dataDir, 'events', 'events.db'), logger: createLogger('e2e', 'silent') });
}, 120_000);

afterAll(async () => {
  await log?.close();
  await system?.stop();
  await mailbox.stop();
});

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

async function list(client: ApiClient): Promise<any[]> {
  const res = await client.get('/api/notifications');
  expect(res.status).toBe(200);
  return res.json;
}

async function waitFor(client: ApiClient, predicate: (all: any[]) => boolean, timeoutMs = 30_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = await list(client);
    if (predicate(all) || Date.now() > deadline) return all;
    await new Promise((r) => setTimeout(r, 100));
  }
}

function collectionCreated(authorId: string, collectionId: string): Uint8Array {
  return events.CollectionEvent.encode({
    eventId: randomUUID(),
    occurredAt: new Date(),
    kind: { $case: 'created', value: { collectionId, authorId, name: 'Collection for file notes.docx', isPublic: true, fileId: randomUUID() } },
  }).finish();
}

/** A card whose link cannot be fetched (a loopback address): verification still finishes, with score 0. */
async function cardWithNotification(user: TestUser): Promise<{ cardId: string; notification: any }> {
  const res = await user.client.post('/api/card', { card_html: `<p>${uniqueText()}</p>`, link: 'http://127.0.0.1:9/never-fetched', private: false });
  expect(res.status).toBe(200);
  const cardId = res.json.card_metadata.id as string;
  const all = await waitFor(user.client, (ns) => ns.some((n) => n.card_uuid === cardId));
  return { cardId, notification: all.find((n) => n.card_uuid === cardId) };
}

describe('notifications', () => {
  it('requires a session for every route', async () => {
    const anonymous = new ApiClient(system.baseUrl);
    for (const res of [await anonymous.get('/api/notifications'), await anonymous.put('/api/notifications', { notification_id: randomUUID() }), await anonymous.put('/api/notifications/all')]) {
      expect(res.status).toBe(401);
      expect(res.json.message).toEqual(expect.any(String));
    }
  });

  it('a new user has none', async () => {
    const carol = await signUp(system.baseUrl, mailbox, 'notify-carol');
    expect(await list(carol.client)).toEqual([]);
  });

  it('a created collection notifies its author with the collection id; both kinds come newest first', async () => {
    const { cardId } = await cardWithNotification(alice);
    const collectionId = randomUUID();
    await log.publish([{ topic: Topics.collection, key: collectionId, payload: collectionCreated(alice.id, collectionId) }]);
    const all = await waitFor(alice.client, (ns) => ns.some((n) => n.collection_uuid === collectionId));
    const created = all.find((n) => n.collection_uuid === collectionId);
    expect(created).toEqual({
      type: 'collection_created',
      id: expect.stringMatching(UUID),
      user_uuid: alice.id,
      collection_uuid: collectionId,
      user_read: false,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    const indexOfCollection = all.indexOf(created);
    const indexOfCard = all.findIndex((n) => n.card_uuid === cardId);
    expect(indexOfCollection).toBeLessThan(indexOfCard);
    const times = all.map((n) => n.created_at as string);
    expect([...times].sort().reverse()).toEqual(times);
    expect((await list(bob.client)).some((n) => n.collection_uuid === collectionId)).toBe(false);
  });

  it('a collection created through the gateway notifies its author (and only its author) with its id', async () => {
    const res = await alice.client.post('/api/card_collection', { name: `Reading list ${randomUUID()}`, is_public: false });
    expect(res.status).toBe(204);
    const collectionId = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')?.[1];
    expect(collectionId).toMatch(UUID);
    const all = await waitFor(alice.client, (ns) => ns.some((n) => n.collection_uuid === collectionId));
    expect(all.filter((n) => n.collection_uuid === collectionId)).toEqual([expect.objectContaining({ type: 'collection_created', user_uuid: alice.id, user_read: false })]);
    expect((await list(bob.client)).some((n) => n.collection_uuid === collectionId)).toBe(false);
  });

  it('replaying the same events twice leaves exactly one notification each', async () => {
    const { cardId } = await cardWithNotification(alice);
    const created = await alice.client.post('/api/card_collection', { name: `Replayed ${randomUUID()}`, is_public: true });
    const collectionId = /([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
    await waitFor(alice.client, (ns) => ns.some((n) => n.collection_uuid === collectionId));

    // The very events the system published (search's CardVerified, cards' CollectionCreated), read back
    // from its log and delivered twice more.
    const db = openSqlite(join(system.dataDir, 'events', 'events.db'));
    const payloadsOf = (topic: string, key: string) =>
      (db.prepare('SELECT payload FROM events WHERE topic = ? AND key = ?').all(topic, key) as { payload: Buffer }[]).map((r) => new Uint8Array(r.payload));
    const verifiedRows = payloadsOf(Topics.verification, cardId);
    const collectionRows = payloadsOf(Topics.collection, collectionId);
    db.close();
    expect(verifiedRows).toHaveLength(1);
    expect(collectionRows).toHaveLength(1);
    const verified = verifiedRows[0]!;
    const collectionEvent = collectionRows[0]!;
    expect(events.CardVerified.decode(verified).cardId).toBe(cardId);
    expect(events.CollectionEvent.decode(collectionEvent).kind).toMatchObject({ $case: 'created', value: { collectionId, authorId: alice.id } });
    for (let i = 0; i < 2; i++) {
      await log.publish([
        { topic: Topics.verification, key: cardId, payload: verified },
        { topic: Topics.collection, key: collectionId, payload: collectionEvent },
      ]);
    }
    // Events on one topic are consumed in order: once a later marker shows, the replays have been handled.
    const markerCollection = randomUUID();
    await log.publish([{ topic: Topics.verification, key: cardId, payload: verified }]);
    await log.publish([{ topic: Topics.collection, key: markerCollection, payload: collectionCreated(alice.id, markerCollection) }]);
    const { cardId: markerCard } = await cardWithNotification(alice);
    const all = await waitFor(alice.client, (ns) => ns.some((n) => n.collection_uuid === markerCollection) && ns.some((n) => n.card_uuid === markerCard));
    expect(all.filter((n) => n.card_uuid === cardId)).toHaveLength(1);
    expect(all.filter((n) => n.collection_uuid === collectionId)).toHaveLength(1);
  });

  it('a result for a link the card no longer has does not notify, even when search announced it before the edit reached it', async () => {
    const { cardId } = await cardWithNotification(alice);
    const oldLink = 'http://127.0.0.1:9/never-fetched';
    const newLink = 'http://127.0.0.1:9/changed-link';
    expect((await alice.client.put('/api/card/update', { card_uuid: cardId, link: newLink })).status).toBe(204);
    await waitFor(alice.client, (ns) => ns.filter((n) => n.card_uuid === cardId).length === 2);
    // What search announces when the old link's check finished before the edit's event reached it: search did not know
    // the card had moved on, so it announced the old link's result (score 93, which no check of these links gives).
    const verified = (link: string, score: number) =>
      events.CardVerified.encode({ eventId: randomUUID(), occurredAt: new Date(), verificationId: randomUUID(), cardId, authorId: alice.id, score, link, failure: '', contentSha256: '' }).finish();
    await log.publish([{ topic: Topics.verification, key: cardId, payload: verified(oldLink, 93) }]);
    // Events of one card are handled in order: once a later result for the current link notifies, the stale one was handled.
    await log.publish([{ topic: Topics.verification, key: cardId, payload: verified(newLink, 61) }]);
    const all = await waitFor(alice.client, (ns) => ns.some((n) => n.card_uuid === cardId && n.similarity_score === 61));
    const ofCard = all.filter((n) => n.card_uuid === cardId);
    expect(ofCard.map((n) => n.similarity_score).sort()).toEqual([0, 0, 61]);
    expect((await alice.client.get(`/api/card/${cardId}`)).json.verification_score).toBe(61);
  });

  it('answers a poll naming the list\'s ETag with 304 until a notification is added or marked read', async () => {
    const created = await alice.client.post('/api/card_collection', { name: `Tagged ${randomUUID()}`, is_public: false });
    const collectionId = /([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
    await waitFor(alice.client, (ns) => ns.some((n) => n.collection_uuid === collectionId));
    const first = await alice.client.get('/api/notifications');
    const tag = first.headers.get('etag')!;
    expect(tag).toBeTruthy();
    const unchanged = await alice.client.request('GET', '/api/notifications', undefined, { 'if-none-match': tag });
    expect(unchanged.status).toBe(304);
    expect(unchanged.text).toBe('');

    const target = (first.json as any[]).find((n) => n.collection_uuid === collectionId);
    expect((await alice.client.put('/api/notifications', { notification_id: target.id })).status).toBe(204);
    const afterRead = await alice.client.request('GET', '/api/notifications', undefined, { 'if-none-match': tag });
    expect(afterRead.status).toBe(200);
    expect((afterRead.json as any[]).find((n) => n.id === target.id).user_read).toBe(true);
    const readTag = afterRead.headers.get('etag')!;
    expect(readTag).not.toBe(tag);
    expect((await alice.client.request('GET', '/api/notifications', undefined, { 'if-none-match': readTag })).status).toBe(304);
    // Another user's list never matches this one's tag.
    expect((await bob.client.request('GET', '/api/notifications', undefined, { 'if-none-match': readTag })).status).toBe(200);
  });

  it('marks one read (owner only: 404 for others and unknown ids, 400 for a bad id), then all', async () => {
    const first = await cardWithNotification(bob);
    const second = await cardWithNotification(bob);
    const target = first.notification;

    const byAlice = await alice.client.put('/api/notifications', { notification_id: target.id });
    expect(byAlice.status).toBe(404);
    expect(byAlice.json.message).toEqual(expect.any(String));
    expect((await alice.client.put('/api/notifications/all')).status).toBe(204);
    expect((await list(bob.client)).every((n) => n.user_read === false)).toBe(true);
    expect((await list(alice.client)).some((n) => n.id === target.id)).toBe(false);

    expect((await bob.client.put('/api/notifications', { notification_id: randomUUID() })).status).toBe(404);
    for (const body of [{ notification_id: 'not-a-uuid' }, {}, { notification_id: 42 }]) {
      const res = await bob.client.put('/api/notifications', body);
      expect(res.status).toBe(400);
      expect(res.json.message).toMatch(/notification_id/);
    }
    expect((await bob.client.request('PUT', '/api/notifications', '{"notification_id":')).status).toBe(400);

    expect((await bob.client.put('/api/notifications', { notification_id: target.id.toUpperCase() })).status).toBe(204);
    let mine = await list(bob.client);
    const marked = mine.find((n) => n.id === target.id);
    expect(marked.user_read).toBe(true);
    expect(marked.updated_at >= marked.created_at).toBe(true);
    expect(mine.find((n) => n.id === second.notification.id).user_read).toBe(false);
    // Marking again is harmless.
    expect((await bob.client.put('/api/notifications', { notification_id: target.id })).status).toBe(204);

    expect((await bob.client.put('/api/notifications/all')).status).toBe(204);
    mine = await list(bob.client);
    expect(mine.length).toBeGreaterThanOrEqual(2);
    expect(mine.every((n) => n.user_read === true)).toBe(true);
  });
});
