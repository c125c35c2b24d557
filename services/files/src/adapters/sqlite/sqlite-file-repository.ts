import { appendToSqliteOutbox, creationCursor, newestFirstRows, openSqlite, pageOfRows, SQLITE_OUTBOX_MIGRATION, type OutgoingEvent, type Page, type SqliteDatabase } from '@cards/platform';
import type { DocumentFormat, FileRecord, IngestionStatus } from '../../domain/model';
import type { FileRepository, IngestionOutcome } from '../../domain/ports';

const MIGRATIONS = [
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
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** File records in the service's own SQLite file, with the transactional outbox beside them. */
export class SqliteFileRepository implements FileRepository {
  readonly db: SqliteDatabase;

  constructor(path: string) {
    this.db = openSqlite(path, MIGRATIONS);
  }

  async create(record: FileRecord, events: OutgoingEvent[]): Promise<void> {
    const row = toPrimitives(record);
    this.db.transaction(() => {
      this.db
        .prepare(
          `INSERT INTO files (id, user_id, file_name, mime_type, format, private, size, tags, oc_file_path, ingestion_status, ingestion_error, card_count, collection_id, created_at, updated_at)
           VALUES (@id, @user_id, @file_name, @mime_type, @format, @private, @size, @tags, @oc_file_path, @ingestion_status, @ingestion_error, @card_count, @collection_id, @created_at, @updated_at)`,
        )
        .run(row);
      appendToSqliteOutbox(this.db, events);
    })();
  }

  async get(id: string): Promise<FileRecord | null> {
    const row = this.db.prepare('SELECT * FROM files WHERE id = ?').get(id) as FileRow | undefined;
    return row ? fromPrimitives(row) : null;
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
        .prepare('UPDATE files SET ingestion_status = ?, ingestion_error = ?, card_count = ?, collection_id = ?, updated_at = ? WHERE id = ?')
        .run(outcome.status, outcome.error, outcome.cardCount, outcome.collectionId, now.toISOString(), id).changes > 0
    );
  }

  async delete(id: string, events: OutgoingEvent[]): Promise<boolean> {
    return this.db.transaction(() => {
      const removed = this.db.prepare('DELETE FROM files WHERE id = ?').run(id).changes > 0;
      if (removed) appendToSqliteOutbox(this.db, events);
      return removed;
    })();
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
