import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { eventuallyDefined } from '../support/eventually';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { sharedEngineNamespace, startSystem, type RunningSystem } from '../support/service';
import { html, uniqueText } from './cards-support';
import { testTempDir } from '../support/cleanup';

/**
 * The operator's rebuild of a lost search index (services/cards/src/cli/rebuild-search-index.ts): the all-in-one on
 * the embedded default loses DATA_DIR/search/index.db while stopped; after the command every search answers as before,
 * and nothing else reacts as if a card had changed (no page fetched again, no notification).
 */

const ROOT = resolve(__dirname, '../..');
const ARTICLE = `Coral reefs cover less than one percent of the ocean floor, yet they support about a quarter of all marine
species known to science. Reef-building corals live in partnership with microscopic algae that live inside their tissue,
give them most of their food and lend them their bright colours. When the water stays too warm for several weeks, the
corals expel the algae and turn white, an event that scientists call bleaching.`;
const QUERY = 'river mountain library archive signal harbor lantern coral reefs algae';

const fetchesOf = new Map<string, number>();
let pages: Server;
let pagesPort: number;
const mailbox = new Mailbox();
const dataDir = testTempDir('cards-rebuild-index-');
let system: RunningSystem;

beforeAll(async () => {
  pages = createServer((req, res) => {
    fetchesOf.set(req.url ?? '', (fetchesOf.get(req.url ?? '') ?? 0) + 1);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><body><article><p>${ARTICLE}</p></article></body></html>`);
  });
  await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
  pagesPort = (pages.address() as AddressInfo).port;
  await mailbox.start();
});

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
  pages?.closeAllConnections();
  await new Promise((r) => pages?.close(r));
  rmSync(dataDir, { recursive: true, force: true });
});

// Without search's own request for a rebuild when it finds its index lost at start (search-index-self-heal.test.ts), so
// the lost index stays lost until the command runs.
const start = () => startSystem({ dataDir, env: { SMTP_URL: mailbox.url, VERIFY_ALLOW_HOSTS: `127.0.0.1:${pagesPort}`, SEARCH_INDEX_REBUILD_WHEN_LOST: 'false' } });

function viewer(user: TestUser | undefined): ApiClient {
  const client = new ApiClient(system.baseUrl);
  client.cookie = user?.client.cookie;
  return client;
}

async function postCard(user: TestUser, body: Record<string, unknown>): Promise<{ id: string; duplicate: boolean }> {
  const res = await viewer(user).post('/api/card', { link: '', private: false, ...body });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
  return { id: res.json.card_metadata.id, duplicate: res.json.duplicate };
}

async function createCollection(user: TestUser, isPublic: boolean): Promise<string> {
  const res = await viewer(user).post('/api/card_collection', { name: `list ${randomUUID()}`, is_public: isPublic });
  if (res.status !== 204) throw new Error(`collection create failed: ${res.status} ${res.text}`);
  return /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(res.headers.get('location') ?? '')![1]!;
}

async function bookmark(user: TestUser, collectionId: string, cardId: string): Promise<void> {
  const res = await viewer(user).post(`/api/card_collection/${collectionId}`, { card_metadata_id: cardId });
  if (res.status !== 204) throw new Error(`bookmark failed: ${res.status} ${res.text}`);
}

type Entry = { metadata: { id: string }[]; score: number };
/** Entries by score, those of equal score (whose order is the index's insertion order) by their root's id. */
const entries = (list: Entry[] | undefined) =>
  (list ?? []).map((e) => ({ ids: e.metadata.map((c) => c.id), score: Math.round(e.score * 1e6) / 1e6 })).sort((a, b) => b.score - a.score || (a.ids[0]! < b.ids[0]! ? -1 : 1));

/** Every search the test looks at, as each viewer sees it: status, entries (ids of each group, score), pages. */
async function answers(viewers: Record<string, TestUser | undefined>, collections: string[]): Promise<Record<string, unknown>> {
  const seen: Record<string, unknown> = {};
  for (const [name, user] of Object.entries(viewers)) {
    for (const path of ['/api/card/search/1', '/api/card/fulltextsearch/1']) {
      const res = await viewer(user).post(path, { content: QUERY });
      seen[`${name} ${path}`] = [res.status, entries(res.json?.score_cards), res.json?.total_pages];
    }
    for (const collectionId of collections) {
      for (const path of ['/api/card_collection/search/1', '/api/card_collection/fulltextsearch/1']) {
        const res = await viewer(user).post(path, { content: QUERY, collection_id: collectionId });
        seen[`${name} ${path} ${collectionId}`] = [res.status, entries(res.json?.bookmarks), res.json?.total_pages];
      }
    }
  }
  return seen;
}

async function notificationsOf(user: TestUser): Promise<unknown[]> {
  const res = await viewer(user).get('/api/notifications');
  expect(res.status).toBe(200);
  return res.json;
}

function rebuildSearchIndex(): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'services/cards/src/cli/rebuild-search-index.ts', '--batch-size', '2'], {
    cwd: ROOT,
    env: { ...process.env, ...sharedEngineNamespace(dataDir), DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** Deletes the index while the system is stopped: index.db on the embedded default, the four indices on a shared Elasticsearch. */
async function loseTheIndex(): Promise<void> {
  const elasticsearch = process.env.ELASTICSEARCH_URL;
  if (!elasticsearch) {
    for (const file of readdirSync(join(dataDir, 'search')).filter((f) => f.startsWith('index.db'))) rmSync(join(dataDir, 'search', file));
    return;
  }
  const prefix = sharedEngineNamespace(dataDir).ELASTICSEARCH_INDEX_PREFIX!;
  const res = await fetch(`${elasticsearch.replace(/\/$/, '')}/${['cards', 'vocabulary', 'bookmarks', 'removed'].map((n) => `${prefix}-${n}`).join(',')}`, { method: 'DELETE' });
  expect(res.status).toBe(200);
}

it('rebuilds a deleted index from the cards store: the same answers for everyone, no page fetched, no notification', async () => {
  system = await start();
  const [alice, bob] = [await signUp(system.baseUrl, mailbox, 'rebuild-alice'), await signUp(system.baseUrl, mailbox, 'rebuild-bob')];
  const shared = uniqueText();
  const root = await postCard(bob, { card_html: html(shared) });
  const collision = await postCard(alice, { card_html: html(`${shared} Worth remembering.`) });
  expect(collision.duplicate).toBe(true);
  const open = await postCard(alice, { card_html: html(uniqueText()) });
  const secret = await postCard(alice, { card_html: html(uniqueText()), private: true });
  const linked = await postCard(alice, { card_html: html(`${ARTICLE} Reference ${randomUUID()}.`), link: `http://127.0.0.1:${pagesPort}/coral` });
  const publicList = await createCollection(alice, true);
  const privateList = await createCollection(alice, false);
  await bookmark(alice, publicList, collision.id);
  await bookmark(alice, publicList, open.id);
  await bookmark(alice, privateList, secret.id);
  await bookmark(alice, privateList, linked.id);
  const verifications = async (user: TestUser) => (await notificationsOf(user)).filter((n) => (n as { type: string }).type === 'verification');
  await eventuallyDefined(async () => ((await verifications(alice)).length === 1 ? true : undefined), 'the linked card to be verified');

  const viewers = { anonymous: undefined, alice, bob };
  const collections = [publicList, privateList];
  const expectedEntries = { anonymous: 3, alice: 4, bob: 3 };
  const indexed = async () => {
    const seen = await answers(viewers, collections);
    const complete = Object.entries(expectedEntries).every(([name, n]) => ((seen[`${name} /api/card/search/1`] as [number, unknown[]])[1].length === n))
      && ((seen[`anonymous /api/card_collection/search/1 ${publicList}`] as [number, Entry[]])[1].length === 2)
      && ((seen[`alice /api/card_collection/search/1 ${privateList}`] as [number, Entry[]])[1].length === 2)
      && (seen['anonymous /api/card/search/1'] as [number, { ids: string[] }[]])[1].some((e) => e.ids.length === 2);
    return complete ? seen : undefined;
  };
  const before = await eventuallyDefined(indexed, 'every card and bookmark to be searchable');
  // The collision sits inside its root's entry for everyone who sees them.
  expect((before['anonymous /api/card/search/1'] as [number, { ids: string[] }[]])[1].map((e) => e.ids)).toContainEqual([root.id, collision.id]);
  const notificationsBefore = { alice: await notificationsOf(alice), bob: await notificationsOf(bob) };
  const fetchesBefore = fetchesOf.get('/coral');
  expect(fetchesBefore).toBe(1);

  await system.stop();
  await loseTheIndex();
  system = await start();
  const lost = await answers(viewers, collections);
  expect((lost['alice /api/card/search/1'] as [number, unknown[]])[1]).toEqual([]);
  expect((lost[`alice /api/card_collection/fulltextsearch/1 ${privateList}`] as [number, unknown[]])[1]).toEqual([]);

  const run = rebuildSearchIndex();
  expect({ status: run.status, stderr: run.status === 0 ? '' : run.stderr }).toEqual({ status: 0, stderr: '' });
  expect(run.stdout).toMatch(/5 card\(s\) and 4 bookmark\(s\) queued/);

  const after = await eventuallyDefined(async () => {
    const seen = await answers(viewers, collections);
    return JSON.stringify(seen) === JSON.stringify(before) ? seen : undefined;
  }, 'the searches to answer as before the index was lost', 60_000).catch(() => answers(viewers, collections));
  expect(after).toEqual(before);

  // A private card of bob's with a link, created after the command (and its link changed after the second run, which
  // leaves the words of the index as they are): once its verification is notified and search filters it by that link,
  // verification and the index have seen every event the command queued before (one log, in order), so a page fetch or
  // a notification owed to them would be here by then.
  let sentinelId = '';
  const sentinel = async (path: string, notifications: number) => {
    const link = `http://127.0.0.1:${pagesPort}${path}`;
    if (!sentinelId) sentinelId = (await postCard(bob, { card_html: html(uniqueText()), link, private: true })).id;
    else expect((await viewer(bob).put('/api/card/update', { card_uuid: sentinelId, link })).status).toBe(204);
    await eventuallyDefined(async () => {
      const res = await viewer(bob).post('/api/card/search/1', { content: QUERY, link: [link] });
      return entries(res.json?.score_cards).some((e) => e.ids.includes(sentinelId)) ? true : undefined;
    }, 'the sentinel card to be searchable by its link');
    await eventuallyDefined(async () => ((await verifications(bob)).filter((n) => (n as { card_uuid: string }).card_uuid === sentinelId).length === notifications ? true : undefined), 'the sentinel card to be verified');
  };
  const othersSee = () => answers({ anonymous: undefined, alice }, collections);
  await sentinel('/sentinel-1', 1);
  expect(fetchesOf.get('/coral')).toBe(fetchesBefore);
  expect(await notificationsOf(alice)).toEqual(notificationsBefore.alice);
  const bobsOthers = async () => (await notificationsOf(bob)).filter((n) => (n as { card_uuid?: string }).card_uuid !== sentinelId);
  expect(await bobsOthers()).toEqual(notificationsBefore.bob);
  const othersBefore = await othersSee();

  // Run again on the healthy index: a harmless "make sure".
  const again = rebuildSearchIndex();
  expect(again.status).toBe(0);
  await sentinel('/sentinel-2', 2);
  expect(await othersSee()).toEqual(othersBefore);
  expect(fetchesOf.get('/coral')).toBe(fetchesBefore);
  expect(await notificationsOf(alice)).toEqual(notificationsBefore.alice);
  expect(await bobsOthers()).toEqual(notificationsBefore.bob);
}, 240_000);

it('exits non-zero with a clear message when there is no cards store', () => {
  const empty = testTempDir('cards-rebuild-none-');
  try {
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'services/cards/src/cli/rebuild-search-index.ts'], { cwd: ROOT, env: { ...process.env, DATA_DIR: empty, MONGO_URL: '' }, encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`no cards store at ${join(empty, 'cards', 'cards.db')}`);
    const unreachable = spawnSync(process.execPath, ['--import', 'tsx', 'services/cards/src/cli/rebuild-search-index.ts'], {
      cwd: ROOT,
      env: { ...process.env, MONGO_URL: 'mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=500', MONGO_DATABASE_PREFIX: '' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr).toMatch(/cannot open the cards store: MongoDB at .* is unreachable \(MONGO_URL\)/);
    expect(readdirSync(empty)).toEqual([]);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
}, 120_000);
