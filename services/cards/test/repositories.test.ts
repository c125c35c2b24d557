import { SqliteOutboxStore } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { describeCardRepositoryContract } from './card-repository.contract';
import { describeCollectionRepositoryContract } from './collection-repository.contract';
import { describeVoteRepositoryContract } from './vote-repository.contract';
import type { CardsStoreFactory } from './fixture';

const sqlite: CardsStoreFactory = async () => {
  const db = openCardsDatabase(':memory:');
  const outbox = new SqliteOutboxStore(db);
  return {
    cards: new SqliteCardRepository(db),
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db),
    pendingEventTopics: async () => (await outbox.pending(1000)).map((e) => e.topic),
    close: async () => {
      db.close();
    },
  };
};

describeCardRepositoryContract('SQLite', sqlite);
describeVoteRepositoryContract('SQLite', sqlite);
describeCollectionRepositoryContract('SQLite', sqlite);

// The MongoDB adapters run the same three suites in repositories-mongo.test.ts.
