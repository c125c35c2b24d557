import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../src/logger';
import { openSqlite } from '../src/sqlite';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { appendToSqliteOutbox, OutboxRelay, SQLITE_OUTBOX_MIGRATION, SqliteOutboxStore } from '../src/events/outbox';
import type { DeliveredEvent, EventBus } from '../src/events/event-bus';

const logger = createLogger('test', 'silent');
const dir = () => mkdtempSync(join(tmpdir(), 'outbox-'));

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
    const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger);
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

  it('entries committed before a crash are published by the next relay', async () => {
    const d = dir();
    const db = openSqlite(join(d, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
    db.transaction(() => appendToSqliteOutbox(db, [{ topic: 't', key: 'k', payload: Buffer.from('left behind') }]))();
    // No relay ran ("crash"); a new one starts.
    const bus = new SqliteEventLog({ path: join(d, 'events.db'), logger });
    const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger);
    relay.start();
    const [event] = await collect(bus, 'g', 1);
    expect(Buffer.from(event!.payload).toString()).toBe('left behind');
    await relay.flush();
    expect(await new SqliteOutboxStore(db).pending(10)).toHaveLength(0);
    await relay.stop();
    await bus.close();
    db.close();
  });
});
