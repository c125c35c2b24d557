import { randomBytes, randomUUID } from 'node:crypto';
import { connectMongo, createLogger, type MongoConnection } from '@cards/platform';
import { MongoClient, type Document } from 'mongodb';
import { openMongoCardsStore } from '../src/adapters/mongo';
import { toCollectionDocument, type BookmarkDocument } from '../src/adapters/mongo/mongo-cards-database';
import { fingerprintOf } from '../src/domain/rules';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { aCard, aCollection, nextTime } from './builders';

// What opening the cards store on MongoDB costs and leaves: its indexes, and the migrations of older documents.
const logger = createLogger('cards-open-test', process.env.LOG_LEVEL ?? 'fatal');
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);
const name = external ? 'MongoDB (TEST_MONGO_URL)' : 'MongoDB (mongo-java-server)';

/** One database per test; the connections opened on it are closed and the database dropped afterwards. */
function scratchDatabase() {
  const database = `cards_test_${randomBytes(4).toString('hex')}`;
  const opened: MongoConnection[] = [];
  return {
    async connect(): Promise<MongoConnection> {
      const connection = await connectMongo({ url: engine!.url, database, logger });
      opened.push(connection);
      return connection;
    },
    /** A connection that notes every command it sends as `<command> <collection>`. */
    async connectNotingCommands(): Promise<{ connection: MongoConnection; commands: string[] }> {
      const client = new MongoClient(engine!.url, { monitorCommands: true });
      await client.connect();
      const commands: string[] = [];
      client.on('commandStarted', (e) => commands.push(`${e.commandName} ${String(e.command[e.commandName])}`));
      const connection: MongoConnection = { client, db: client.db(database), supportsTransactions: false, ready: async () => undefined, close: () => client.close(), closeIfUnreachable: async () => false };
      opened.push(connection);
      return { connection, commands };
    },
    async drop(): Promise<void> {
      await opened[0]?.db.dropDatabase().catch(() => undefined);
      for (const c of opened) await c.close();
    },
  };
}

const bookmarkIndexes = async (connection: MongoConnection) => (await connection.db.collection('bookmarks').listIndexes().toArray()).map((i) => i.name as string).sort();

/** Reads and writes of documents (not index or migration bookkeeping) among the commands noted. */
const documentWork = (commands: string[]) => commands.filter((c) => /^(find|aggregate|count|distinct|update|delete|findAndModify) (cards|author_scores|collections|bookmarks)$/.test(c));

/** A bookmark as the version before bookmark owners wrote it. */
const ownerlessBookmark = (collectionId: string, cardId: string, ord: number): BookmarkDocument => ({ _id: `${collectionId}:${cardId}`, collectionId, cardId, ord, createdAt: nextTime() });

