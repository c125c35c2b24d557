import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { connectMongo, createLogger, type MongoConnection } from '@cards/platform';
import { openMongoCardsStore } from '../../services/cards/src/adapters/mongo';
import { openCardsDatabase } from '../../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../../services/cards/src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../../services/cards/src/adapters/sqlite/sqlite-collection-repository';
import type { CardRepository, CollectionRepository } from '../../services/cards/src/domain/ports';
import { fingerprintOf } from '../../services/cards/src/domain/rules';
import { aCard } from '../../services/cards/test/builders';
import { MongoFileRepository } from '../../services/files/src/adapters/mongo/mongo-file-repository';
import { SqliteFileRepository } from '../../services/files/src/adapters/sqlite/sqlite-file-repository';
import type { FileRepository } from '../../services/files/src/domain/ports';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { sharedEngineNamespace, startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';

/**
 * A user whose collections, or whose files, take more than one gRPC message (8 MiB), with every service in its own
 * process as the Helm chart runs them. Collections allow a 2,000-character description and files 100 tags of 200
 * characters, so a few thousand collections or a few hundred files are enough. They are stored through each
 * service's own repository on its store (SQLite, or its MongoDB database when the suite runs with MONGO_URL) while it
 * runs, as the service itself would store them: creating them over HTTP would take minutes.
 */
const COLLECTIONS = 4_500;
const FILES = 450;
/**
 * The bookmark lookup answers each listed card with the caller's collections holding any card of its duplicate group:
 * 500 cards of one group (an excerpt many people saved) held in 450 collections are 225,000 collection ids.
 */
const GROUP_CARDS = 500;
const GROUP_COLLECTIONS = 450;

async function mongoOf(running: RunningSystem, database: string): Promise<MongoConnection> {
  const { MONGO_DATABASE_PREFIX } = sharedEngineNamespace(running.dataDir);
  return connectMongo({ url: process.env.MONGO_URL!, database, databasePrefix: MONGO_DATABASE_PREFIX, logger: createLogger('e2e', 'silent') });
}

async function openCardsStoreOf(running: RunningSystem): Promise<{ cards: CardRepository; collections: CollectionRepository; close(): Promise<void> }> {
  if (!process.env.MONGO_URL) {
    const db = openCardsDatabase(join(running.dataDir, 'cards', 'cards.db'));
    return {
      cards: new SqliteCardRepository(db),
      collections: new SqliteCollectionRepository(db),
      close: async () => {
        db.close();
      },
    };
  }
  const connection = await mongoOf(running, 'cards');
  const store = await openMongoCardsStore(connection);
  return { cards: store.cards, collections: store.collections, close: () => connection.close() };
}

async function openFileStoreOf(running: RunningSystem): Promise<FileRepository> {
  if (!process.env.MONGO_URL) return new SqliteFileRepository(join(running.dataDir, 'files', 'files.db'));
  return MongoFileRepository.open(await mongoOf(running, 'files'));
}

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;
/** Newest first, as the listings answer. */
let collections: { id: string; name: string; description: string; isPublic: boolean; createdAt: Date }[];
let files: { id: string; isPrivate: boolean; createdAt: Date }[];
/** The duplicate group's card ids, and the ids of the collections holding it, oldest first. */
let groupCards: string[];
let groupCollections: string[];
/** The listings' order: newest first, equal creation times by id. */
const newestFirst = (a: { id: string; createdAt: Date }, b: { id: string; createdAt: Date }) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1);

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: 'distributed' } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'many-lists'), signUp(system.baseUrl, mailbox, 'many-lists-other')]);
  const start = Date.parse('2026-01-01T00:00:00.000Z');

  const cardsStore = await openCardsStoreOf(system);
  collections = [];
  for (let i = 0; i < COLLECTIONS; i++) {
    // Triples share a creation time: those list by id.
    const at = new Date(start + Math.floor(i / 3) * 1000);
    const collection = { id: randomUUID(), authorId: alice.id, name: `collection ${i}`, description: `${i} `.padEnd(2000, 'd'), isPublic: i % 3 !== 1, fileId: null, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
    await cardsStore.collections.insert(collection, []);
    collections.push(collection);
  }
  const root = aCard().build();
  groupCards = [root.id];
  await cardsStore.cards.insert(root, fingerprintOf(root.content), []);
  for (let i = 1; i < GROUP_CARDS; i++) {
    const copy = aCard().collisionOf(root.id).build();
    await cardsStore.cards.insert(copy, fingerprintOf(copy.content), []);
    groupCards.push(copy.id);
  }
  groupCollections = [];
  for (let i = 0; i < GROUP_COLLECTIONS; i++) {
    const at = new Date(start + i * 1000);
    const holder = { id: randomUUID(), authorId: bob.id, name: `holder ${i}`, description: '', isPublic: i % 2 === 0, fileId: null, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
    await cardsStore.collections.insert(holder, []);
    await cardsStore.collections.addBookmark(holder.id, groupCards[i % GROUP_CARDS]!, at, []);
    groupCollections.push(holder.id);
  }
  await cardsStore.close();
  collections.sort(newestFirst);

  const fileStore = await openFileStoreOf(system);
  files = [];
  for (let i = 0; i < FILES; i++) {
    const at = new Date(start + Math.floor(i / 3) * 1000);
    const id = randomUUID();
    const tags = Array.from({ length: 100 }, (_, t) => `${i}-${t}-`.padEnd(200, 't'));
    await fileStore.create(
      { id, userId: alice.id, fileName: `file ${i}.docx`, mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', format: 'docx', private: i % 3 === 1, size: 1000 + i, tags, ocFilePath: null, ingestionStatus: 'done', ingestionError: null, cardCount: 0, collectionId: null, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at },
      [],
    );
    files.push({ id, isPrivate: i % 3 === 1, createdAt: at });
  }
  await fileStore.close();
  files.sort(newestFirst);
}, 300_000);

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

const ids = (list: { id: string }[]) => list.map((x) => x.id);

describe('lists longer than one gRPC message holds (services in separate processes)', () => {
  it("a user's collections: all of them for the owner, newest first; only the public ones for anyone else", async () => {
    const own = await alice.client.get('/api/card_collection');
    expect(own.status).toBe(200);
    expect(ids(own.json)).toEqual(ids(collections));
    expect(own.json[0]).toEqual({ id: collections[0]!.id, author_id: alice.id, name: collections[0]!.name, description: collections[0]!.description, is_public: collections[0]!.isPublic, created_at: expect.any(String), updated_at: expect.any(String), file_id: null });

    expect(ids((await alice.client.get(`/api/user/collections/${alice.id}`)).json)).toEqual(ids(collections));
    const publicOnes = ids(collections.filter((c) => c.isPublic));
    for (const viewer of [bob.client, new ApiClient(system.baseUrl)]) {
      const seen = await viewer.get(`/api/user/collections/${alice.id}`);
      expect(seen.status).toBe(200);
      expect(ids(seen.json)).toEqual(publicOnes);
    }
  }, 120_000);

  it("a user's files: all of them for the owner, newest first; only the public ones for anyone else", async () => {
    const own = await alice.client.get(`/api/user/files/${alice.id}`);
    expect(own.status).toBe(200);
    expect(ids(own.json)).toEqual(ids(files));
    expect(own.json[0].tag_set.split(',')).toHaveLength(100);
    const publicOnes = ids(files.filter((f) => !f.isPrivate));
    for (const viewer of [bob.client, new ApiClient(system.baseUrl)]) {
      const seen = await viewer.get(`/api/user/files/${alice.id}`);
      expect(seen.status).toBe(200);
      expect(ids(seen.json)).toEqual(publicOnes);
    }
  }, 120_000);

  it("the bookmark lookup of 500 cards of one duplicate group held in 450 of the caller's collections answers every card", async () => {
    const res = await bob.client.post('/api/card_collection/bookmark', { collection_ids: groupCards.join(',') });
    expect(res.status).toBe(200);
    expect(res.json.map((e: { card_uuid: string }) => e.card_uuid)).toEqual(groupCards);
    // Compared as text: a deep comparison of 225,000 ids takes jest seconds.
    const held = groupCollections.join();
    expect(res.json.filter((e: { collection_ids: string[] }) => e.collection_ids.join() !== held)).toEqual([]);
    // Another user holds none of them.
    const other = await alice.client.post('/api/card_collection/bookmark', { collection_ids: groupCards });
    expect(other.json).toEqual(groupCards.map((card_uuid) => ({ card_uuid, collection_ids: [] })));
  }, 120_000);

  it('an unknown user is still 404 with a message', async () => {
    for (const path of [`/api/user/collections/${randomUUID()}`, `/api/user/files/${randomUUID()}`]) {
      const res = await bob.client.get(path);
      expect(res.status).toBe(404);
      expect(res.json).toEqual({ message: 'User not found' });
    }
  });
});
