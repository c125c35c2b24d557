import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '../src/logger';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { describeEventBusContract } from './event-bus.contract';
import { testTempDir } from '../../../test/support/cleanup';

const logger = createLogger('event-bus-test', process.env.LOG_LEVEL ?? 'fatal');

describeEventBusContract('sqlite (embedded log)', async () => {
  const dir = testTempDir('cards-eventlog-');
  const path = join(dir, 'events.db');
  const open = () => new SqliteEventLog({ path, logger, pollIntervalMs: 50, retryBaseMs: 20 });
  const bus = open();
  const others: SqliteEventLog[] = [];
  return {
    bus,
    reopen() {
      const other = open();
      others.push(other);
      return other;
    },
    async deadLetters(group, topic) {
      const db = new Database(path, { readonly: true });
      try {
        const rows = db
          .prepare('SELECT e.key, e.payload FROM dead_letters d JOIN events e ON e.seq = d.seq WHERE d.group_id = ? AND d.topic = ? ORDER BY d.seq')
          .all(group, topic) as { key: string; payload: Buffer }[];
        return rows.map((r) => ({ key: r.key, payload: new Uint8Array(r.payload) }));
      } finally {
        db.close();
      }
    },
    async close() {
      await Promise.allSettled(others.map((o) => o.close()));
      await bus.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
