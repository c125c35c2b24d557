import { randomBytes, randomUUID } from 'node:crypto';
import { connectMongo, createLogger, MongoOutboxStore, SqliteOutboxStore, Topics, type OutboxStore } from '@cards/platform';
import { events } from '@cards/proto';
import { openMongoCardsStore } from '../src/adapters/mongo';
import { MongoEventOutbox } from '../src/adapters/mongo/mongo-event-outbox';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteEventOutbox } from '../src/adapters/sqlite/sqlite-event-outbox';
import { SearchIndexRepublisher, type RepublishProgress, type SearchIndexRepublisherDeps } from '../src/application/search-index-republisher';
import type { Card } from '../src/domain/model';
import type { CardRepository, CollectionRepository, EventOutbox, SearchIndexRebuildCursor } from '../src/domain/ports';
import { fingerprintOf } from '../src/domain/rules';
import { startMongoSync } from '../../../test/engines/mongo';
import { engineForSuite } from '../../../test/engines/suite';
import { aCard, aCollection, nextTime } from './builders';

interface Store {
  cards: CardRepository;
  collections: CollectionRepository;
  outbox: EventOutbox;
  /** The outbox as the service's relay reads and empties it. */
  relayView: OutboxStore;
  close(): Promise<void>;
}

const sqlite = async (): Promise<Store> => {
  const db = openCardsDatabase(':memory:');
  return {
    cards: new SqliteCardRepository(db),
    collections: new SqliteCollectionRepository(db),
    outbox: new SqliteEventOutbox(db),
    relayView: new SqliteOutboxStore(db),
    close: async () => {
      db.close();
    },
  };
};

const logger = createLogger('cards-republisher-test', process.env.LOG_LEVEL ?? 'fatal');
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

const mongo = async (): Promise<Store> => {
  const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger });
  const store = await openMongoCardsStore(connection);
  return {
    cards: store.cards,
    collections: store.collections,
    outbox: new MongoEventOutbox(connection.db),
    relayView: new MongoOutboxStore(connection.db),
    close: async () => {
      await connection.db.dropDatabase().catch(() => undefined);
      await connection.close();
    },
  };
};

