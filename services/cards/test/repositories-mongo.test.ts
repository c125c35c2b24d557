import { randomBytes } from 'node:crypto';
import { connectMongo, createLogger, MongoOutboxStore } from '@cards/platform';
import { openMongoCardsStore } from '../src/adapters/mongo';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeCardRepositoryContract } from './card-repository.contract';
import { describeCollectionRepositoryContract } from './collection-repository.contract';
import { describeVoteRepositoryContract } from './vote-repository.contract';
import type { CardsStoreFactory } from './fixture';

const logger = createLogger('cards-repo-test', process.env.LOG_LEVEL ?? 'fatal');
// TEST_MONGO_URL points the suites at a real MongoDB; otherwise the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);
const name = external ? 'MongoDB (TEST_MONGO_URL)' : 'MongoDB (mongo-java-server)';

/** A fresh database per test, dropped afterwards. */
const mongo: CardsStoreFactory = async () => {
  const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger });
  const store = await openMongoCardsStore(connection);
  const outbox = new MongoOutboxStore(connection.db);
  return {
    cards: store.cards,
    votes: store.votes,
    collections: store.collections,
    pendingEventTopics: async () => (await outbox.pending(1000)).map((e) => e.topic),
    close: async () => {
      await connection.db.dropDatabase().catch(() => undefined);
      await connection.close();
    },
  };
};

if (skipReason) {
  console.warn(`SKIPPED cards store contracts on MongoDB: ${skipReason}`);
  it.skip(`cards store contracts on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describeCardRepositoryContract(name, mongo);
  describeVoteRepositoryContract(name, mongo);
  describeCollectionRepositoryContract(name, mongo);
}
