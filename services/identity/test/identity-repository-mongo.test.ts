import { randomBytes } from 'node:crypto';
import { connectMongo, createLogger } from '@cards/platform';
import { MongoIdentityRepository } from '../src/adapters/mongo/mongo-identity-repository';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeIdentityRepositoryContract } from './identity-repository.contract';

const logger = createLogger('identity-repo-test', process.env.LOG_LEVEL ?? 'fatal');
// MONGO_URL points the suite at a real MongoDB (e.g. a replica set, to cover the transactional path);
// otherwise it starts the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

describeIdentityRepositoryContract(
  external ? 'mongodb (TEST_MONGO_URL)' : 'mongodb (mongo-java-server)',
  async () => {
    const connection = await connectMongo({ url: engine!.url, database: `identity_test_${randomBytes(4).toString('hex')}`, logger });
    const repository = await MongoIdentityRepository.open(connection);
    return {
      repository,
      async storeAsPreviousVersion({ users = [], sessions = [], resets = [] }) {
        // The documents the previous version wrote: no passwordVersion field.
        const { db } = connection;
        for (const { id, passwordVersion: _, ...u } of users) {
          await db.collection('users').insertOne({ _id: id as never, ...u, ...(u.username === null ? {} : { usernameLower: u.username.toLowerCase() }) });
        }
        for (const { id, passwordVersion: _, ...s } of sessions) await db.collection('sessions').insertOne({ _id: id as never, ...s });
        for (const { id, passwordVersion: _, ...r } of resets) await db.collection('password_resets').insertOne({ _id: id as never, ...r });
      },
      async close() {
        await connection.db.dropDatabase().catch(() => undefined);
        await repository.close();
      },
    };
  },
  skipReason,
);
