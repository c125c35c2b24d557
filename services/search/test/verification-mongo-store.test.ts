import { randomBytes } from 'node:crypto';
import { connectMongo, createLogger } from '@cards/platform';
import { MongoVerificationStore } from '../src/verification/adapters/mongo/mongo-verification-store';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeVerificationStoreContract } from './verification-store.contract';

const logger = createLogger('verification-store-test', process.env.LOG_LEVEL ?? 'fatal');
// TEST_MONGO_URL points the suite at a real MongoDB; otherwise the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

describeVerificationStoreContract(
  external ? 'mongodb (TEST_MONGO_URL)' : 'mongodb (mongo-java-server)',
  async () => {
    const connection = await connectMongo({ url: engine!.url, database: `verification_test_${randomBytes(4).toString('hex')}`, logger });
    const store = await MongoVerificationStore.open(connection);
    const outbox = store.outbox();
    return {
      store,
      pendingEvents: () => outbox.pending(100),
      async cleanup() {
        // The store's close() has closed the connection; drop the database on a fresh one.
        const admin = await connectMongo({ url: engine!.url, database: connection.db.databaseName, logger });
        await admin.db.dropDatabase().catch(() => undefined);
        await admin.close();
      },
    };
  },
  skipReason,
);
