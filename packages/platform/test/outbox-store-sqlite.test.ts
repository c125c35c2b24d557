import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendToSqliteOutbox, SQLITE_OUTBOX_MIGRATION, SqliteOutboxStore } from '../src/events/outbox';
import { openSqlite } from '../src/sqlite';
import { describeOutboxStoreContract } from './outbox-store.contract';

describeOutboxStoreContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'outbox-store-'));
  const db = openSqlite(join(dir, 'svc.db'), [SQLITE_OUTBOX_MIGRATION]);
  return {
    store: new SqliteOutboxStore(db),
    async append(events) {
      db.transaction(() => appendToSqliteOutbox(db, events))();
    },
    async close() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
