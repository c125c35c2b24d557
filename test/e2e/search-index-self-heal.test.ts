import { randomUUID } from 'node:crypto';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { eventuallyDefined } from '../support/eventually';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { sharedEngineNamespace, startSystem, type RunningSystem } from '../support/service';
import { html, uniqueText } from './cards-support';
import { testTempDir } from '../support/cleanup';

/**
 * A search index lost while the system was stopped (DATA_DIR/search/index.db deleted; its indices on a shared
 * Elasticsearch) heals itself: at start search finds its index created now while its consumer group had handled events
 * before, logs one warning and asks the cards service, which tells it every card and bookmark again as
 * rebuild-search-index does, without anyone running the command. The first start of the new system asks nothing.
 */

const QUERY = 'river mountain library archive signal harbor lantern';
const LOST = 'it was lost (deleted or emptied while search was stopped)';
const mailbox = new Mailbox();
const dataDir = testTempDir('cards-self-heal-');
let system: RunningSystem;

beforeAll(async () => {
  await mailbox.start();
});

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const start = () => startSystem({ dataDir, env: { SMTP_URL: mailbox.url } });

function viewer(user: TestUser | undefined): ApiClient {
  const client = new ApiClient(system.baseUrl);
  client.cookie = user?.client.cookie;
  return client;
}

async function postCard(user: TestUser, body: Record<string, unknown>): Promise<string> {
  const res = await viewer(user).post('/api/card', { link: '', private: false, ...body });
  if (res.status !== 200) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.json.card_metadata.id;
}

/** Ids the user finds by meaning and by words, and in the collection. */
async function found(user: TestUser, collectionId: string): Promise<Record<string, string[]>> {
  const ids = (list: { metadata: { id: string }[] }[] | undefined) => (list ?? []).flatMap((e) => e.metadata.map((c) => c.id)).sort();
  const semantic = await viewer(user).post('/api/card/search/1', { content: QUERY });
  const fullText = await viewer(user).post('/api/card/fulltextsearch/1', { content: QUERY });
  const inList = await viewer(user).post('/api/card_collection/search/1', { content: QUERY, collection_id: collectionId });
  return { semantic: ids(semantic.json?.score_cards), fullText: ids(fullText.json?.score_cards), inList: ids(inList.json?.bookmarks) };
}

async function loseTheIndex(): Promise<void> {
  const elasticsearch = process.env.ELASTICSEARCH_URL;
  if (!elasticsearch) {
    const files = readdirSync(join(dataDir, 'search')).filter((f) => f.startsWith('index.db'));
    expect(files).toContain('index.db');
    for (const file of files) rmSync(join(dataDir, 'search', file));
    return;
  }
  const prefix = sharedEngineNamespace(dataDir).ELASTICSEARCH_INDEX_PREFIX!;
  const res = await fetch(`${elasticsearch.replace(/\/$/, '')}/${['cards', 'vocabulary', 'bookmarks', 'removed'].map((n) => `${prefix}-${n}`).join(',')}`, { method: 'DELETE' });
  expect(res.status).toBe(200);
}

const warningsOfLoss = () => system.logs().split('\n').filter((line) => line.includes(LOST)).length;

it('finds the old cards by search again after the index was deleted while stopped, without the rebuild command', async () => {
  system = await start();
  const alice = await signUp(system.baseUrl, mailbox, 'self-heal-alice');
  const open = await postCard(alice, { card_html: html(`${uniqueText()} ${QUERY}`) });
  const secret = await postCard(alice, { card_html: html(`${uniqueText()} ${QUERY}`), private: true });
  const created = await viewer(alice).post('/api/card_collection', { name: `list ${randomUUID()}`, is_public: false });
  expect(created.status).toBe(204);
  const listId = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
  expect((await viewer(alice).post(`/api/card_collection/${listId}`, { card_metadata_id: secret })).status).toBe(204);
  const expected = { semantic: [open, secret].sort(), fullText: [open, secret].sort(), inList: [secret] };
  const complete = async () => {
    const seen = await found(alice, listId);
    return JSON.stringify(seen) === JSON.stringify(expected) ? seen : undefined;
  };
  await eventuallyDefined(complete, 'both cards and the bookmark to be searchable');
  // A new system: its index made at this start, nothing handled before. Not a lost index.
  expect(warningsOfLoss()).toBe(0);

  // A restart on the index as it is: not lost either.
  await system.stop();
  system = await start();
  await eventuallyDefined(complete, 'both cards still searchable after a restart');
  expect(warningsOfLoss()).toBe(0);

  await system.stop();
  await loseTheIndex();
  system = await start();

  const healed = await eventuallyDefined(complete, 'the lost index to be rebuilt at search’s request', 60_000).catch(() => found(alice, listId));
  expect(healed).toEqual(expected);
  expect(warningsOfLoss()).toBe(1);
}, 240_000);