function describeRepublisher(name: string, open: () => Promise<Store>): void {
  describe(`SearchIndexRepublisher: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      await store.close();
    });

    const insert = async (card: Card) => {
      await store.cards.insert(card, fingerprintOf(card.content), []);
      return card;
    };

    const republisher = (overrides: Partial<SearchIndexRepublisherDeps> = {}) =>
      new SearchIndexRepublisher({ cards: store.cards, collections: store.collections, outbox: store.outbox, batchSize: 3, maxPending: 10_000, progress: () => undefined, waiting: () => undefined, ...overrides });

    it('tells every card as an update that changed nothing, then every bookmark as added when it was, a batch at a time', async () => {
      const author = randomUUID();
      const root = await insert(aCard().by(author).build());
      const cards = [root, await insert(aCard().collisionOf(root.id).build()), await insert(aCard().by(author).private().build()), await insert(aCard().hiddenByFile().build())];
      for (let i = 0; i < 4; i++) cards.push(await insert(aCard().build()));
      const [open, hidden] = [aCollection().by(author).build(), aCollection().by(author).private().build()];
      await store.collections.insert(open, []);
      await store.collections.insert(hidden, []);
      const bookmarks = [
        { collectionId: open.id, cardId: cards[1]!.id },
        { collectionId: open.id, cardId: cards[4]!.id },
        { collectionId: hidden.id, cardId: cards[2]!.id },
        { collectionId: hidden.id, cardId: cards[5]!.id },
        { collectionId: hidden.id, cardId: cards[1]!.id },
      ].map((b) => ({ ...b, at: nextTime() }));
      for (const b of bookmarks) expect(await store.collections.addBookmark(b.collectionId, b.cardId, b.at, [])).toBe('added');
      expect(await store.relayView.count()).toBe(0);

      const pages: number[] = [];
      const pageAll = store.cards.pageAll.bind(store.cards);
      const progress: RepublishProgress[] = [];
      const done = await republisher({
        cards: {
          count: () => store.cards.count(),
          pageAll: async (limit, after) => {
            const page = await pageAll(limit, after);
            pages.push(page.items.length);
            return page;
          },
        },
        progress: (p) => progress.push(p),
      }).run();

      expect(done).toEqual({ cards: 8, bookmarks: 5, cardsAtStart: 8 });
      expect(pages).toEqual([3, 3, 2]);
      expect(progress.map((p) => [p.cards, p.bookmarks])).toEqual([[3, 0], [6, 0], [8, 0], [8, 3], [8, 5]]);
      const queued = await store.relayView.pending(1000);
      expect(queued.map((e) => e.topic)).toEqual([...Array(8).fill(Topics.card), ...Array(5).fill(Topics.bookmark)]);
      const told = queued.slice(0, 8).map((e) => {
        const kind = events.CardEvent.decode(e.payload).kind;
        if (kind?.$case !== 'updated') throw new Error(`expected an update, got ${kind?.$case}`);
        expect(e.key).toBe(kind.value.card!.id);
        return kind.value;
      });
      expect(told.map((u) => [u.contentChanged, u.linkChanged, u.privacyChanged])).toEqual(Array(8).fill([false, false, false]));
      const snapshot = (c: Card) => ({ id: c.id, authorId: c.authorId, content: c.content, tags: c.tags, link: c.link, private: c.private, collisionOf: c.collisionOf ?? undefined, createdAt: c.createdAt, updatedAt: c.updatedAt, collectionIds: [] });
      expect(told.map((u) => u.card).sort((a, b) => (a!.id < b!.id ? -1 : 1))).toEqual(cards.map(snapshot).sort((a, b) => (a.id < b.id ? -1 : 1)));
      const bookmarkEvents = queued.slice(8).map((e) => events.BookmarkEvent.decode(e.payload));
      const byPair = (b: { collectionId: string; cardId: string }) => `${b.collectionId} ${b.cardId}`;
      expect(bookmarkEvents.map((b) => ({ collectionId: b.collectionId, cardId: b.cardId, at: b.occurredAt, added: b.added })).sort((a, b) => (byPair(a) < byPair(b) ? -1 : 1)))
        .toEqual(bookmarks.map((b) => ({ ...b, added: true })).sort((a, b) => (byPair(a) < byPair(b) ? -1 : 1)));
    });

    it('reports where it is after each batch, and a run started from a reported point tells only what follows it', async () => {
      const cards: string[] = [];
      for (let i = 0; i < 5; i++) cards.push((await insert(aCard().build())).id);
      cards.sort();
      const list = aCollection().build();
      await store.collections.insert(list, []);
      for (const card of cards.slice(0, 4)) expect(await store.collections.addBookmark(list.id, card, nextTime(), [])).toBe('added');
      const points: SearchIndexRebuildCursor[] = [];
      await republisher({ batchSize: 2, checkpoint: async (at) => void points.push(at) }).run();
      // After each batch but the last: where the next one starts.
      expect(points.map((p) => p.phase)).toEqual(['cards', 'cards', 'bookmarks', 'bookmarks']);
      expect(points[0]!.after).toBe(cards[1]);
      expect(points[2]!.after).toBeUndefined();

      const keysFrom = async (from: SearchIndexRebuildCursor) => {
        const before = await store.relayView.pending(1000);
        await store.relayView.remove(before.map((e) => e.id));
        const done = await republisher({ batchSize: 2, from }).run();
        const queued = await store.relayView.pending(1000);
        return { done: [done.cards, done.bookmarks], told: queued.map((e) => (e.topic === Topics.bookmark ? `bookmark ${events.BookmarkEvent.decode(e.payload).cardId}` : e.key)) };
      };
      expect(await keysFrom(points[1]!)).toEqual({ done: [1, 4], told: [cards[4], ...cards.slice(0, 4).map((c) => `bookmark ${c}`)] });
      expect(await keysFrom(points[2]!)).toEqual({ done: [0, 4], told: cards.slice(0, 4).map((c) => `bookmark ${c}`) });
      expect(await keysFrom(points[3]!)).toEqual({ done: [0, 2], told: cards.slice(2, 4).map((c) => `bookmark ${c}`) });
    });

    it('tells nothing for an empty store', async () => {
      expect(await republisher().run()).toEqual({ cards: 0, bookmarks: 0, cardsAtStart: 0 });
      expect(await store.relayView.count()).toBe(0);
    });

    it('waits while the outbox holds as many events as allowed, until the relay publishes them', async () => {
      for (let i = 0; i < 7; i++) await insert(aCard().build());
      let published = 0;
      let draining: Promise<void> | undefined;
      const waitedAt: number[] = [];
      const done = await republisher({
        maxPending: 3,
        waitNoticeMs: 0,
        pollMs: 1,
        // The relay, stood in for by the test, empties the outbox only once the republisher says it waits.
        waiting: (pending) => {
          waitedAt.push(pending);
          draining ??= (async () => {
            const entries = await store.relayView.pending(1000);
            published += entries.length;
            await store.relayView.remove(entries.map((e) => e.id));
          })().finally(() => (draining = undefined));
        },
      }).run();
      await draining;
      expect(Math.min(...waitedAt)).toBeGreaterThanOrEqual(3);
      expect(done.cards).toBe(7);
      expect(published).toBe(6);
      expect(await store.relayView.count()).toBe(1);
    });
  });
}

describeRepublisher('SQLite', sqlite);
if (skipReason) {
  console.warn(`SKIPPED SearchIndexRepublisher on MongoDB: ${skipReason}`);
  it.skip(`SearchIndexRepublisher on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describeRepublisher(external ? 'MongoDB (TEST_MONGO_URL)' : 'MongoDB (mongo-java-server)', mongo);
}
