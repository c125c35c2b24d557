import { randomBytes } from 'node:crypto';
import { createLogger } from '../src/logger';
import { appendToMongoOutbox, connectMongo, MongoOutboxStore, withOptionalTransaction } from '../src/mongo';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeOutboxStoreContract } from './outbox-store.contract';

const logger = createLogger('outbox-mongo-test', process.env.LOG_LEVEL ?? 'fatal');
const { engine, skipReason } = engineForSuite('mongo-java-server', startMongoSync);

describeOutboxStoreContract(
  'mongodb (mongo-java-server)',
  async () => {
    const connection = await connectMongo({ url: engine!.url, database: `outbox_test_${randomBytes(4).toString('hex')}`, logger });
    return {
      store: new MongoOutboxStore(connection.db),
      append: (events) => withOptionalTransaction(connection, (session) => appendToMongoOutbox(connection.db, events, session)),
      async close() {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      },
    };
  },
  skipReason,
);

(engine ? describe : describe.skip)(`connectMongo${skipReason ? ` — skipped: ${skipReason.split('\n')[0]}` : ''}`, () => {
  it('fails fast, naming MONGO_URL without its password, when no server answers', async () => {
    const started = Date.now();
    await expect(connectMongo({ url: 'mongodb://cards:s3cret@127.0.0.1:1/', database: 'x', logger, serverSelectionTimeoutMs: 1000 })).rejects.toThrow(
      /^MongoDB at mongodb:\/\/cards:\*\*\*@127\.0\.0\.1:1\/ is unreachable \(MONGO_URL\)/,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('puts a service in its own database, prefixed when several systems share the server', async () => {
    const plain = await connectMongo({ url: engine!.url, database: 'identity', logger });
    const prefixed = await connectMongo({ url: engine!.url, database: 'identity', databasePrefix: 'system2', logger });
    try {
      expect(plain.db.databaseName).toBe('identity');
      expect(prefixed.db.databaseName).toBe('system2_identity');
    } finally {
      await Promise.all([plain.close(), prefixed.close()]);
    }
  });

  it('reports that the wire-protocol test server has no transactions, and ready() pings it', async () => {
    const connection = await connectMongo({ url: engine!.url, database: 'ready_check', logger });
    try {
      expect(connection.supportsTransactions).toBe(false);
      await expect(connection.ready()).resolves.toBeUndefined();
    } finally {
      await connection.close();
    }
    await expect(connection.ready()).rejects.toThrow(/unreachable \(MONGO_URL\)/);
  });
});
