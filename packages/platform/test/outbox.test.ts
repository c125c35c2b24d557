import { join } from 'node:path';
import { createLogger } from '../src/logger';
import { openSqlite } from '../src/sqlite';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { appendToSqliteOutbox, OutboxRelay, SQLITE_OUTBOX_MIGRATION, SqliteOutboxStore, type OutboxStore } from '../src/events/outbox';
import type { DeliveredEvent, EventBus } from '../src/events/event-bus';
import { startMetricsServer } from '../src/grpc-metrics';
import { runWithRequestContext } from '../src/request-context';
import { testTempDir } from '../../../test/support/cleanup';
import { holdSqliteWriteLock } from '../../../test/support/sqlite-lock-holder';

const logger = createLogger('test', 'silent');
const dir = () => testTempDir('outbox-');

async function collect(bus: EventBus, group: string, count: number): Promise<DeliveredEvent[]> {
  const got: DeliveredEvent[] = [];
  return new Promise((resolve) => {
    void bus.subscribe({
      group,
      topics: ['t'],
      handler: async (e) => {
        got.push(e);
        if (got.length === count) resolve(got);
      },
    });
  });
}

describe('transactional outbox', () => {
  it('an event written with a state change reaches the bus; a rolled-back change publishes nothing', async () => {
    const d = dir();
    const db = openSqlite(join(d, 'svc.db'), [`CREATE TABLE things (id TEXT PRIMARY KEY); ${SQLITE_OUTBOX_MIGRATION}`]);
    const bus = new SqliteEventLog({ path: join(d, 'events.db'), logger });
    const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger, { name: 'test' });
    relay.start();
    db.transaction(() => {
      db.prepare('INSERT INTO things VALUES (?)').run('a');
      appendToSqliteOutbox(db, [{ topic: 't', key: 'a', payload: Buffer.from('created a') }]);
    })();
    expect(() =>
      db.transaction(() => {
        appendToSqliteOutbox(db, [{ topic: 't', key: 'b', payload: Buffer.from('created b') }]);
        throw new Error('rollback');
      })(),
    ).toThrow('rollback');
    db.transaction(() => appendToSqliteOutbox(db, [{ topic: 't', key: 'c', payload: Buffer.from('created c') }]))();
    relay.kick();
    const events = await collect(bus, 'g', 2);
    expect(events.map((e) => Buffer.from(e.payload).toString())).toEqual(['created a', 'created c']);
    await relay.stop();
    await bus.close();
    db.close();
  });

  it("a drain a request kicks is not bound by that request's store-wait budget: it waits for a held event log and publishes once it is let go", async () => {
    const d = dir();
    const db = openSqlite(join(d, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
    const bus = new SqliteEventLog({ path: join(d, 'events.db'), logger });
    // No timer kick within the test: only the request's kick drains.
    const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger, { name: 'kicked', intervalMs: 600_000 });
    relay.start();
    await relay.flush();
    const holder = await holdSqliteWriteLock(join(d, 'events.db'));
    // A request whose budget for waiting on a locked store ends in 50 ms commits its event and kicks the relay.
    runWithRequestContext({ requestId: 'kicking-request', storeWaitUntil: Date.now() + 50 }, () => {
      db.transaction(() => appendToSqliteOutbox(db, [{ topic: 't', key: 'k', payload: Buffer.from('after the hold') }]))();
      relay.kick();
    });
    const drained = (relay as unknown as { draining: Promise<void> }).draining;
    // Let go once the request's budget is over (the holder's own start and stop take longer than 50 ms anyway).
    await new Promise((resolve) => setTimeout(resolve, 200));
    await holder.release();
    await drained;
    expect(await new SqliteOutboxStore(db).pending(10)).toHaveLength(0);
    const [event] = await collect(bus, 'g', 1);
    expect(Buffer.from(event!.payload).toString()).toBe('after the hold');
    await relay.stop();
    await bus.close();
    db.close();
  });

  it('entries committed before a crash are published by the next relay', async () => {
    const d = dir();
    const db = openSqlite(join(d, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
    db.transaction(() => appendToSqliteOutbox(db, [{ topic: 't', key: 'k', payload: Buffer.from('left behind') }]))();
    // No relay ran ("crash"); a new one starts.
    const bus = new SqliteEventLog({ path: join(d, 'events.db'), logger });
    const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger, { name: 'test' });
    relay.start();
    const [event] = await collect(bus, 'g', 1);
    expect(Buffer.from(event!.payload).toString()).toBe('left behind');
    await relay.flush();
    expect(await new SqliteOutboxStore(db).pending(10)).toHaveLength(0);
    await relay.stop();
    await bus.close();
    db.close();
  });

  it('publishes a backlog larger than one read even when the store cannot count it (the count only feeds a gauge)', async () => {
    const d = dir();
    const db = openSqlite(join(d, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
    const bus = new SqliteEventLog({ path: join(d, 'events.db'), logger });
    const sqlite = new SqliteOutboxStore(db);
    const store: OutboxStore = { pending: (limit) => sqlite.pending(limit), remove: (ids) => sqlite.remove(ids), count: () => Promise.reject(new Error('count unsupported')) };
    db.transaction(() => appendToSqliteOutbox(db, Array.from({ length: 250 }, (_, i) => ({ topic: 't', key: `k${i}`, payload: Buffer.from(String(i)) }))))();
    const relay = new OutboxRelay(store, bus, logger, { name: 'uncountable' });
    try {
      await relay.flush();
      expect(await sqlite.count()).toBe(0);
      expect(await collect(bus, 'g', 250)).toHaveLength(250);
    } finally {
      await relay.stop();
      await bus.close();
      db.close();
    }
  });

  it('flush() returns while the store keeps failing slower than the relay kicks itself (an engine timing out), leaving the entries for later', async () => {
    const d = dir();
    const db = openSqlite(join(d, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
    const bus = new SqliteEventLog({ path: join(d, 'events.db'), logger });
    const sqlite = new SqliteOutboxStore(db);
    // Like MongoDB gone: every read waits out server selection, longer than the relay's interval, then fails.
    const unreachable = () => new Promise<never>((_, reject) => setTimeout(() => reject(new Error('server selection timed out')), 200));
    const store: OutboxStore = { pending: unreachable, remove: (ids) => sqlite.remove(ids), count: unreachable };
    db.transaction(() => appendToSqliteOutbox(db, [{ topic: 't', key: 'k', payload: Buffer.from('kept') }]))();
    const relay = new OutboxRelay(store, bus, logger, { name: 'unreachable', intervalMs: 20 });
    relay.start();
    try {
      await relay.flush();
      await relay.stop();
      expect(await sqlite.count()).toBe(1);
    } finally {
      await relay.stop();
      await bus.close();
      db.close();
    }
  }, 15_000);

  it("shows its backlog and failed drains on /metrics, and a pending count of 0 once drained", async () => {
    const d = dir();
    const db = openSqlite(join(d, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
    const log = new SqliteEventLog({ path: join(d, 'events.db'), logger });
    let busDown = true;
    const bus: EventBus = { publish: async (events) => (busDown ? Promise.reject(new Error('bus unreachable')) : log.publish(events)), subscribe: (o) => log.subscribe(o), hasCommitted: (g, t) => log.hasCommitted(g, t), ready: () => log.ready(), close: () => log.close() };
    const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger, { name: 'metrics-test' });
    const metrics = await startMetricsServer({ host: '127.0.0.1', port: 0, logger });
    const scrape = async () => {
      const text = await (await fetch(`http://127.0.0.1:${metrics.port}/metrics`)).text();
      const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
      return {
        pending: value('card_library_outbox_pending_entries{outbox="metrics-test"}'),
        failures: value('card_library_outbox_relay_failures_total{outbox="metrics-test"}'),
        published: value('card_library_events_published_total{topic="outbox.metrics.v1"}'),
      };
    };
    try {
      expect(await scrape()).toEqual({ pending: 0, failures: 0, published: NaN });
      // More than one read of the relay holds, while the bus is down: the gauge shows the whole backlog.
      const write = (n: number) => db.transaction(() => appendToSqliteOutbox(db, Array.from({ length: n }, (_, i) => ({ topic: 'outbox.metrics.v1', key: `k${i}`, payload: Buffer.from(String(i)) }))))();
      write(3);
      await relay.flush();
      expect(await scrape()).toEqual({ pending: 3, failures: 1, published: NaN });
      write(247);
      await relay.flush();
      expect(await scrape()).toEqual({ pending: 250, failures: 2, published: NaN });
      busDown = false;
      await relay.flush();
      expect(await scrape()).toEqual({ pending: 0, failures: 2, published: 250 });
    } finally {
      await metrics.close();
      await relay.stop();
      await log.close();
      db.close();
    }
  });
});
