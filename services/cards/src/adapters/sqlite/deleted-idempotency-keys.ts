import { keptKeysExpiredAt, removeExpiredSqliteKeptKeys, type KeptKeyExpiry, type SqliteDatabase } from '@cards/platform';
import type { DeletedIdempotencyKey } from '../../domain/model';

/** The kinds of resources whose keys are kept apart: a client's key on a card and on a collection are two intents. */
export type IdempotentKind = 'card' | 'collection';

/** The key (and request fingerprint) of a resource being deleted. */
export interface KeyOfDeleted {
  author_id: string;
  idempotency_key: string | null;
  request_fingerprint: string | null;
}

/**
 * Keeps the key of a resource being deleted, if it has one, and removes up to EXPIRED_KEYS_PER_SWEEP expired kept
 * keys, oldest first (call inside the deleting transaction).
 */
export function keepDeletedIdempotencyKey(db: SqliteDatabase, kind: IdempotentKind, deleted: KeyOfDeleted, expiry: KeptKeyExpiry): void {
  if (deleted.idempotency_key === null) return;
  db.prepare('INSERT OR REPLACE INTO deleted_idempotency_keys (kind, author_id, idempotency_key, request_fingerprint, deleted_at) VALUES (?, ?, ?, ?, ?)')
    .run(kind, deleted.author_id, deleted.idempotency_key, deleted.request_fingerprint, expiry.now().toISOString());
  removeExpiredSqliteKeptKeys(db, ['kind', 'author_id', 'idempotency_key'], keptKeysExpiredAt(expiry));
}

/** The kept key of a deleted resource, or null for none or an expired one (not yet swept). */
export function findDeletedIdempotencyKey(db: SqliteDatabase, kind: IdempotentKind, authorId: string, key: string, expiry: KeptKeyExpiry): DeletedIdempotencyKey | null {
  const row = db
    .prepare('SELECT request_fingerprint, deleted_at FROM deleted_idempotency_keys WHERE kind = ? AND author_id = ? AND idempotency_key = ? AND deleted_at > ?')
    .get(kind, authorId, key, keptKeysExpiredAt(expiry).toISOString()) as { request_fingerprint: string | null; deleted_at: string } | undefined;
  return row ? { requestFingerprint: row.request_fingerprint, deletedAt: new Date(row.deleted_at) } : null;
}
