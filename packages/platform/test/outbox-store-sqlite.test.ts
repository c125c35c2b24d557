import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { appendToSqliteOutbox, SQLITE_OUTBOX_MIGRATION, SqliteOutboxStore } from '../src/events/outbox';
import { openSqlite } from '../src/sqlite';
import { describeOutboxStoreContract } from './outbox-store.contract';
import { testTempDir } from '../../../test/support/cleanup';

describeOutboxStoreContract('sqlite', async () => {
  const dir = testTempDir('outbox-store-');
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