if (skipReason) {
  console.warn(`SKIPPED cards store opening on MongoDB: ${skipReason}`);
  it.skip(`cards store opening on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describe(`opening the cards store on ${name}`, () => {
    let scratch: ReturnType<typeof scratchDatabase>;
    beforeEach(() => {
      scratch = scratchDatabase();
    });
    afterEach(async () => {
      await scratch.drop();
    });

    it('indexes bookmarks by card and owner, without the card-only index the card-and-owner one makes redundant', async () => {
      const connection = await scratch.connect();
      await openMongoCardsStore(connection);
      expect(await bookmarkIndexes(connection)).toEqual(['_id_', 'bookmarks_card_owner', 'bookmarks_collection_card', 'bookmarks_order']);
    });

    it('drops the card-only bookmark index an earlier version left, with two replicas starting at once, and starts again without it', async () => {
      const connection = await scratch.connect();
      await connection.db.collection('bookmarks').createIndex({ cardId: 1 }, { name: 'bookmarks_card' });
      await Promise.all([openMongoCardsStore(connection), openMongoCardsStore(await scratch.connect())]);
      expect(await bookmarkIndexes(connection)).not.toContain('bookmarks_card');
      await expect(openMongoCardsStore(await scratch.connect())).resolves.toBeDefined();
      expect(await bookmarkIndexes(connection)).toContain('bookmarks_card_owner');
    });

    it('reads no cards, counters or bookmarks at a start once a start found no older documents', async () => {
      const first = await scratch.connect();
      const store = await openMongoCardsStore(first);
      const collection = aCollection().build();
      await store.collections.insert(collection, []);
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      await store.collections.addBookmark(collection.id, card.id, nextTime(), []);
      const { connection, commands } = await scratch.connectNotingCommands();
      await openMongoCardsStore(connection);
      expect(documentWork(commands)).toEqual([]);
    });

    it("gives bookmarks an earlier replica writes during a rolling upgrade their owner at the next start, and keeps finding them for their owner once starts stop looking", async () => {
      const [owner, stranger] = [randomUUID(), randomUUID()];
      const [mine, theirs] = [aCollection().by(owner).build(), aCollection().by(stranger).build()];
      const [before, during, after] = [randomUUID(), randomUUID(), randomUUID()];
      const connection = await scratch.connect();
      const bookmarks = connection.db.collection<BookmarkDocument>('bookmarks');
      // The database as the earlier version left it.
      await connection.db.collection('collections').insertMany([toCollectionDocument(mine), toCollectionDocument(theirs)] as Document[]);
      await bookmarks.insertMany([ownerlessBookmark(mine.id, before, 1), ownerlessBookmark(theirs.id, before, 1)]);
      await openMongoCardsStore(connection);
      expect(await bookmarks.countDocuments({ ownerId: { $exists: false } })).toBe(0);

      // A replica of the earlier version, still running, bookmarks again; the next replica to start fills the owner in.
      await bookmarks.insertOne(ownerlessBookmark(mine.id, during, 2));
      await openMongoCardsStore(await scratch.connect());
      expect(await bookmarks.findOne({ cardId: during })).toMatchObject({ ownerId: owner });

      await openMongoCardsStore(await scratch.connect());
      // Written after a start found nothing left: no start looks for it any more, the lookup still finds it.
      await bookmarks.insertOne(ownerlessBookmark(mine.id, after, 3));
      const { connection: noted, commands } = await scratch.connectNotingCommands();
      const reopened = await openMongoCardsStore(noted);
      expect(documentWork(commands)).toEqual([]);
      expect(await reopened.collections.collectionsOfOwnerHolding(owner, [before, during, after])).toEqual([
        { cardId: before, collectionId: mine.id },
        { cardId: during, collectionId: mine.id },
        { cardId: after, collectionId: mine.id },
      ]);
      expect(await reopened.collections.collectionsOfOwnerHolding(stranger, [after])).toEqual([]);
    });

    it('removes the ownerless bookmarks of a collection that is gone, so no card reads as held by it', async () => {
      const card = randomUUID();
      const [kept, gone] = [aCollection().build(), aCollection().build()];
      const connection = await scratch.connect();
      await connection.db.collection('collections').insertOne(toCollectionDocument(kept) as Document);
      // Its removal stopped after the collection went and before its sweep of the bookmarks (no transaction).
      await connection.db.collection<BookmarkDocument>('bookmarks').insertMany([ownerlessBookmark(kept.id, card, 1), ownerlessBookmark(gone.id, card, 1)]);
      const store = await openMongoCardsStore(connection);
      expect(await store.collections.collectionIdsHolding(card)).toEqual([kept.id]);
      expect(await store.database.bookmarks.countDocuments({ ownerId: { $exists: false } })).toBe(0);
    });
  });

  // mongo-java-server has no explain command: this part needs a real MongoDB.
  const explainSkip = external ? undefined : 'mongo-java-server has no explain command; set TEST_MONGO_URL to a real MongoDB';
  if (explainSkip) console.warn(`SKIPPED bookmark reads by card use bookmarks_card_owner: ${explainSkip}`);
  (explainSkip ? describe.skip : describe)(`bookmark reads by card on ${name}${explainSkip ? ` (${explainSkip})` : ''}`, () => {
    let scratch: ReturnType<typeof scratchDatabase>;
    beforeEach(() => {
      scratch = scratchDatabase();
    });
    afterEach(async () => {
      await scratch.drop();
    });

    /** Every index name and stage of the winning plan, whatever the server version nests it in. */
    function planOf(explained: Document): { indexes: string[]; stages: string[] } {
      const indexes: string[] = [];
      const stages: string[] = [];
      const walk = (node: unknown) => {
        if (Array.isArray(node)) return node.forEach(walk);
        if (node === null || typeof node !== 'object') return;
        const o = node as Record<string, unknown>;
        if (typeof o.stage === 'string') stages.push(o.stage);
        if (typeof o.indexName === 'string') indexes.push(o.indexName);
        Object.values(o).forEach(walk);
      };
      walk((explained.queryPlanner as Document).winningPlan);
      return { indexes, stages };
    }

    it('serves every read and removal of bookmarks by card with bookmarks_card_owner, never a collection scan', async () => {
      const connection = await scratch.connect();
      await openMongoCardsStore(connection);
      const owner = randomUUID();
      const cards = Array.from({ length: 20 }, () => randomUUID());
      const collections = Array.from({ length: 30 }, (_, i) => aCollection().by(i === 0 ? owner : randomUUID()).build());
      await connection.db.collection('collections').insertMany(collections.map((c) => toCollectionDocument(c)) as Document[]);
      await connection.db
        .collection<BookmarkDocument>('bookmarks')
        .insertMany(collections.flatMap((c, i) => cards.map((card, j) => ({ ...ownerlessBookmark(c.id, card, j + 1), ownerId: c.authorId }))).filter((_, k) => k % 3 !== 0));
      const card = cards[1]!;
      const explain = (command: Document) => connection.db.command({ explain: command, verbosity: 'queryPlanner' });
      const reads: Record<string, Document> = {
        'collections holding a card (sorted by collection)': { find: 'bookmarks', filter: { cardId: card }, projection: { collectionId: 1 }, sort: { collectionId: 1 } },
        "the owner's bookmarks of cards (and the ownerless ones)": {
          find: 'bookmarks',
          filter: { cardId: { $in: cards.slice(0, 5) }, $or: [{ ownerId: owner }, { ownerId: { $exists: false } }] },
          projection: { cardId: 1, collectionId: 1 },
        },
        "a removed card's bookmarks": { delete: 'bookmarks', deletes: [{ q: { cardId: card }, limit: 0 }] },
      };
      for (const [read, command] of Object.entries(reads)) {
        const plan = planOf(await explain(command));
        expect({ read, indexes: [...new Set(plan.indexes)], collectionScan: plan.stages.includes('COLLSCAN') }).toEqual({ read, indexes: ['bookmarks_card_owner'], collectionScan: false });
      }
    });
  });
}
