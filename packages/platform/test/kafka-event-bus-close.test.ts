import { join } from 'node:path';
import { createLogger } from '../src/logger';
import { openSqlite } from '../src/sqlite';
import { KafkaEventBus } from '../src/events/kafka-event-bus';
import { appendToSqliteOutbox, OutboxRelay, SQLITE_OUTBOX_MIGRATION, SqliteOutboxStore } from '../src/events/outbox';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startKafkaSync } from '../../../test/engines/kafka';
import { testTempDir } from '../../../test/support/cleanup';

const { engine: kafka, skipReason } = engineForSuite('kafka', startKafkaSync);
const settled = (work: Promise<unknown>) => work.then(() => 'resolved', (err: Error) => err.message);
const outboxIn = (dir: string) => openSqlite(join(testTempDir(dir), 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);

// No broker needed: a refused port is a Kafka cluster that is down. kafkajs retries a refused connect for seconds
// (the producer's retries ~20 s, the admin's and a consumer's ~8 s); a pod being stopped must not wait them out.
describe('KafkaEventBus closed while its brokers are down', () => {
  it('close() abandons the connects under way: a direct publish, ready() and subscribe() reject "event bus is closed", and the outbox keeps the events it could not publish', async () => {
    const lines: string[] = [];
    const logger = createLogger('kafka-outage-close-test', 'debug', { write: (line: string) => void lines.push(line) });
    const bus = new KafkaEventBus({ brokers: ['127.0.0.1:1'], logger, readyTimeoutMs: 60_000 });
    const db = outboxIn('kafka-outage-close-');
    const store = new SqliteOutboxStore(db);
    appendToSqliteOutbox(db, [1, 2, 3].map((n) => ({ topic: 'cards.card.v1', key: `card-${n}`, payload: Buffer.from(`event ${n}`) })));
    const relay = new OutboxRelay(store, bus, logger, { name: 'outage-close-test' });
    try {
      relay.start();
      const direct = settled(bus.publish([{ topic: 'cards.card.v1', key: 'card-9', payload: Buffer.from('in memory only') }]));
      const ready = settled(bus.ready());
      const subscribed = settled(bus.subscribe({ group: 'outage-close', topics: ['cards.card.v1'], handler: async () => undefined }));
      // Closed once kafkajs is retrying: it has logged a refused attempt.
      while (!lines.some((line) => line.includes('ECONNREFUSED'))) await new Promise((resolve) => setTimeout(resolve, 20));

      await Promise.all([relay.stop(), bus.close()]);
      // Each was abandoned by close(), not failed by kafkajs after its retries ran out (which names the connection error).
      expect({ direct: await direct, ready: await ready, subscribed: await subscribed }).toEqual({
        direct: 'event bus is closed',
        ready: 'event bus is closed',
        subscribed: 'event bus is closed',
      });
      expect(lines.filter((line) => /NumberOfRetriesExceeded|retries exceeded/i.test(line))).toEqual([]);
      const kept = await store.pending(10);
      expect(kept.map((e) => Buffer.from(e.payload).toString())).toEqual(['event 1', 'event 2', 'event 3']);
    } finally {
      await relay.stop();
      await bus.close();
      db.close();
    }
  }, 60_000);
});

// The broker went away under a bus that was connected and consuming: kafkajs reconnects and retries a send for ~15 s.
describeOnEngine('KafkaEventBus closed after its broker went away', skipReason, () => {
  it('close() does not wait out the send retries: the publish under way rejects "event bus is closed" and the outbox keeps its events', async () => {
    const lines: string[] = [];
    const logger = createLogger('kafka-broker-lost-close-test', 'debug', { write: (line: string) => void lines.push(line) });
    const bus = new KafkaEventBus({ brokers: [kafka!.brokers], logger, heartbeatIntervalMs: 300, sessionTimeoutMs: 6000 });
    const db = outboxIn('kafka-broker-lost-close-');
    const store = new SqliteOutboxStore(db);
    const relay = new OutboxRelay(store, bus, logger, { name: 'broker-lost-close-test' });
    try {
      await bus.publish([{ topic: 'cards.card.v1', key: 'card-0', payload: Buffer.from('before') }]);
      await bus.subscribe({ group: 'broker-lost-close', topics: ['cards.card.v1'], handler: async () => undefined });
      await kafka!.halt();
      const refusedBefore = lines.filter((line) => line.includes('ECONNREFUSED')).length;
      appendToSqliteOutbox(db, [1, 2].map((n) => ({ topic: 'cards.card.v1', key: `card-${n}`, payload: Buffer.from(`event ${n}`) })));
      relay.start();
      const direct = settled(bus.publish([{ topic: 'cards.card.v1', key: 'card-9', payload: Buffer.from('in memory only') }]));
      // Closed once kafkajs is reconnecting: it has logged a refused attempt since the broker went away.
      while (lines.filter((line) => line.includes('ECONNREFUSED')).length === refusedBefore) await new Promise((resolve) => setTimeout(resolve, 20));

      await Promise.all([relay.stop(), bus.close()]);
      // Abandoned by close(), not failed by kafkajs once its retries ran out (which names the refused connection).
      expect(await direct).toBe('event bus is closed');
      expect((await store.pending(10)).map((e) => Buffer.from(e.payload).toString())).toEqual(['event 1', 'event 2']);
    } finally {
      await relay.stop();
      await bus.close();
      db.close();
    }
  }, 120_000);
});
