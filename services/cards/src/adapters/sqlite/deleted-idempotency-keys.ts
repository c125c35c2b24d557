import type { SqliteDatabase } from '@cards/platform';
import type { DeletedIdempotencyKey } from '../../domain/model';

/** The kinds of resources whose keys are kept apart: a client's key on a card and on a collection are two intents. */
export type IdempotentKind = 'card' | 'collection';

/** The key (and request fingerprint) of a resource being deleted. */
export interface KeyOfDeleted {
  author_id: string;
  idempotency_key: string | null;
  request_fingerprint: string | null;
}

/** Keeps the key of a resource being deleted, if it has one (call inside the deleting transaction). */
export function keepDeletedIdempotencyKey(db: SqliteDatabase, kind: IdempotentKind, deleted: KeyOfDeleted, at: Date): void {
  if (deleted.idempotency_key === null) return;
  db.prepare('INSERT OR REPLACE INTO deleted_idempotency_keys (kind, author_id, idempotency_key, request_fingerprint, deleted_at) VALUES (?, ?, ?, ?, ?)')
    .run(kind, deleted.author_id, deleted.idempotency_key, deleted.request_fingerprint, at.toISOString());
}

export function findDeletedIdempotencyKey(db: SqliteDatabase, kind: IdempotentKind, authorId: string, key: string): DeletedIdempotencyKey | null {
  const row = db.prepare('SELECT request_fingerprint, deleted_at FROM deleted_idempotency_keys WHERE kind = ? AND author_id = ? AND idempotency_key = ?').get(kind, authorId, key) as
    | { request_fingerprint: string | null; deleted_at: string }
    | undefined;
  return row ? { requestFingerprint: row.request_fingerprint, deletedAt: new Date(row.deleted_at) } : null;
}
