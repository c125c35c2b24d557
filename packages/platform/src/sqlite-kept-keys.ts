import { EXPIRED_KEYS_PER_SWEEP } from './idempotency';
import type { SqliteDatabase } from './sqlite';

/**
 * Removes up to EXPIRED_KEYS_PER_SWEEP rows of `deleted_idempotency_keys` (the kept keys of deleted resources) deleted
 * at or before `expiredAt`, oldest first, by their index on deleted_at; the SQLite twin of removeExpiredKeptKeys. The
 * table has no rowid, so its rows are named by `keyColumns`, its primary key. Call inside the deleting transaction.
 */
export function removeExpiredSqliteKeptKeys(db: SqliteDatabase, keyColumns: readonly string[], expiredAt: Date): void {
  const key = keyColumns.join(', ');
  db.prepare(
    `DELETE FROM deleted_idempotency_keys WHERE (${key}) IN (
       SELECT ${key} FROM deleted_idempotency_keys WHERE deleted_at <= ? ORDER BY deleted_at LIMIT ?)`,
  ).run(expiredAt.toISOString(), EXPIRED_KEYS_PER_SWEEP);
}
