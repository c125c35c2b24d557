import { join } from 'node:path';
import { connectMongo, keptKeyExpiry, mongoEngineCheck, MongoOutboxStore, SqliteOutboxStore, writesWaitBetweenTries, type EngineCheck, type Logger, type OutboxStore } from '@cards/platform';
import { InProcessContentLock } from './adapters/in-process/in-process-content-lock';
import { openMongoCardsStore } from './adapters/mongo';
import { MongoEventOutbox } from './adapters/mongo/mongo-event-outbox';
import { openCardsDatabase } from './adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from './adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from './adapters/sqlite/sqlite-collection-repository';
import { SqliteEventOutbox } from './adapters/sqlite/sqlite-event-outbox';
import { SqliteOneTimeTasks } from './adapters/sqlite/sqlite-one-time-tasks';
import { SqliteSearchIndexRebuildProgress } from './adapters/sqlite/sqlite-search-index-rebuild-progress';
import { SqliteVoteRepository } from './adapters/sqlite/sqlite-vote-repository';
import type { CardsConfig } from './config';
import type { CardRepository, CollectionRepository, ContentLock, EventOutbox, OneTimeTasks, SearchIndexRebuildProgress, VoteRepository } from './domain/ports';

/** Where the cards service's SQLite file lives under DATA_DIR. */
export const sqliteCardsPath = (dataDir: string) => join(dataDir, 'cards', 'cards.db');

export interface CardsStore {
  cards: CardRepository;
  votes: VoteRepository;
  collections: CollectionRepository;
  /** Serialises cards of one text: across processes on MongoDB; in process on SQLite, whose file one process owns. */
  contentLock: ContentLock;
  /** Work done once per store after the service reaches its peers. */
  oneTimeTasks: OneTimeTasks;
  /** Where the search index rebuild under way is, so one cut short by a stop is resumed (by the service, or the command's). */
  searchIndexRebuild: SearchIndexRebuildProgress;
  outbox: OutboxStore;
  /** The same outbox, for writers outside a change of state (operators' republishing). */
  eventOutbox: EventOutbox;
  /** The engine behind the store, probed for readiness (none for SQLite). */
  engines: EngineCheck[];
  /** For shutdown: closes at once while MongoDB does not answer, so the relay's drain under way fails instead of waiting for it. */
  closeIfUnreachable(): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * MongoDB when MONGO_URL is set (its own database "cards"), else SQLite under DATA_DIR; the outbox lives beside the data.
 * Keys of deleted cards and collections are kept IDEMPOTENCY_KEY_TTL_HOURS (the default when not given).
 */
export async function openCardsStore(config: Pick<CardsConfig, 'DATA_DIR' | 'MONGO_URL'> & Partial<Pick<CardsConfig, 'IDEMPOTENCY_KEY_TTL_HOURS'>>, logger: Logger): Promise<CardsStore> {
  const keyExpiry = keptKeyExpiry(config.IDEMPOTENCY_KEY_TTL_HOURS);
  if (config.MONGO_URL) {
    const connection = await connectMongo({ url: config.MONGO_URL, database: 'cards', logger });
    const store = await openMongoCardsStore(connection, keyExpiry).catch(async (err: unknown) => {
      await connection.close().catch(() => undefined);
      throw err;
    });
    return { ...store, outbox: new MongoOutboxStore(connection.db), eventOutbox: new MongoEventOutbox(connection.db), engines: [mongoEngineCheck(connection)], closeIfUnreachable: () => connection.closeIfUnreachable(), close: () => connection.close() };
  }
  logger.info('MONGO_URL not set: using the embedded SQLite store');
  const db = openCardsDatabase(sqliteCardsPath(config.DATA_DIR));
  // The writes of a request wait for another process's lock (an operator's sqlite3, the backup's begin) between tries,
  // the service answering meanwhile (docs/decisions.md, "Waiting for another process's lock on a SQLite store").
  return {
    cards: writesWaitBetweenTries(new SqliteCardRepository(db, keyExpiry), db, [
      'insert', 'update', 'remove', 'detachCollision', 'joinRoot', 'moveCollisions', 'clearLookAgainOwed', 'setVectorPointId',
      'setVerification', 'clearFileReferences', 'clearFileReferenceOf', 'noteFileChange', 'setFilePrivacy',
    ]),
    votes: writesWaitBetweenTries(new SqliteVoteRepository(db), db, ['upsert', 'remove', 'recordJoinDates']),
    collections: writesWaitBetweenTries(new SqliteCollectionRepository(db, keyExpiry), db, ['insert', 'insertFileCollection', 'update', 'remove', 'addBookmark', 'removeEntry']),
    contentLock: new InProcessContentLock(),
    oneTimeTasks: new SqliteOneTimeTasks(db),
    searchIndexRebuild: new SqliteSearchIndexRebuildProgress(db),
    outbox: new SqliteOutboxStore(db),
    eventOutbox: new SqliteEventOutbox(db),
    engines: [],
    closeIfUnreachable: async () => false,
    close: async () => {
      db.close();
    },
  };
}
