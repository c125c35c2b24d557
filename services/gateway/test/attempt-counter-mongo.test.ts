import { randomBytes } from 'node:crypto';
import { connectMongo, createLogger } from '@cards/platform';
import { MongoAttemptCounter } from '../src/adapters/mongo/mongo-attempt-counter';
import { describeAttemptCounterContract } from './attempt-counter.contract';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';

const logger = createLogger('attempt-counter-mongo-test', process.env.LOG_LEVEL ?? 'fatal');
const { engine, skipReason } = engineForSuite('mongo-java-server', startMongoSync);
const aDatabase = () => `gateway_attempts_${randomBytes(4).toString('hex')}`;

describeAttemptCounterContract(
  'mongodb (mongo-java-server)',
  async (now) => {
    const connection = await connectMongo({ url: engine!.url, database: aDatabase(), logger });
    return {
      counter: await MongoAttemptCounter.open(connection.db, now),
      async close() {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      },
    };
  },
  skipReason,
);

describeOnEngine('MongoAttemptCounter shared by two gateway replicas on MongoDB (mongo-java-server)', skipReason, () => {
  it('counts the attempts both replicas record, made at once, in one count', async () => {
    const database = aDatabase();
    const replicas = [await connectMongo({ url: engine!.url, database, logger }), await connectMongo({ url: engine!.url, database, logger })];
    try {
      const [a, b] = await Promise.all(replicas.map((c) => MongoAttemptCounter.open(c.db)));
      await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a! : b!).record('login:email:someone@example.com', 60_000)));
      expect((await a!.record('login:email:someone@example.com', 60_000)).attempts).toBe(21);
      expect((await b!.record('login:email:someone@example.com', 60_000)).attempts).toBe(22);
    } finally {
      await replicas[0]!.db.dropDatabase().catch(() => undefined);
      await Promise.all(replicas.map((c) => c.close()));
    }
  });
});
