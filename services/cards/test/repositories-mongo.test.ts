import { randomBytes } from 'node:crypto';
import { FindCursor, Collection as MongoCollection } from 'mongodb';
import { connectMongo, createLogger, MongoOutboxStore, UnavailableError, type MongoConnection } from '@cards/platform';
import { MongoCollectionRepository, MongoContentLock, MongoVoteRepository, openMongoCardsDatabase, openMongoCardsStore, type MongoCardsDatabase } from '../src/adapters/mongo';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeCardRepositoryContract } from './card-repository.contract';
import { describeCollectionRepositoryContract } from './collection-repository.contract';
import { describeFilePrivacyBackfillContract } from './file-privacy-backfill.contract';
import { describeFilePrivacyRoundTripContract } from './file-privacy-round-trip.contract';
import { describeContentLockContract } from './content-lock.contract';
import { describeVoteRepositoryContract } from './vote-repository.contract';
import type { CardsStoreFactory, CardsStoreFixture } from './fixture';
import type { Card } from '../src/domain/model';
import { randomUUID } from 'node:crypto';
import { Topics } from '@cards/platform';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection, nextTime } from './builders';
import { forgetRootCounts, KEPT_ROOTS_MS, keptRoots, markBlocks } from '../src/adapters/mongo/mongo-bookmark-root-counts';

const logger = createLogger('cards-repo-test', process.env.LOG_LEVEL ?? 'fatal');
// TEST_MONGO_URL points the suites at a real MongoDB; otherwise the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);
const name = external ? 'MongoDB (TEST_MONGO_URL)' : 'MongoDB (mongo-java-server)';

/** A fresh database per test, dropped afterwards. */
const mongo: CardsStoreFactory = async (options) => {
  const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger });
  const outbox = new MongoOutboxStore(connection.db);
  const ports = (store: Awaited<ReturnType<typeof openMongoCardsStore>>) => ({
    cards: store.cards,
    votes: store.votes,
    collections: store.collections,
    oneTimeTasks: store.oneTimeTasks,
    pendingEventTopics: async () => (await outbox.pending(1000)).map((e) => e.topic),
  });
  const store = await openMongoCardsStore(connection, options?.keyExpiry);
  return {
    ...ports(store),
    refuseBookmarkDeletes: () => {
      store.database.bookmarks.deleteMany = (() => Promise.reject(new Error('connection closed (the process stopped)'))) as typeof store.database.bookmarks.deleteMany;
    },
    reopen: async () => ({ ...ports(await openMongoCardsStore(connection, options?.keyExpiry)), close: async () => undefined }),
    close: async () => {
      await connection.db.dropDatabase().catch(() => undefined);
      await connection.close();
    },
  };
};

/** A fresh database for one test, dropped and closed afterwards whatever the test did. */
async function withScratchDatabase(test: (connection: MongoConnection) => Promise<void>): Promise<void> {
  const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger });
  try {
    await test(connection);
  } finally {
    await connection.db.dropDatabase().catch(() => undefined);
    await connection.close();
  }
}

/** A database the earlier version left has no record of the start-time migrations; the first open here wrote one. */
const forgetStartMigrations = (connection: MongoConnection) => connection.db.collection('migrations').deleteMany({});

