import Database from 'better-sqlite3';
import { holdWriteLockHere } from '../support/sqlite-lock-holder';
import { join } from 'node:path';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';
import { eventually } from './openapi-support';

// Another process holding a store's write lock past the services' busy_timeout (5 s, sqlite.ts), as the backup command
// does while it copies a large data dir (data-dir-backup.ts): through the real gateway a write waiting for it is a 503
// "Service busy" with Retry-After (never a 500 or a 504), the same write goes through once the lock is let go, and an
// event consumer whose store is held retries until it is let go instead of dead-lettering the event.

const mailbox = new Mailbox();
let system: RunningSystem;
let user: TestUser;

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
  user = await signUp(system.baseUrl, mailbox, 'store-busy');
}, 180_000);

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

/** A connection of this test process holding `store`'s write lock (BEGIN IMMEDIATE) until `release()`. */
function holdWriteLock(store: string): { release(): void } {
  return holdWriteLockHere(join(system.dataDir, store));
}

async function createCard(text: string): Promise<string> {
  const res = await user.client.post('/api/card', { card_html: html(text), link: '', private: false });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.card_metadata.id as string;
}

it('a write to a store held past busy_timeout answers 503 Service busy with Retry-After, and goes through once let go', async () => {
  const card = await createCard(uniqueText());
  const created = await user.client.post('/api/card_collection', { name: `busy ${Date.now()}`, is_public: true });
  expect(created.status).toBe(204);
  const collection = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;

  const lock = holdWriteLock('cards/cards.db');
  let held;
  try {
    // The lock is held until the answer arrives: the cards service waits busy_timeout for it, then gives up.
    held = await user.client.post(`/api/card_collection/${collection}`, { card_metadata_id: card });
  } finally {
    lock.release();
  }
  expect({ status: held.status, retryAfter: held.headers.get('retry-after'), message: held.json?.message }).toEqual({
    status: 503,
    retryAfter: expect.stringMatching(/^\d+$/),
    message: expect.stringMatching(/^Service busy/),
  });
  expect((await user.client.post(`/api/card_collection/${collection}`, { card_metadata_id: card })).status).toBe(204);
  const page = await user.client.get(`/api/card_collection/${collection}/1`);
  expect((page.json.bookmarks as { metadata: { id: string }[] }[]).map((b) => b.metadata[0]!.id)).toEqual([card]);
}, 60_000);

it("an event consumer whose store is held past busy_timeout retries until it is let go: the card is found, no dead letter", async () => {
  const word = `heldindex${Date.now()}`;
  const logsBefore = system.logs().length;
  const lock = holdWriteLock('search/index.db');
  let id: string;
  try {
    id = await createCard(`${uniqueText()} ${word}`);
    // The search consumer's write waited busy_timeout and failed at least once while the index is held (logged from now).
    await eventually('the search consumer to meet the held index', async () => /database is locked/.test(system.logs().slice(logsBefore)), 60_000, 200);
  } finally {
    lock.release();
  }
  await eventually(
    `card ${id} to be found by search`,
    async () => {
      const res = await user.client.post('/api/card/search/1', { content: word });
      return res.status === 200 && (res.json.score_cards as { metadata: { id: string }[] }[]).some((c) => c.metadata[0]!.id === id);
    },
    60_000,
    300,
  );
  const events = new Database(join(system.dataDir, 'events', 'events.db'), { readonly: true });
  try {
    expect(events.prepare('SELECT group_id, topic, seq, error FROM dead_letters').all()).toEqual([]);
  } finally {
    events.close();
  }
  expect(system.logs()).not.toMatch(/"msg":"unexpected error in gRPC handler"/);
}, 120_000);

it("a collection's page is read while another process holds the cards store's write lock (the backup's readers go on)", async () => {
  const cards = [await createCard(uniqueText()), await createCard(uniqueText())];
  const created = await user.client.post('/api/card_collection', { name: `read ${Date.now()}`, is_public: true });
  const collection = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
  expect((await user.client.post(`/api/card_collection/${collection}`, { card_metadata_id: cards[0] })).status).toBe(204);
  const ids = (page: { json: { bookmarks: { metadata: { id: string }[] }[] } }) => page.json.bookmarks.map((b) => b.metadata[0]!.id).sort();
  // The collection's root counts kept from this read are current for the first read below, and out of date (a bookmark
  // added since) for the second: neither needs the write lock to be answered.
  expect(ids(await user.client.get(`/api/card_collection/${collection}/1`))).toEqual([cards[0]]);
  for (const step of ['counts kept current', 'counts out of date']) {
    if (step === 'counts out of date') expect((await user.client.post(`/api/card_collection/${collection}`, { card_metadata_id: cards[1] })).status).toBe(204);
    const lock = holdWriteLock('cards/cards.db');
    let page;
    try {
      page = await user.client.get(`/api/card_collection/${collection}/1`);
    } finally {
      lock.release();
    }
    expect({ step, status: page.status, message: page.json?.message }).toEqual({ step, status: 200, message: undefined });
    expect(ids(page)).toEqual(step === 'counts kept current' ? [cards[0]] : [...cards].sort());
  }
  // Once let go, the counts are kept again and the page still right.
  expect(ids(await user.client.get(`/api/card_collection/${collection}/1`))).toEqual([...cards].sort());
}, 60_000);
