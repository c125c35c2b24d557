import { InvalidArgumentError, openSqlite, pageOfRows, type SqliteDatabase } from '@cards/platform';
import { subjectKeyOf, type Notification } from '../../domain/model';
import type { NotificationPage, NotificationRepository } from '../../domain/ports';

const MIGRATIONS = [
  `CREATE TABLE notifications (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     id TEXT NOT NULL UNIQUE,
     user_id TEXT NOT NULL,
     kind TEXT NOT NULL CHECK (kind IN ('verification', 'collection_created')),
     card_id TEXT, verification_id TEXT, similarity_score INTEGER, collection_id TEXT,
     user_read INTEGER NOT NULL DEFAULT 0,
     created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
     source_event_id TEXT NOT NULL UNIQUE,
     subject_key TEXT NOT NULL UNIQUE);
   CREATE INDEX notifications_user_newest ON notifications(user_id, created_at DESC, seq DESC);`,
];

interface NotificationRow {
  seq: number;
  id: string;
  user_id: string;
  kind: 'verification' | 'collection_created';
  card_id: string | null;
  verification_id: string | null;
  similarity_score: number | null;
  collection_id: string | null;
  user_read: number;
  created_at: string;
  updated_at: string;
  source_event_id: string;
}

function toPrimitives(n: Notification) {
  return {
    id: n.id,
    user_id: n.userId,
    kind: n.kind,
    card_id: n.kind === 'verification' ? n.cardId : null,
    verification_id: n.kind === 'verification' ? n.verificationId : null,
    similarity_score: n.kind === 'verification' ? n.similarityScore : null,
    collection_id: n.kind === 'collection_created' ? n.collectionId : null,
    user_read: n.read ? 1 : 0,
    created_at: n.createdAt.toISOString(),
    updated_at: n.updatedAt.toISOString(),
    source_event_id: n.sourceEventId,
    subject_key: subjectKeyOf(n),
  };
}

/** A listing reads thousands of rows: each is built as one object literal, and a timestamp read once when both are equal. */
function fromPrimitives(r: NotificationRow): Notification {
  const createdAt = new Date(r.created_at);
  const updatedAt = r.updated_at === r.created_at ? new Date(createdAt.getTime()) : new Date(r.updated_at);
  const read = r.user_read === 1;
  if (r.kind === 'verification') {
    return {
      kind: 'verification',
      id: r.id,
      userId: r.user_id,
      read,
      createdAt,
      updatedAt,
      sourceEventId: r.source_event_id,
      cardId: r.card_id ?? '',
      verificationId: r.verification_id ?? '',
      similarityScore: r.similarity_score ?? 0,
    };
  }
  return { kind: 'collection_created', id: r.id, userId: r.user_id, read, createdAt, updatedAt, sourceEventId: r.source_event_id, collectionId: r.collection_id ?? '' };
}

/** The columns a notification is read from (not subject_key, which only guards uniqueness). */
const COLUMNS = 'seq, id, user_id, kind, card_id, verification_id, similarity_score, collection_id, user_read, created_at, updated_at, source_event_id';

/** A page cursor: the last listed row's created_at and seq, the two keys of the list's order. */
const CURSOR = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z)_(\d{1,15})$/;

function cursorAfter(row: NotificationRow): string {
  return `${row.created_at}_${row.seq}`;
}

function parseCursor(cursor: string): { createdAt: string; seq: number } {
  const match = CURSOR.exec(cursor);
  if (!match) throw new InvalidArgumentError('page_token: not a token this service gave');
  return { createdAt: match[1]!, seq: Number(match[2]) };
}

/** Notifications in the service's own SQLite file; uniqueness of source event and subject enforced by the schema. */
export class SqliteNotificationRepository implements NotificationRepository {
  private readonly db: SqliteDatabase;

  constructor(path: string) {
    this.db = openSqlite(path, MIGRATIONS);
  }

  async add(n: Notification): Promise<boolean> {
    const result = this.db
      .prepare(
        `INSERT INTO notifications (id, user_id, kind, card_id, verification_id, similarity_score, collection_id, user_read, created_at, updated_at, source_event_id, subject_key)
         VALUES (@id, @user_id, @kind, @card_id, @verification_id, @similarity_score, @collection_id, @user_read, @created_at, @updated_at, @source_event_id, @subject_key)
         ON CONFLICT DO NOTHING`,
      )
      .run(toPrimitives(n));
    return result.changes > 0;
  }

  async listForUser(userId: string): Promise<Notification[]> {
    const rows = this.db.prepare(`SELECT ${COLUMNS} FROM notifications WHERE user_id = ? ORDER BY created_at DESC, seq DESC`).all(userId) as NotificationRow[];
    return rows.map(fromPrimitives);
  }

  async listPageForUser(userId: string, limit: number, after?: string): Promise<NotificationPage> {
    const rows = (
      after === undefined
        ? this.db.prepare(`SELECT ${COLUMNS} FROM notifications WHERE user_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?`).all(userId, limit + 1)
        : this.db
            .prepare(`SELECT ${COLUMNS} FROM notifications WHERE user_id = @userId AND (created_at, seq) < (@createdAt, @seq) ORDER BY created_at DESC, seq DESC LIMIT @take`)
            .all({ userId, ...parseCursor(after), take: limit + 1 })
    ) as NotificationRow[];
    const page = pageOfRows(rows, limit, cursorAfter);
    return { notifications: page.items.map(fromPrimitives), ...(page.next !== undefined ? { next: page.next } : {}) };
  }

  async markRead(userId: string, notificationId: string, at: Date): Promise<boolean> {
    const row = this.db.prepare('SELECT user_read FROM notifications WHERE id = ? AND user_id = ?').get(notificationId, userId) as { user_read: number } | undefined;
    if (!row) return false;
    if (row.user_read === 0) this.db.prepare('UPDATE notifications SET user_read = 1, updated_at = ? WHERE id = ? AND user_id = ? AND user_read = 0').run(at.toISOString(), notificationId, userId);
    return true;
  }

  async markAllRead(userId: string, at: Date): Promise<number> {
    return this.db.prepare('UPDATE notifications SET user_read = 1, updated_at = ? WHERE user_id = ? AND user_read = 0').run(at.toISOString(), userId).changes;
  }

  async listVersionForUser(userId: string): Promise<string> {
    const row = this.db.prepare('SELECT count(*) AS total, coalesce(sum(user_read), 0) AS read FROM notifications WHERE user_id = ?').get(userId) as { total: number; read: number };
    return `${row.total}.${row.read}`;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
