import { randomBytes } from 'node:crypto';
import type { EventBus, OutgoingEvent } from '../src/events/event-bus';
import { OutboxRelay } from '../src/events/outbox';
import { createLogger } from '../src/logger';
import { appendToMongoOutbox, connectMongo, MongoOutboxDrainLease, MongoOutboxStore, withOptionalTransaction, type MongoConnection } from '../src/mongo';
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

/** The shared broker as the relays see it: every publish recorded in arrival order, after a network round trip. */
class RecordingBus implements EventBus {
  readonly published: string[] = [];
  async publish(events: OutgoingEvent[]): Promise<void> {
    await new Promise((r) => setTimeout(r, 2));
    for (const e of events) this.published.push(`${e.key}:${new TextDecoder().decode(e.payload)}`);
  }
  async subscribe(): Promise<never> {
    throw new Error('not used');
  }
  async hasCommitted(): Promise<never> {
    throw new Error('not used');
  }
  async ready(): Promise<void> {}
  async close(): Promise<void> {}
}

(engine ? describe : describe.skip)(`two replicas relaying one MongoDB outbox${skipReason ? ` — skipped: ${skipReason.split('\n')[0]}` : ''}`, () => {
  let replicas: MongoConnection[] = [];
  beforeEach(async () => {
    const database = `outbox_replicas_${randomBytes(4).toString('hex')}`;
    replicas = [await connectMongo({ url: engine!.url, database, logger }), await connectMongo({ url: engine!.url, database, logger })];
  });
  afterEach(async () => {
    await replicas[0]!.db.dropDatabase().catch(() => undefined);
    await Promise.all(replicas.map((c) => c.close()));
  });

  it('publishes every entry once, in the order written, while both relays drain it', async () => {
    const bus = new RecordingBus();
    const relays = replicas.map((c) => new OutboxRelay(new MongoOutboxStore(c.db), bus, logger, { name: 'test', intervalMs: 50 }));
    relays.forEach((r) => r.start());
    const written: string[] = [];
    try {
      // Each replica writes its own requests' events and kicks its own relay, as the services do after a commit.
      for (let i = 0; i < 40; i++) {
        const replica = i % 2;
        const event = { topic: 'cards.card.v1', key: `card-${i % 3}`, payload: new TextEncoder().encode(`v${i}`) };
        await appendToMongoOutbox(replicas[replica]!.db, [event]);
        written.push(`card-${i % 3}:v${i}`);
        relays[replica]!.kick();
        if (i % 8 === 7) relays[1 - replica]!.kick();
      }
      const store = new MongoOutboxStore(replicas[0]!.db);
      for (let waited = 0; (await store.pending(1)).length > 0; waited += 20) {
        if (waited > 20_000) throw new Error('the outbox was not drained');
        await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await Promise.all(relays.map((r) => r.stop()));
    }
    expect(bus.published).toEqual(written);
  });

  it('a live lease keeps another relay out; an expired one (its holder crashed) is taken over', async () => {
    const leases = replicas[0]!.db.collection<{ _id: string; holder: string; expiresAt: Date }>('outbox_leases');
    const lease = new MongoOutboxDrainLease(replicas[1]!.db, 'outbox');
    let drained = 0;
    await leases.insertOne({ _id: 'outbox', holder: 'other replica', expiresAt: new Date(Date.now() + 60_000) });
    await expect(lease.run(async () => void drained++)).resolves.toBe(false);
    await leases.updateOne({ _id: 'outbox' }, { $set: { expiresAt: new Date(Date.now() - 1) } });
    await expect(lease.run(async () => void drained++)).resolves.toBe(true);
    expect(drained).toBe(1);
    // Released after the drain: the next one takes it at once.
    await expect(lease.run(async () => void drained++)).resolves.toBe(true);
    expect(await leases.countDocuments()).toBe(0);
  });
});
