import { randomBytes } from 'node:crypto';
import { connectMongo, createLogger, MongoOutboxStore } from '@cards/platform';
import { MongoFileRepository } from '../src/adapters/mongo/mongo-file-repository';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeFileRepositoryContract } from './file-repository.contract';

const logger = createLogger('files-repo-test', process.env.LOG_LEVEL ?? 'fatal');
// TEST_MONGO_URL points the suite at a real MongoDB; otherwise the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

if (skipReason) {
  console.warn(`SKIPPED FileRepository contract on MongoDB: ${skipReason}`);
  it.skip(`FileRepository contract: MongoFileRepository (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describeFileRepositoryContract(external ? 'MongoFileRepository (TEST_MONGO_URL)' : 'MongoFileRepository (mongo-java-server)', async (options) => {
    const connection = await connectMongo({ url: engine!.url, database: `files_test_${randomBytes(4).toString('hex')}`, logger });
    const repository = await MongoFileRepository.open(connection, options?.keyExpiry);
    const outbox = new MongoOutboxStore(connection.db);
    const closeConnection = repository.close.bind(repository);
    repository.close = async () => {
      await connection.db.dropDatabase().catch(() => undefined);
      await closeConnection();
    };
    return {
      repository,
      pendingEvents: () => outbox.pending(1000),
    };
  });
}
