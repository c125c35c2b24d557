import { AlreadyExistsError, appendToSqliteOutbox, creationCursor, keptKeyExpiry, keptKeysExpiredAt, newestFirstRows, openSqlite, pageOfRows, writesWaitBetweenTries, removeExpiredSqliteKeptKeys, SQLITE_OUTBOX_MIGRATION, type KeptKeyExpiry, type OutgoingEvent, type Page, type SqliteDatabase } from '@cards/platform';
import type { DeletedIdempotencyKey, DocumentFormat, FileRecord, IngestionStatus } from '../../domain/model';
import type { FileRepository, IngestionClaim, IngestionOutcome } from '../../domain/ports';

export const FILES_MIGRATIONS = [
  `CREATE TABLE files (
     id TEXT PRIMARY KEY,
     user_id TEXT NOT NULL,
     file_name TEXT NOT NULL,
     mime_type TEXT NOT NULL,
     format TEXT NOT NULL,
     private INTEGER NOT NULL,
     size INTEGER NOT NULL,
     tags TEXT NOT NULL,
     oc_file_path TEXT,
     ingestion_status TEXT NOT NULL,
     ingestion_error TEXT,
     card_count INTEGER NOT NULL DEFAULT 0,
     collection_id TEXT,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE INDEX files_user ON files(user_id, created_at);`,
  SQLITE_OUTBOX_MIGRATION,
  // A client's Idempotency-Key on an upload (per user; files stored before have none), and the keys of deleted files.
  `ALTER TABLE files ADD COLUMN idempotency_key TEXT;
   CREATE UNIQUE INDEX files_idempotency ON files(user_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
   CREATE TABLE deleted_idempotency_keys (user_id TEXT NOT NULL, idempotency_key TEXT NOT NULL, deleted_at TEXT NOT NULL,
     PRIMARY KEY (user_id, idempotency_key)) WITHOUT ROWID;`,
  // The fingerprint of the request that carried a key: a key sent again with another request is refused.
  `ALTER TABLE files ADD COLUMN request_fingerprint TEXT;
   ALTER TABLE deleted_idempotency_keys ADD COLUMN request_fingerprint TEXT;`,
  // Kept keys of deleted files expire (IDEMPOTENCY_KEY_TTL_HOURS): each deletion that keeps one removes the oldest
  // expired ones, found by their time.
  `CREATE INDEX deleted_idempotency_keys_deleted_at ON deleted_idempotency_keys(deleted_at);`,
  // The ingestion queue (fair across owners, docs/files.md#fair-ingestion): a pending file's claim (holder and until
  // when), attempts started, when a failed attempt is retried; each owner's last claimed start. Pending files stored
  // before are unclaimed, so they are ingested after the upgrade.
  `ALTER TABLE files ADD COLUMN ingestion_attempts INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE files ADD COLUMN claim_holder TEXT;
   ALTER TABLE files ADD COLUMN claimed_until TEXT;
   ALTER TABLE files ADD COLUMN retry_at TEXT;
   CREATE INDEX files_pending ON files(created_at, id) WHERE ingestion_status = 'pending';
   CREATE TABLE ingestion_turns (user_id TEXT PRIMARY KEY, last_started_at TEXT NOT NULL) WITHOUT ROWID;`,
];

interface FileRow {
  id: string;
  user_id: string;
  file_name: string;
  mime_type: string;
  format: string;
  private: number;
  size: number;
  tags: string;
  oc_file_path: string | null;
  ingestion_status: string;
  ingestion_error: string | null;
  card_count: number;
  collection_id: string | null;
  idempotency_key: string | null;
  request_fingerprint: string | null;
  created_at: string;
  updated_at: string;
}

