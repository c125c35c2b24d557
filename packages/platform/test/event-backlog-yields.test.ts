import { join } from 'node:path';
import { createLogger } from '../src/logger';
import { openSqlite } from '../src/sqlite';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { appendToSqliteOutbox, OutboxRelay, SQLITE_OUTBOX_MIGRATION, SqliteOutboxStore } from '../src/events/outbox';
import { testTempDir } from '../../../test/support/cleanup';

const logger = createLogger('test', 'silent');

/**
 * A backlog of events on the embedded stores (the 10,001 bookmark events of deleting a collection of 10,000 cards) is
 * moved and delivered a batch at a time with the process's other work in between. The SQLite stores answer
 * synchronously, so the outbox relay's and the event log consumer's loops ran as one chain of microtasks: no request of
 * the process (the all-in-one: every service) was answered until the whole backlog was through (a GET waited 1.6 s).
 */
describe('a backlog of events leaves room for other work', () => {
  it('the outbox relay and an event log consumer give the thread up between batches', async () => {
    const d = testTempDir('backlog-');
    const db = openSqlite(join(d, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
    const bus = new SqliteEventLog({ path: join(d, 'events.db'), logger, pollIntervalMs: 50 });
    const total = 2000;
    db.transaction(() => appendToSqliteOutbox(db, Array.from({ length: total }, (_, i) => ({ topic: 't', key: String(i), payload: Buffer.from(`event ${i}`) }))))();
    const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger, { name: 'test', intervalMs: 60_000 });
    // The relay's drain: other work (a macrotask) runs before it is through.
    const pendingLeft = () => (db.prepare('SELECT count(*) AS n FROM outbox').get() as { n: number }).n;
    relay.start();
    const leftWhenOtherWorkRan = await new Promise<number>((resolve) => setImmediate(() => resolve(pendingLeft())));
    await relay.flush();
    expect(pendingLeft()).toBe(0);
    expect(leftWhenOtherWorkRan).toBeGreaterThan(0);
    expect(leftWhenOtherWorkRan).toBeLessThan(total);
    // The consumer: other work runs between its passes over the backlog, and every event arrives once, in order.
    const got: string[] = [];
    const seenBetween: number[] = [];
    let all!: () => void;
    const delivered = new Promise<void>((resolve) => (all = resolve));
    const subscription = await bus.subscribe({
      group: 'g',
      topics: ['t'],
      handler: async (e) => {
        got.push(e.key);
        if (got.length === total) all();
      },
    });
    const watch = setInterval(() => undefined, 1);
    const probe = async () => {
      while (got.length < total) {
        await new Promise((resolve) => setImmediate(resolve));
        seenBetween.push(got.length);
      }
    };
    await Promise.all([delivered, probe()]);
    clearInterval(watch);
    expect(got).toEqual(Array.from({ length: total }, (_, i) => String(i)));
    // Before, the probe ran once before the first pass and next after the last one.
    expect(seenBetween.filter((n) => n > 0 && n < total).length).toBeGreaterThanOrEqual(5);
    await subscription.close();
    await relay.stop();
    await bus.close();
    db.close();
  });
});
