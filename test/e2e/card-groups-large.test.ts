import { join } from 'node:path';
import { connectMongo, createLogger } from '@cards/platform';
import { openMongoCardsStore } from '../../services/cards/src/adapters/mongo';
import { openCardsDatabase } from '../../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../../services/cards/src/adapters/sqlite/sqlite-card-repository';
import type { CardRepository } from '../../services/cards/src/domain/ports';
import { cardTextFromHtml, fingerprintOf } from '../../services/cards/src/domain/rules';
import { aCard } from '../../services/cards/test/builders';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { sharedEngineNamespace, startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';

/**
 * A page of entries whose duplicates together pass one gRPC message (8 MiB), with every service in its own process as
 * the Helm chart runs them. A card holds up to 29,000 characters of text (and its HTML as much again), so 25 roots
 * each copied by 7 users are ~10 MB. The roots are made over HTTP (so search indexes them); the copies are stored
 * through the cards service's own repository while it runs (SQLite, or MongoDB with MONGO_URL), as it would store them.
 */
const ROOTS = 25;
const COPIES = 7;
const MARKER = 'zqxgroupsprobe';

async function openCardStoreOf(running: RunningSystem): Promise<{ cards: CardRepository; close(): Promise<void> }> {
  if (!process.env.MONGO_URL) {
    const db = openCardsDatabase(join(running.dataDir, 'cards', 'cards.db'));
    return { cards: new SqliteCardRepository(db), close: async () => void db.close() };
  }
  const { MONGO_DATABASE_PREFIX } = sharedEngineNamespace(running.dataDir);
  const connection = await connectMongo({ url: process.env.MONGO_URL, database: 'cards', databasePrefix: MONGO_DATABASE_PREFIX, logger: createLogger('e2e', 'silent') });
  return { cards: (await openMongoCardsStore(connection)).cards, close: () => connection.close() };
}

/** HTML a card may hold: under 500,000 characters, 28,500 of text, the rest markup (stored as ~437,000 characters). */
const markupHeavyHtml = (n: number) => `<p>${`<strong><em><u><s>${`${n}`.padEnd(50, 'x')}</s></u></em></strong> `.repeat(560)}</p>${'<p><br></p>'.repeat(30_000)}`;
/** Alice's newest cards, newest first: her user page's first page, ~11 MB. */
const heavyCards: string[] = [];

/** A text of the largest size a card takes. */
const largeText = (n: number) => `copy ${n} `.padEnd(29_000, 'lorem ipsum dolor sit amet ');

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
let collectionId: string;
/** Each root's id followed by its copies' ids, oldest first, as anyone sees them; and alice's private copy of each. */
const entries: string[][] = [];
const privateCopies = new Map<string, string>();

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: 'distributed' } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'large-groups'), signUp(system.baseUrl, mailbox, 'large-groups-other')]);
  const created = await bob.client.post('/api/card_collection', { name: 'Much copied', description: '', is_public: true });
  if (created.status !== 204) throw new Error(`collection not made: ${created.status} ${created.text}`);
  collectionId = /\/api\/card_collection\/([0-9a-f-]{36})$/.exec(created.headers.get('location') ?? '')![1]!;
  for (let i = 0; i < ROOTS; i++) {
    const made = await bob.client.post('/api/card', { card_html: html(`${uniqueText()} ${MARKER}`), link: '', private: false });
    if (made.status !== 200 || made.json.duplicate) throw new Error(`root not made: ${made.status} ${made.text}`);
    entries.push([made.json.card_metadata.id]);
  }
  for (const [rootId] of entries) expect((await bob.client.post(`/api/card_collection/${collectionId}`, { card_metadata_id: rootId })).status).toBe(204);

  // Search learns of the roots from events.
  for (const deadline = Date.now() + 60_000; ; ) {
    const found = await bob.client.post('/api/card/fulltextsearch/1', { content: MARKER });
    if (found.status === 200 && found.json.score_cards.length === ROOTS) break;
    if (Date.now() > deadline) throw new Error(`search never found the ${ROOTS} roots: ${found.status} ${found.text.slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 250));
  }

  const store = await openCardStoreOf(system);
  for (const entry of entries) {
    for (let c = 0; c < COPIES; c++) {
      const text = largeText(c);
      const copy = aCard().collisionOf(entry[0]!).withContent(text).build();
      await store.cards.insert({ ...copy, cardHtml: `<p>${text}</p>` }, fingerprintOf(text), []);
      entry.push(copy.id);
    }
    const hidden = aCard().by(alice.id).private().collisionOf(entry[0]!).withContent(largeText(COPIES)).build();
    await store.cards.insert(hidden, fingerprintOf(hidden.content), []);
    privateCopies.set(entry[0]!, hidden.id);
  }
  for (let i = 0; i < ROOTS; i++) {
    const { cardHtml, content } = cardTextFromHtml(markupHeavyHtml(i));
    const card = { ...aCard().by(alice.id).withContent(content).build(), cardHtml };
    await store.cards.insert(card, fingerprintOf(content), []);
    heavyCards.unshift(card.id);
  }
  await store.close();
}, 300_000);

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

type Entry = { metadata: { id: string; content: string }[] };
const idsOf = (list: Entry[]) => list.map((e) => e.metadata.map((c) => c.id));
/** Each root with the copies the viewer sees: alice also her own private copy, which is the newest. */
const expectedFor = (viewer: 'alice' | 'other') => entries.map((e) => (viewer === 'alice' ? [...e, privateCopies.get(e[0]!)!] : e));

describe('a page of entries whose duplicates pass one gRPC message (services in separate processes)', () => {
  it("a collection page lists every root with all of its visible duplicates, each viewer's own", async () => {
    for (const [client, viewer] of [[alice.client, 'alice'], [bob.client, 'other'], [new ApiClient(system.baseUrl), 'other']] as const) {
      const page = await client.get(`/api/card_collection/${collectionId}/1`);
      expect(page.status).toBe(200);
      expect(idsOf(page.json.bookmarks)).toEqual(expectedFor(viewer));
      expect(page.json.bookmarks[ROOTS - 1].metadata[COPIES].content).toBe(largeText(COPIES - 1));
    }
  }, 120_000);

  it("a user's page lists all of its 25 cards, however large their HTML", async () => {
    for (const client of [alice.client, new ApiClient(system.baseUrl)]) {
      const page = await client.get(`/api/user/${alice.id}/1`);
      expect(page.status).toBe(200);
      expect(page.json.cards.map((c: { id: string }) => c.id)).toEqual(heavyCards);
      expect(page.json.cards[ROOTS - 1].card_html).toBe(cardTextFromHtml(markupHeavyHtml(0)).cardHtml);
    }
  }, 120_000);

  it('a search page lists every root with all of its visible duplicates, each viewer its own', async () => {
    for (const [client, viewer] of [[alice.client, 'alice'], [new ApiClient(system.baseUrl), 'other']] as const) {
      for (const path of ['/api/card/fulltextsearch/1', '/api/card/search/1']) {
        // Semantic search needs words the model knows (the marker alone means nothing and finds nothing); it ranks every card.
        const page = await client.post(path, { content: path.includes('fulltext') ? MARKER : `${MARKER} river mountain library` });
        expect(page.status).toBe(200);
        const byRoot = new Map(expectedFor(viewer).map((e) => [e[0], e]));
        // Search orders the roots by score: each entry is compared with its root's expected entry.
        expect(page.json.score_cards.map((e: Entry) => e.metadata.map((c) => c.id))).toEqual(page.json.score_cards.map((e: Entry) => byRoot.get(e.metadata[0]!.id)));
        if (path.includes('fulltext')) expect(page.json.score_cards).toHaveLength(ROOTS);
      }
    }
    const inCollection = await bob.client.post('/api/card_collection/fulltextsearch/1', { content: MARKER, collection_id: collectionId });
    expect(inCollection.status).toBe(200);
    expect(inCollection.json.bookmarks.map((e: Entry) => e.metadata.length)).toEqual(entries.map(() => 1 + COPIES));
  }, 120_000);
});