if (skipReason) {
  console.warn(`SKIPPED cards store contracts on MongoDB: ${skipReason}`);
  it.skip(`cards store contracts on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describeCardRepositoryContract(name, mongo);
  describeVoteRepositoryContract(name, mongo);
  describeCollectionRepositoryContract(name, mongo);
  describeFilePrivacyBackfillContract(name, mongo);
  describeFilePrivacyRoundTripContract(name, mongo);

  /** A fresh database opened by two connections, as two cards processes open it; dropped by close. */
  async function sharedDatabase(): Promise<{ databases: [MongoCardsDatabase, MongoCardsDatabase]; close(): Promise<void> }> {
    const database = `cards_test_${randomBytes(4).toString('hex')}`;
    const connections: MongoConnection[] = [];
    for (let i = 0; i < 2; i++) connections.push(await connectMongo({ url: engine!.url, database, logger }));
    const databases = [await openMongoCardsDatabase(connections[0]!), await openMongoCardsDatabase(connections[1]!)] as [MongoCardsDatabase, MongoCardsDatabase];
    return {
      databases,
      close: async () => {
        await connections[0]!.db.dropDatabase().catch(() => undefined);
        for (const c of connections) await c.close();
      },
    };
  }

  describeContentLockContract(`${name}, two connections`, async () => {
    const shared = await sharedDatabase();
    return { holders: [new MongoContentLock(shared.databases[0].contentLocks), new MongoContentLock(shared.databases[1].contentLocks)], close: shared.close };
  });

  describe(`content lock on ${name}: leases`, () => {
    let shared: Awaited<ReturnType<typeof sharedDatabase>>;
    beforeEach(async () => {
      shared = await sharedDatabase();
    });
    afterEach(async () => {
      await shared.close();
    });

    it('takes a key whose holder crashed once that holder\'s lease has ended', async () => {
      const key = randomUUID();
      await shared.databases[0].contentLocks.insertOne({ _id: key, holder: 'crashed process', expiresAt: new Date(Date.now() - 1) });
      await expect(new MongoContentLock(shared.databases[1].contentLocks).run(key, async () => 'ran')).resolves.toBe('ran');
      expect(await shared.databases[1].contentLocks.countDocuments({ _id: key })).toBe(0);
    });

    it('waits for a key another process holds and gives up with UnavailableError, without running the task, when it stays held', async () => {
      const key = randomUUID();
      await shared.databases[0].contentLocks.insertOne({ _id: key, holder: 'other process', expiresAt: new Date(Date.now() + 60_000) });
      let ran = false;
      const task = async () => {
        ran = true;
      };
      await expect(new MongoContentLock(shared.databases[1].contentLocks, { maxWaitMs: 50 }).run(key, task)).rejects.toThrow(UnavailableError);
      expect(ran).toBe(false);
      expect(await shared.databases[1].contentLocks.findOne({ _id: key })).toMatchObject({ holder: 'other process' });
    });
  });

  it(`counts the cards on ${name} from the collection's metadata, reading no document`, async () => {
    await withScratchDatabase(async (connection) => {
      const store = await openMongoCardsStore(connection);
      for (const c of [aCard().build(), aCard().private().build()]) await store.cards.insert(c, fingerprintOf(c.content), []);
      // countDocuments({}) is an aggregation over every document ($match, $group): a collection scan on a big store.
      // estimatedDocumentCount() sends the count command without a query, answered from the collection's metadata.
      const cards = store.database.cards;
      const reads = (['countDocuments', 'aggregate', 'find', 'findOne'] as const).map((method) => jest.spyOn(cards, method));
      const metadata = jest.spyOn(cards, 'estimatedDocumentCount');
      try {
        expect(await store.cards.count()).toBe(2);
        for (const read of reads) expect(read).not.toHaveBeenCalled();
        expect(metadata).toHaveBeenCalledTimes(1);
      } finally {
        jest.restoreAllMocks();
      }
    });
  });

  // Races the adapter must survive without transactions (mongo-java-server and standalone MongoDB have none).
  describe(`cards store on ${name}: races without transactions`, () => {
    let store: CardsStoreFixture;
    beforeEach(async () => {
      store = await mongo();
    });
    afterEach(async () => {
      await store.close();
    });

    it('keeps one vote when the same user votes many times at once; counters match it', async () => {
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const results = await Promise.all(Array.from({ length: 30 }, (_, i) => store.votes.upsert('same-user', card.id, i % 2 === 0, nextTime(), randomUUID())));
      expect(new Set(results.map((v) => v?.id)).size).toBe(1);
      expect(await store.votes.countCastBy('same-user')).toBe(1);
      const value = (await store.votes.votesOf('same-user', [card.id])).get(card.id);
      const stored = await store.cards.findById(card.id);
      expect({ up: stored!.totalUpvotes, down: stored!.totalDownvotes }).toEqual(value ? { up: 1, down: 0 } : { up: 0, down: 1 });
      expect(await store.votes.received(card.authorId)).toEqual({ upvotes: stored!.totalUpvotes, downvotes: stored!.totalDownvotes });
    });

    it('leaves no vote and no received count behind when votes race the removal of their card', async () => {
      const author = randomUUID();
      const card = aCard().by(author).build();
      const other = aCard().by(author).build();
      for (const c of [card, other]) await store.cards.insert(c, fingerprintOf(c.content), []);
      await store.votes.upsert('keeper', other.id, true, nextTime(), randomUUID());
      const voters = Array.from({ length: 100 }, (_, i) => `voter-${i}`);
      await Promise.all(voters.slice(0, 30).map((u) => store.votes.upsert(u, card.id, true, nextTime(), randomUUID())));
      await Promise.all([
        ...voters.map((u, i) => store.votes.upsert(u, card.id, i % 3 !== 0, nextTime(), randomUUID())),
        store.cards.remove(card.id, [], [{ topic: Topics.card, key: card.id, payload: new Uint8Array([1]) }]),
        ...voters.slice(0, 10).map((u) => store.votes.remove(u, card.id)),
      ]);
      expect(await store.cards.findById(card.id)).toBeNull();
      expect(await store.votes.votesOf('voter-5', [card.id])).toEqual(new Map());
      expect((await Promise.all(voters.map((u) => store.votes.countCastBy(u)))).reduce((a, b) => a + b, 0)).toBe(0);
      expect(await store.votes.received(author)).toEqual({ upvotes: 1, downvotes: 0 });
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
    });

    it('counts the public votes of authors stored before they were counted apart, once, when the store opens', async () => {
      await withScratchDatabase(async (connection) => {
      const author = randomUUID();
      const first = await openMongoCardsStore(connection);
      const open = aCard().by(author).build();
      const hidden = aCard().by(author).private().build();
      for (const c of [open, hidden]) await first.cards.insert(c, fingerprintOf(c.content), []);
      await first.database.cards.updateOne({ _id: open.id }, { $set: { totalUpvotes: 3, totalDownvotes: 1 } });
      await first.database.cards.updateOne({ _id: hidden.id }, { $set: { totalUpvotes: 5, totalDownvotes: 2 } });
      // The counter document as the earlier version wrote it.
      await connection.db.collection('author_scores').insertOne({ _id: author as never, upvotes: 8, downvotes: 3, score: 5, votes: 11, joinedAt: null, joinUnknown: true });
      await forgetStartMigrations(connection);
      const reopened = await openMongoCardsStore(connection);
      expect(await reopened.votes.received(author)).toEqual({ upvotes: 3, downvotes: 1 });
      expect(await reopened.votes.received(author, true)).toEqual({ upvotes: 8, downvotes: 3 });
      expect(await reopened.votes.topAuthors(0, 10)).toEqual([{ userId: author, score: 2 }]);
      await reopened.votes.upsert('v', open.id, true, nextTime(), randomUUID());
      await openMongoCardsStore(connection);
      expect(await reopened.votes.received(author)).toEqual({ upvotes: 4, downvotes: 1 });
      });
    });

    it('marks as hidden by their file, when the store opens, only the cards stored before the mark that a private file made private at upload and that never changed since', async () => {
      await withScratchDatabase(async (connection) => {
      const [owner, fileId] = [randomUUID(), randomUUID()];
      const first = await openMongoCardsStore(connection);
      const ingestedPrivate = aCard().by(owner).fromFile(fileId, 'a.docx').private().withIdempotencyKey(`${fileId}:0`).build();
      // Changed since (its owner's privacy choice, or the file's earlier privacy change: which one is unknown).
      const changedSince = aCard().by(owner).fromFile(fileId, 'a.docx').private().withIdempotencyKey(`${fileId}:1`).build();
      const ingestedPublic = aCard().by(owner).fromFile(fileId, 'a.docx').withIdempotencyKey(`${fileId}:2`).build();
      // Written by hand (no ingestion key), private from the start: its owner's choice.
      const byHand = aCard().by(owner).fromFile(fileId, 'a.docx').private().build();
      for (const c of [ingestedPrivate, changedSince, ingestedPublic, byHand]) await first.cards.insert(c, fingerprintOf(c.content), []);
      // The documents as the earlier version wrote them: no mark.
      await first.database.cards.updateMany({ fileId }, { $unset: { hiddenByFile: '' } });
      await first.database.cards.updateOne({ _id: changedSince.id }, { $set: { updatedAt: nextTime() } });
      await forgetStartMigrations(connection);
      const reopened = await openMongoCardsStore(connection);
      const marks = async () => new Map((await reopened.cards.findByFile(fileId)).map((c) => [c.id, c.hiddenByFile]));
      const expected = new Map([[ingestedPrivate.id, true], [changedSince.id, false], [ingestedPublic.id, false], [byHand.id, false]]);
      expect(await marks()).toEqual(expected);
      await openMongoCardsStore(connection);
      expect(await marks()).toEqual(expected);
      });
    });

    it("gives the cards stored before their file's privacy was kept the privacy of the file's collection, else of their hidden-by-file mark, when the store opens", async () => {
      await withScratchDatabase(async (connection) => {
        const [owner, privateFile, publicFile, uncollected] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
        const first = await openMongoCardsStore(connection);
        for (const [fileId, isPublic] of [[privateFile, false], [publicFile, true]] as const) await first.collections.insert({ ...aCollection().by(owner).forFile(fileId).build(), isPublic }, []);
        // Public by its owner's choice while its file is private: the card the file's privacy must not show the file on.
        const publishedOfPrivate = aCard().by(owner).fromFile(privateFile, 'a.docx').build();
        const ofPublic = aCard().by(owner).fromFile(publicFile, 'b.docx').build();
        const hiddenUncollected = aCard().by(owner).fromFile(uncollected, 'c.docx').hiddenByFile().build();
        const publicUncollected = aCard().by(owner).fromFile(uncollected, 'c.docx').build();
        const cards = [publishedOfPrivate, ofPublic, hiddenUncollected, publicUncollected];
        for (const c of cards) await first.cards.insert(c, fingerprintOf(c.content), []);
        // The documents as the earlier version wrote them: no file privacy.
        await first.database.cards.updateMany({}, { $unset: { filePrivate: '' } });
        await forgetStartMigrations(connection);
        const reopened = await openMongoCardsStore(connection);
        const filePrivacy = async () => Promise.all(cards.map(async (c) => (await reopened.cards.findById(c.id))?.filePrivate));
        expect(await filePrivacy()).toEqual([true, false, true, false]);
        expect(await reopened.database.cards.countDocuments({ filePrivate: { $exists: false } })).toBe(0);
      });
    });

    it('counts the cards stored before the look-again mark (no such field) as owing none', async () => {
      await withScratchDatabase(async (connection) => {
        const store = await openMongoCardsStore(connection);
        const root = aCard().build();
        const collision = aCard().collisionOf(root.id).withContent(root.content).build();
        for (const c of [root, collision]) await store.cards.insert(c, fingerprintOf(c.content), []);
        // The documents as the earlier version wrote them: no mark.
        await store.database.cards.updateMany({}, { $unset: { lookAgainOwed: '' } });
        expect(await store.cards.findWithLookAgainOwed(root.id)).toBeNull();
        expect(await store.cards.findCollisionsWithLookAgainOwed(10)).toEqual([]);
        expect(await store.cards.findById(collision.id)).toEqual(collision);
      });
    });

    it("gives the bookmarks stored before owners were kept their collection's owner when the store opens, and the lookup finds them", async () => {
      await withScratchDatabase(async (connection) => {
      const [owner, stranger] = [randomUUID(), randomUUID()];
      const first = await openMongoCardsStore(connection);
      const root = aCard().build();
      const copy = aCard().collisionOf(root.id).build();
      for (const c of [root, copy]) await first.cards.insert(c, fingerprintOf(c.content), []);
      const [older, newer, strangers] = [aCollection().by(owner).build(), aCollection().by(owner).build(), aCollection().by(stranger).build()];
      for (const c of [newer, strangers, older]) await first.collections.insert(c, []);
      for (const [c, card] of [[newer, root], [older, copy], [strangers, root], [strangers, copy]] as const) await first.collections.addBookmark(c.id, card.id, nextTime(), []);
      // The documents as the earlier version wrote them: no owner.
      await first.database.bookmarks.updateMany({}, { $unset: { ownerId: '' } });
      await forgetStartMigrations(connection);
      const reopened = await openMongoCardsStore(connection);
      const expected = [
        { cardId: copy.id, collectionId: older.id },
        { cardId: root.id, collectionId: newer.id },
      ];
      expect(await reopened.collections.collectionsOfOwnerHolding(owner, [root.id, copy.id])).toEqual(expected);
      expect(await reopened.collections.collectionsOfOwnerHolding(stranger, [root.id])).toEqual([{ cardId: root.id, collectionId: strangers.id }]);
      expect(await reopened.database.bookmarks.countDocuments({ ownerId: { $exists: false } })).toBe(0);
      await openMongoCardsStore(connection);
      expect(await reopened.collections.collectionsOfOwnerHolding(owner, [root.id, copy.id])).toEqual(expected);
      });
    });

    it('finds a bookmark written without an owner after the store opened (an older replica during a rolling upgrade)', async () => {
      await withScratchDatabase(async (connection) => {
      const opened = await openMongoCardsStore(connection);
      const [owner, stranger] = [randomUUID(), randomUUID()];
      const card = aCard().build();
      await opened.cards.insert(card, fingerprintOf(card.content), []);
      const [mine, theirs] = [aCollection().by(owner).build(), aCollection().by(stranger).build()];
      for (const c of [mine, theirs]) await opened.collections.insert(c, []);
      for (const c of [mine, theirs]) await opened.collections.addBookmark(c.id, card.id, nextTime(), []);
      // As a process of the earlier version writes them, after this one filled in the owners at start.
      await opened.database.bookmarks.updateMany({ cardId: card.id }, { $unset: { ownerId: '' } });
      expect(await opened.collections.collectionsOfOwnerHolding(owner, [card.id])).toEqual([{ cardId: card.id, collectionId: mine.id }]);
      expect(await opened.collections.collectionsOfOwnerHolding(stranger, [card.id])).toEqual([{ cardId: card.id, collectionId: theirs.id }]);
      });
    });

    it('adds a bookmark once when the same bookmark is added many times at once, with one event', async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const added = await Promise.all(Array.from({ length: 20 }, () => store.collections.addBookmark(c.id, card.id, nextTime(), [{ topic: Topics.bookmark, key: c.id, payload: new Uint8Array([1]) }])));
      expect(added.filter((r) => r === 'added')).toHaveLength(1);
      expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([card.id]);
      expect(await store.pendingEventTopics()).toEqual([Topics.bookmark]);
    });

    it('takes back a bookmark whose card or collection is removed between its checks and its write (file collections too)', async () => {
      const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger });
      try {
        const opened = await openMongoCardsStore(connection);
        const { bookmarks } = opened.database;
        const insertOne = bookmarks.insertOne.bind(bookmarks);
        // The removal runs to its end (its sweep of the bookmarks included) just before the bookmark is written.
        const removedJustBeforeTheWrite = (removal: () => Promise<unknown>) =>
          jest.spyOn(bookmarks, 'insertOne').mockImplementationOnce((async (...args: Parameters<typeof insertOne>) => {
            await removal();
            return insertOne(...args);
          }) as typeof insertOne);

        const collection = aCollection().build();
        await opened.collections.insert(collection, []);
        const [card, other] = [aCard().build(), aCard().build()];
        for (const c of [card, other]) await opened.cards.insert(c, fingerprintOf(c.content), []);
        removedJustBeforeTheWrite(() => opened.cards.remove(card.id, [], []));
        expect(await opened.collections.addBookmark(collection.id, card.id, nextTime(), [])).toBe('card-gone');
        expect(await opened.collections.bookmarkedCardIds(collection.id)).toEqual([]);

        const doomed = aCollection().build();
        await opened.collections.insert(doomed, []);
        removedJustBeforeTheWrite(() => opened.collections.remove(doomed.id, []));
        expect(await opened.collections.addBookmark(doomed.id, other.id, nextTime(), [])).toBe('collection-gone');
        expect(await opened.collections.collectionIdsHolding(other.id)).toEqual([]);

        // A file's collection is written with all its bookmarks at once: a card removed just before keeps none.
        const [kept, removed] = [aCard().build(), aCard().build()];
        for (const c of [kept, removed]) await opened.cards.insert(c, fingerprintOf(c.content), []);
        const insertMany = bookmarks.insertMany.bind(bookmarks);
        jest.spyOn(bookmarks, 'insertMany').mockImplementationOnce((async (...args: Parameters<typeof insertMany>) => {
          await opened.cards.remove(removed.id, [], []);
          return insertMany(...args);
        }) as typeof insertMany);
        const { collection: fileCollection } = await opened.collections.insertFileCollection(aCollection().forFile(randomUUID()).build(), [kept.id, removed.id], () => []);
        expect(await opened.collections.bookmarkedCardIds(fileCollection.id)).toEqual([kept.id]);
      } finally {
        jest.restoreAllMocks();
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });

    it('creates one collection per file when a file\'s collection is created many times at once', async () => {
      const fileId = randomUUID();
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const results = await Promise.all(
        Array.from({ length: 10 }, () => store.collections.insertFileCollection(aCollection().forFile(fileId).build(), [card.id], () => [{ topic: Topics.collection, key: fileId, payload: new Uint8Array([1]) }])),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(new Set(results.map((r) => r.collection.id)).size).toBe(1);
      expect(await store.collections.bookmarkedCardIds(results[0]!.collection.id)).toEqual([card.id]);
      expect(await store.pendingEventTopics()).toEqual([Topics.collection]);
    });
  });

  describe(`collection page on ${name}`, () => {
    let store: CardsStoreFixture;
    beforeEach(async () => {
      store = await mongo();
    });
    afterEach(async () => {
      jest.restoreAllMocks();
      await store.close();
    });

    it('reads a page of roots from the bookmark order in batches and stops at it, and counts a collection once until it changes', async () => {
      const owner = randomUUID();
      const c = aCollection().by(owner).build();
      await store.collections.insert(c, []);
      let root: Card | undefined;
      for (let i = 0; i < 300; i++) {
        const card = i % 3 === 2 ? aCard().collisionOf(root!.id).build() : i % 5 === 0 ? aCard().by(owner).private().build() : aCard().build();
        await store.cards.insert(card, fingerprintOf(card.content), []);
        if (card.collisionOf === null) root = card;
        await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      }
      await store.collections.countVisibleBookmarkedRoots(c.id, owner);
      const aggregate = jest.spyOn(MongoCollection.prototype, 'aggregate');
      const find = jest.spyOn(MongoCollection.prototype, 'find');
      const limits = jest.spyOn(FindCursor.prototype, 'limit');
      const page = await store.collections.listVisibleBookmarkedRoots(c.id, owner, 160, 20);
      expect(page).toHaveLength(20);
      // Before: $lookup, $group and $sort over every bookmark of the collection for each page.
      expect(aggregate).not.toHaveBeenCalled();
      // Now: the bookmarks from the kept start of root 150 on, one batch, and the earlier bookmarks of the groups found.
      const bookmarkReads = find.mock.calls.filter((_, i) => (find.mock.contexts[i] as MongoCollection).collectionName === 'bookmarks');
      expect(bookmarkReads).toHaveLength(2);
      expect(bookmarkReads[0]![0]).toEqual({ collectionId: c.id, ord: { $gte: expect.any(Number) } });
      const batches = limits.mock.calls.map(([n]) => n).filter((n) => Math.abs(n) > 1); // findOne's own limit aside
      expect(batches).toEqual([expect.any(Number)]);
      expect(batches[0]).toBeLessThan(100);
      const all = await store.collections.listVisibleBookmarkedRoots(c.id, owner, 0, 1000);
      expect(page).toEqual(all.slice(160, 180));
      for (const offset of [49, 50, 51, 199]) expect(await store.collections.listVisibleBookmarkedRoots(c.id, owner, offset, 20)).toEqual(all.slice(offset, offset + 20));
      expect(await store.collections.listVisibleBookmarkedRoots(c.id, owner, all.length, 20)).toEqual([]);

      const total = await store.collections.countVisibleBookmarkedRoots(c.id, owner);
      expect(total).toBe(all.length);
      aggregate.mockClear();
      // Before: the count aggregated every bookmark again on each page.
      expect(await store.collections.countVisibleBookmarkedRoots(c.id, owner)).toBe(total);
      expect(aggregate).not.toHaveBeenCalled();
      const late = aCard().build();
      await store.cards.insert(late, fingerprintOf(late.content), []);
      await store.collections.addBookmark(c.id, late.id, nextTime(), []);
      expect(await store.collections.countVisibleBookmarkedRoots(c.id, owner)).toBe(total + 1);
      // Before: the first count after any change aggregated the whole collection again. Now: the changed block only.
      expect(aggregate).not.toHaveBeenCalled();
      const shown = (await store.cards.findById(all[100]!))!;
      await store.cards.update({ ...shown, private: true, updatedAt: nextTime() }, null, []);
      await store.cards.remove(late.id, [], []);
      await store.cards.update({ ...shown, private: false, updatedAt: nextTime() }, null, []);
      const after = await store.collections.listVisibleBookmarkedRoots(c.id, owner, 0, 1000);
      expect(await store.collections.countVisibleBookmarkedRoots(c.id, owner)).toBe(after.length);
      expect(after).toEqual(all);
      expect(aggregate).not.toHaveBeenCalled();
    });

    it('reads kept roots whole again after KEPT_ROOTS_MS, so a change whose marking was cut off is stale only that long', async () => {
      const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger });
      try {
        const db = await openMongoCardsDatabase(connection);
        const t0 = new Date('2026-11-23T20:00:00Z');
        const at = (ms: number) => new Date(t0.getTime() + ms);
        let reads = 0;
        /** Every read whole finds one more root, in block 0. */
        const read = async () => Array.from({ length: ++reads }, (_, i) => i + 1);
        const counted: number[] = [];
        const countBlock = async (block: number) => {
          counted.push(block);
          return 7;
        };
        const n = async (viewer: string | null, when: Date) => (await keptRoots(db, 'c1', viewer, read, countBlock, when)).n;
        expect(await n(null, t0)).toBe(1);
        // Kept: nothing was marked, and it is younger than KEPT_ROOTS_MS.
        expect(await n(null, at(KEPT_ROOTS_MS - 1))).toBe(1);
        expect(await n('viewer', at(1000))).toBe(2);
        // A change written but never marked (the process cut off before raising its blocks): read whole again once old.
        expect(await n(null, at(KEPT_ROOTS_MS))).toBe(3);
        expect(await n('viewer', at(KEPT_ROOTS_MS + 999))).toBe(2); // each viewer's counts by their own age
        expect(await n('viewer', at(KEPT_ROOTS_MS + 1000))).toBe(4);
        expect(await n(null, at(KEPT_ROOTS_MS + 2))).toBe(3);
        expect(counted).toEqual([]);
        // A marked block is counted again, and only it: 3 roots in block 0, then 7 in block 3.
        await markBlocks(db, new Map([['c1', new Set([3])]]));
        expect(await keptRoots(db, 'c1', null, read, countBlock, at(KEPT_ROOTS_MS + 3))).toEqual({ n: 10, blocks: [3, 0, 0, 7] });
        expect(await n(null, at(KEPT_ROOTS_MS + 4))).toBe(10);
        expect(counted).toEqual([3]);
        // A change whose blocks are not known makes them read whole at once.
        await forgetRootCounts(db, ['c1']);
        expect(await n(null, at(KEPT_ROOTS_MS + 5))).toBe(5);
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });

    it('keeps no count a release before 5d8f480 (bookmark_root_counts) would serve stale after changes made here, nor one of ours after its changes', async () => {
      // That release's keeping of a viewer's roots and its forgetting after a change, copied from its
      // mongo-bookmark-root-counts.ts (keptRoots, forgetRootCounts); it ran as a replica beside this one in a rolling
      // upgrade, or alone after a rollback.
      interface RootCountsDocument { _id: string; gen: number; rootsGen?: number; rootsAt?: Date; roots?: Record<string, unknown> }
      await withScratchDatabase(async (connection) => {
        const here = await openMongoCardsStore(connection);
        const rootCounts = connection.db.collection<RootCountsDocument>('bookmark_root_counts');
        const oldForgetRootCounts = async (collectionIds: Iterable<string>) => {
          const ids = [...new Set(collectionIds)];
          if (ids.length === 0) return;
          await rootCounts.bulkWrite(ids.map((_id) => ({ updateOne: { filter: { _id }, update: { $inc: { gen: 1 } }, upsert: true } })), { ordered: false });
        };
        const oldKeptRoots = async <T>(collectionId: string, viewerId: string | null, read: () => Promise<T>, now = new Date()): Promise<T> => {
          const key = viewerId === null ? 'anyone' : `v${viewerId}`;
          let doc = await rootCounts.findOne({ _id: collectionId });
          if (!doc) {
            await rootCounts.updateOne({ _id: collectionId }, { $setOnInsert: { gen: 0 } }, { upsert: true });
            doc = await rootCounts.findOne({ _id: collectionId });
            if (!doc) return read();
          }
          const { gen } = doc;
          const current = doc.rootsGen === gen && doc.rootsAt !== undefined && now.getTime() - doc.rootsAt.getTime() < KEPT_ROOTS_MS;
          const kept = current ? doc.roots?.[key] : undefined;
          if (kept !== undefined) return kept as T;
          const value = await read();
          if (current) await rootCounts.updateOne({ _id: collectionId, gen, rootsGen: gen, rootsAt: doc.rootsAt }, { $set: { [`roots.${key}`]: value } });
          else await rootCounts.updateOne({ _id: collectionId, gen }, { $set: { rootsGen: gen, rootsAt: now, roots: { [key]: value } } });
          return value;
        };

        const owner = randomUUID();
        const c = aCollection().by(owner).build();
        await here.collections.insert(c, []);
        const stored: Card[] = [];
        for (let i = 0; i < 12; i++) {
          const card = (i % 4 === 3 ? aCard().by(owner).private() : aCard()).build();
          await here.cards.insert(card, fingerprintOf(card.content), []);
          await here.collections.addBookmark(c.id, card.id, nextTime(), []);
          stored.push(card);
        }
        // What the old release counts (its read: the roots as they are now) and whether it counted or served kept.
        let reads = 0;
        const oldCount = (viewer: string | null) => oldKeptRoots(c.id, viewer, async () => (reads++, { n: (await here.collections.listVisibleBookmarkedRoots(c.id, viewer, 0, 1000)).length, starts: [] }));
        expect(await oldCount(null)).toEqual({ n: 9, starts: [] });
        expect(await oldCount(null)).toEqual({ n: 9, starts: [] });
        expect(reads).toBe(1);
        // Changes made here: the old release counts again (before: it served n 9 for KEPT_ROOTS_MS after each).
        const changes: [number, () => Promise<unknown>][] = [
          [10, async () => {
            const late = aCard().build();
            await here.cards.insert(late, fingerprintOf(late.content), []);
            await here.collections.addBookmark(c.id, late.id, nextTime(), []);
          }],
          [9, () => here.collections.removeEntry(c.id, stored[0]!.id, () => [])],
          [8, () => here.cards.update({ ...stored[1]!, private: true, updatedAt: nextTime() }, null, [])],
          [7, () => here.cards.remove(stored[2]!.id, [], [])],
        ];
        for (const [n, change] of changes) {
          await change();
          expect(await oldCount(null)).toEqual({ n, starts: [] });
        }
        expect(reads).toBe(5);

        // A change the old release makes (a bookmark, as its addBookmark wrote it, then its forgetting): counts kept
        // here are read whole again (before: they answered 7 until KEPT_ROOTS_MS).
        expect(await here.collections.countVisibleBookmarkedRoots(c.id, null)).toBe(7);
        const card = aCard().build();
        await here.cards.insert(card, fingerprintOf(card.content), []);
        const counter = await here.database.collections.findOneAndUpdate({ _id: c.id }, { $inc: { bookmarkSeq: 1 } }, { returnDocument: 'after' });
        await here.database.bookmarks.insertOne({ _id: `${c.id}:${card.id}`, collectionId: c.id, cardId: card.id, ownerId: owner, ord: counter!.bookmarkSeq, createdAt: nextTime() });
        await oldForgetRootCounts([c.id]);
        expect(await here.collections.countVisibleBookmarkedRoots(c.id, null)).toBe(8);
        expect(await here.collections.listVisibleBookmarkedRoots(c.id, null, 7, 10)).toEqual([card.id]);
        // Its own changes still only mend the blocks: no count read whole.
        const aggregate = jest.spyOn(MongoCollection.prototype, 'aggregate');
        await here.collections.removeEntry(c.id, card.id, () => []);
        expect(await here.collections.countVisibleBookmarkedRoots(c.id, null)).toBe(7);
        expect(aggregate).not.toHaveBeenCalled();
      });
    });
  });

  describe('a vote or a bookmark whose card is made private between its check and its write (no transaction)', () => {
    /** The store as `database`, but `collection`'s `method` first runs `before` (once): the change lands right there. */
    function changedBefore<K extends 'votes' | 'bookmarks'>(database: MongoCardsDatabase, collection: K, method: string, before: () => Promise<unknown>): MongoCardsDatabase {
      let pending = true;
      const wrapped = new Proxy(database[collection], {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop !== method || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
          return async (...args: unknown[]) => {
            if (pending) {
              pending = false;
              await before();
            }
            return value.apply(target, args);
          };
        },
      });
      return { ...database, [collection]: wrapped };
    }

    it('takes back a new vote or a flip whose card its author made private after the vote read it (null, nothing counted)', async () => {
      await withScratchDatabase(async (connection) => {
        const here = await openMongoCardsStore(connection);
        const author = randomUUID();
        const card = aCard().by(author).build();
        await here.cards.insert(card, fingerprintOf(card.content), []);
        await here.votes.upsert('early', card.id, true, nextTime(), randomUUID());
        let now = card;
        const makePrivate = async () => {
          now = { ...now, private: !now.private, updatedAt: nextTime() };
          await here.cards.update(now, null, []);
        };
        const voteAfterPrivate = new MongoVoteRepository(changedBefore(here.database, 'votes', 'insertOne', makePrivate));
        expect(await voteAfterPrivate.upsert('late', card.id, true, nextTime(), randomUUID(), { publicOnly: true })).toBeNull();
        expect(await here.votes.votesOf('late', [card.id])).toEqual(new Map());
        expect(await here.cards.findById(card.id)).toMatchObject({ private: true, totalUpvotes: 1, totalDownvotes: 0 });
        expect(await here.votes.received(author, true)).toEqual({ upvotes: 1, downvotes: 0 });
        expect(await here.votes.received(author)).toEqual({ upvotes: 0, downvotes: 0 });
        await makePrivate(); // public again
        const flipAfterPrivate = new MongoVoteRepository(changedBefore(here.database, 'votes', 'findOneAndUpdate', makePrivate));
        expect(await flipAfterPrivate.upsert('early', card.id, false, nextTime(), randomUUID(), { publicOnly: true })).toBeNull();
        expect(await here.votes.votesOf('early', [card.id])).toEqual(new Map([[card.id, true]]));
        expect(await here.cards.findById(card.id)).toMatchObject({ private: true, totalUpvotes: 1, totalDownvotes: 0 });
        expect(await here.votes.received(author, true)).toEqual({ upvotes: 1, downvotes: 0 });
        await makePrivate();
        expect(await here.votes.received(author)).toEqual({ upvotes: 1, downvotes: 0 });
      });
    });

    it("takes back a bookmark of someone else's card made private after the add checked it ('card-gone', with its removal event)", async () => {
      await withScratchDatabase(async (connection) => {
        const here = await openMongoCardsStore(connection);
        const owner = randomUUID();
        const c = aCollection().by(owner).build();
        await here.collections.insert(c, []);
        const card = aCard().build();
        await here.cards.insert(card, fingerprintOf(card.content), []);
        const makePrivate = () => here.cards.update({ ...card, private: true, updatedAt: nextTime() }, null, []);
        const collections = new MongoCollectionRepository(changedBefore(here.database, 'bookmarks', 'insertOne', makePrivate));
        const event = (payload: number) => ({ topic: Topics.bookmark, key: card.id, payload: new Uint8Array([payload]) });
        expect(await collections.addBookmark(c.id, card.id, nextTime(), [event(1)], { visibleToOwner: true, takenBackEvents: [event(0)] })).toBe('card-gone');
        expect(await here.collections.bookmarkedCardIds(c.id)).toEqual([]);
        // Made public again, the card does not come back into the collection; search was told of the add and its undoing.
        await here.cards.update({ ...card, private: false, updatedAt: nextTime() }, null, []);
        expect(await here.collections.countVisibleBookmarkedRoots(c.id, owner)).toBe(0);
        const outbox = new MongoOutboxStore(connection.db);
        expect((await outbox.pending(10)).map((e) => [e.topic, [...e.payload]])).toEqual([[Topics.bookmark, [1]], [Topics.bookmark, [0]]]);
      });
    });
  });
}