function toPrimitives(r: FileRecord): FileRow {
  return {
    id: r.id,
    user_id: r.userId,
    file_name: r.fileName,
    mime_type: r.mimeType,
    format: r.format,
    private: r.private ? 1 : 0,
    size: r.size,
    tags: JSON.stringify(r.tags),
    oc_file_path: r.ocFilePath,
    ingestion_status: r.ingestionStatus,
    ingestion_error: r.ingestionError,
    card_count: r.cardCount,
    collection_id: r.collectionId,
    idempotency_key: r.idempotencyKey,
    request_fingerprint: r.requestFingerprint,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

function fromPrimitives(row: FileRow): FileRecord {
  return {
    id: row.id,
    userId: row.user_id,
    fileName: row.file_name,
    mimeType: row.mime_type,
    format: row.format as DocumentFormat,
    private: row.private === 1,
    size: row.size,
    tags: JSON.parse(row.tags) as string[],
    ocFilePath: row.oc_file_path,
    ingestionStatus: row.ingestion_status as IngestionStatus,
    ingestionError: row.ingestion_error,
    cardCount: row.card_count,
    collectionId: row.collection_id,
    idempotencyKey: row.idempotency_key,
    requestFingerprint: row.request_fingerprint,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** File records in the service's own SQLite file, with the transactional outbox beside them. */
export class SqliteFileRepository implements FileRepository {
  readonly db: SqliteDatabase;

  /** `keyExpiry`: how long the keys of deleted files are kept (IDEMPOTENCY_KEY_TTL_HOURS), and by which clock. */
  constructor(
    path: string,
    private readonly keyExpiry: KeptKeyExpiry = keptKeyExpiry(),
  ) {
    this.db = openSqlite(path, FILES_MIGRATIONS);
    // A write meeting another process's lock waits between tries, the service answering meanwhile (docs/decisions.md,
    // "Waiting for another process's lock on a SQLite store").
    writesWaitBetweenTries(this, this.db, ['create', 'setPrivacy', 'setIngestion', 'claimNextIngestion', 'renewIngestionClaim', 'releaseIngestionClaim', 'releaseIngestionClaimsOf', 'delete']);
  }

  async create(record: FileRecord, events: OutgoingEvent[]): Promise<void> {
    const row = toPrimitives(record);
    try {
      this.db.transaction(() => {
        this.db
          .prepare(
            `INSERT INTO files (id, user_id, file_name, mime_type, format, private, size, tags, oc_file_path, ingestion_status, ingestion_error, card_count, collection_id, idempotency_key, request_fingerprint, created_at, updated_at)
             VALUES (@id, @user_id, @file_name, @mime_type, @format, @private, @size, @tags, @oc_file_path, @ingestion_status, @ingestion_error, @card_count, @collection_id, @idempotency_key, @request_fingerprint, @created_at, @updated_at)`,
          )
          .run(row);
        appendToSqliteOutbox(this.db, events);
      })();
    } catch (err) {
      // Checked by code, not instanceof: the native module's error class may come from another realm (test sandboxes).
      const unique = (err as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';
      if (unique && record.idempotencyKey !== null && (await this.findByIdempotencyKey(record.userId, record.idempotencyKey))) {
        throw new AlreadyExistsError('A file with this idempotency key already exists');
      }
      throw err;
    }
  }

  async get(id: string): Promise<FileRecord | null> {
    const row = this.db.prepare('SELECT * FROM files WHERE id = ?').get(id) as FileRow | undefined;
    return row ? fromPrimitives(row) : null;
  }

  async findByIdempotencyKey(userId: string, key: string): Promise<FileRecord | null> {
    const row = this.db.prepare('SELECT * FROM files WHERE user_id = ? AND idempotency_key = ?').get(userId, key) as FileRow | undefined;
    return row ? fromPrimitives(row) : null;
  }

  /** The kept key of a deleted file, or null for none or an expired one (not yet removed). */
  async findDeletedIdempotencyKey(userId: string, key: string): Promise<DeletedIdempotencyKey | null> {
    const row = this.db
      .prepare('SELECT request_fingerprint, deleted_at FROM deleted_idempotency_keys WHERE user_id = ? AND idempotency_key = ? AND deleted_at > ?')
      .get(userId, key, keptKeysExpiredAt(this.keyExpiry).toISOString()) as
      | Pick<FileRow, 'request_fingerprint'> & { deleted_at: string }
      | undefined;
    return row ? { requestFingerprint: row.request_fingerprint, deletedAt: new Date(row.deleted_at) } : null;
  }

  async listByUser(userId: string): Promise<FileRecord[]> {
    const rows = this.db.prepare('SELECT * FROM files WHERE user_id = ? ORDER BY created_at DESC, id').all(userId) as FileRow[];
    return rows.map(fromPrimitives);
  }

  async listPageByUser(userId: string, includePrivate: boolean, limit: number, after?: string): Promise<Page<FileRecord>> {
    const rows = newestFirstRows<FileRow>(this.db, 'files', `user_id = @userId${includePrivate ? '' : ' AND private = 0'}`, { userId }, limit, after);
    return pageOfRows(rows.map(fromPrimitives), limit, creationCursor.after);
  }

  async setPrivacy(id: string, isPrivate: boolean, now: Date, events: OutgoingEvent[]): Promise<boolean> {
    return this.db.transaction(() => {
      const before = this.db.prepare('SELECT private FROM files WHERE id = ?').get(id) as Pick<FileRow, 'private'> | undefined;
      if (!before) return false;
      this.db.prepare('UPDATE files SET private = ?, updated_at = ? WHERE id = ?').run(isPrivate ? 1 : 0, now.toISOString(), id);
      if (before.private === 1 !== isPrivate) appendToSqliteOutbox(this.db, events);
      return true;
    })();
  }

  async setIngestion(id: string, outcome: IngestionOutcome, now: Date): Promise<boolean> {
    return (
      this.db
        .prepare(
          'UPDATE files SET ingestion_status = ?, ingestion_error = ?, card_count = ?, collection_id = ?, updated_at = ?, claim_holder = NULL, claimed_until = NULL, retry_at = NULL WHERE id = ?',
        )
        .run(outcome.status, outcome.error, outcome.cardCount, outcome.collectionId, now.toISOString(), id).changes > 0
    );
  }

  async claimNextIngestion(holder: string, now: Date, leaseMs: number): Promise<IngestionClaim | null> {
    const at = now.toISOString();
    // IMMEDIATE: the write lock is taken before the read, so another process's claim cannot pick the same row between.
    return this.db
      .transaction(() => {
        const row = this.db
          .prepare(
            `SELECT f.* FROM files f LEFT JOIN ingestion_turns t ON t.user_id = f.user_id
             WHERE f.ingestion_status = 'pending' AND (f.claimed_until IS NULL OR f.claimed_until <= @at) AND (f.retry_at IS NULL OR f.retry_at <= @at)
             ORDER BY t.last_started_at IS NOT NULL, t.last_started_at, f.created_at, f.id LIMIT 1`,
          )
          .get({ at }) as (FileRow & { ingestion_attempts: number }) | undefined;
        if (!row) return null;
        const until = new Date(now.getTime() + leaseMs).toISOString();
        this.db.prepare('UPDATE files SET claim_holder = ?, claimed_until = ?, retry_at = NULL, ingestion_attempts = ingestion_attempts + 1 WHERE id = ?').run(holder, until, row.id);
        this.db
          .prepare('INSERT INTO ingestion_turns (user_id, last_started_at) VALUES (?, ?) ON CONFLICT (user_id) DO UPDATE SET last_started_at = max(last_started_at, excluded.last_started_at)')
          .run(row.user_id, at);
        return { file: fromPrimitives(row), attempt: row.ingestion_attempts + 1 };
      })
      .immediate();
  }

  async renewIngestionClaim(id: string, holder: string, until: Date): Promise<boolean> {
    return (
      this.db.prepare(`UPDATE files SET claimed_until = ? WHERE id = ? AND claim_holder = ? AND ingestion_status = 'pending'`).run(until.toISOString(), id, holder).changes > 0
    );
  }

  async releaseIngestionClaim(id: string, holder: string, retryAt: Date, attemptCounted: boolean): Promise<void> {
    this.db
      .prepare(
        `UPDATE files SET claim_holder = NULL, claimed_until = NULL, retry_at = ?, ingestion_attempts = max(0, ingestion_attempts - ?)
         WHERE id = ? AND claim_holder = ? AND ingestion_status = 'pending'`,
      )
      .run(retryAt.toISOString(), attemptCounted ? 0 : 1, id, holder);
  }

  async releaseIngestionClaimsOf(holder: string): Promise<number> {
    return this.db.prepare('UPDATE files SET claim_holder = NULL, claimed_until = NULL WHERE claim_holder = ?').run(holder).changes;
  }

  async delete(id: string, events: OutgoingEvent[]): Promise<boolean> {
    return this.db.transaction(() => {
      const removed = this.db.prepare('DELETE FROM files WHERE id = ? RETURNING user_id, idempotency_key, request_fingerprint').get(id) as
        | Pick<FileRow, 'user_id' | 'idempotency_key' | 'request_fingerprint'>
        | undefined;
      if (!removed) return false;
      if (removed.idempotency_key !== null) {
        this.db
          .prepare('INSERT OR REPLACE INTO deleted_idempotency_keys (user_id, idempotency_key, request_fingerprint, deleted_at) VALUES (?, ?, ?, ?)')
          .run(removed.user_id, removed.idempotency_key, removed.request_fingerprint, this.keyExpiry.now().toISOString());
        // Up to EXPIRED_KEYS_PER_SWEEP expired kept keys go with it, oldest first.
        removeExpiredSqliteKeptKeys(this.db, ['user_id', 'idempotency_key'], keptKeysExpiredAt(this.keyExpiry));
      }
      appendToSqliteOutbox(this.db, events);
      return true;
    })();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
