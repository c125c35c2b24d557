import type { SqliteDatabase } from '@cards/platform';
import type { DeletedIdempotencyKey } from '../../domain/model';

/** The kinds of resources whose keys are kept apart: a client's key on a card and on a collection are two intents. */
export type IdempotentKind = 'card' | 'collection';

/** Keeps the key of a resource being deleted (call inside the deleting transaction). */
export function keepDeletedIdempotencyKey(db: SqliteDatabase, kind: IdempotentKind, authorId: string, key: string, at: Date): void {
  db.prepare('INSERT OR REPLACE INTO deleted_idempotency_keys (kind, author_id, idempotency_key, deleted_at) VALUES (?, ?, ?, ?)').run(kind, authorId, key, at.toISOString());
}

export function findDeletedIdempotencyKey(db: SqliteDatabase, kind: IdempotentKind, authorId: string, key: string): DeletedIdempotencyKey | null {
  const row = db.prepare('SELECT deleted_at FROM deleted_idempotency_keys WHERE kind = ? AND author_id = ? AND idempotency_key = ?').get(kind, authorId, key) as { deleted_at: string } | undefined;
  return row ? { deletedAt: new Date(row.deleted_at) } : null;
}
