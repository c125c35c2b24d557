import { randomBytes } from 'node:crypto';
import { connectMongo, createLogger } from '@cards/platform';
import { MongoNotificationRepository } from '../src/adapters/mongo/mongo-notification-repository';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeNotificationRepositoryContract } from './notification-repository.contract';

const logger = createLogger('notifications-repo-test', process.env.LOG_LEVEL ?? 'fatal');
// TEST_MONGO_URL points the suite at a real MongoDB; otherwise the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

describeNotificationRepositoryContract(
  external ? 'mongodb (TEST_MONGO_URL)' : 'mongodb (mongo-java-server)',
  async () => {
    const connection = await connectMongo({ url: engine!.url, database: `notifications_test_${randomBytes(4).toString('hex')}`, logger });
    const repository = await MongoNotificationRepository.open(connection);
    return {
      repository,
      async close() {
        await connection.db.dropDatabase().catch(() => undefined);
        await repository.close();
      },
    };
  },
  skipReason,
);
