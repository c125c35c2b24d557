import type { KeptKeyExpiry, MongoConnection } from '@cards/platform';
import { MongoCardRepository } from './mongo-card-repository';
import { openMongoCardsDatabase, type MongoCardsDatabase } from './mongo-cards-database';
import { MongoCollectionRepository } from './mongo-collection-repository';
import { MongoContentLock } from './mongo-content-lock';
import { MongoOneTimeTasks } from './mongo-one-time-tasks';
import { MongoSearchIndexRebuildProgress, type SearchIndexRebuildDocument } from './mongo-search-index-rebuild-progress';
import type { MigrationDocument } from './mongo-start-migrations';
import { MongoVoteRepository } from './mongo-vote-repository';

export { MongoCardRepository, MongoCollectionRepository, MongoContentLock, MongoOneTimeTasks, MongoSearchIndexRebuildProgress, MongoVoteRepository, openMongoCardsDatabase, type MongoCardsDatabase };

/**
 * Every repository of the cards service on one MongoDB database (indexes created on open). `keyExpiry`: how long the
 * keys of deleted resources are kept (IDEMPOTENCY_KEY_TTL_HOURS; 24 h by the real clock when not given).
 */
export async function openMongoCardsStore(connection: MongoConnection, keyExpiry?: KeptKeyExpiry) {
  const database = await openMongoCardsDatabase(connection, keyExpiry);
  const collections = new MongoCollectionRepository(database);
  // A collection's removal cut short by a stop (no transactions) left its bookmarks: they go now.
  await collections.resumeBookmarkSweeps();
  return {
    database,
    cards: new MongoCardRepository(database),
    votes: new MongoVoteRepository(database),
    collections,
    contentLock: new MongoContentLock(database.contentLocks),
    oneTimeTasks: new MongoOneTimeTasks(database.db.collection<MigrationDocument>('migrations')),
    searchIndexRebuild: new MongoSearchIndexRebuildProgress(database.db.collection<SearchIndexRebuildDocument>('search_index_rebuild')),
  };
}
