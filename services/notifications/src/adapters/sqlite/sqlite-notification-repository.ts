import { InvalidArgumentError, openSqlite, pageOfRows, writesWaitBetweenTries, type SqliteDatabase } from '@cards/platform';
import { aboutKeyOf, subjectKeyOf, type DeletedSubject, type Notification } from '../../domain/model';
import type { NotificationPage, NotificationRepository } from '../../domain/ports';

export const NOTIFICATIONS_MIGRATIONS = [
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
  // Removal (deleted cards and collections, retention): what was deleted, so a late notification about it is refused,
  // and how many of each user's were removed, for the list's version.
  `CREATE INDEX notifications_card ON notifications(card_id) WHERE card_id IS NOT NULL;
   CREATE INDEX notifications_collection ON notifications(collection_id) WHERE collection_id IS NOT NULL;
   CREATE INDEX notifications_created ON notifications(created_at, seq);
   CREATE TABLE deleted_subjects (about_key TEXT PRIMARY KEY, deleted_at TEXT NOT NULL);
   CREATE INDEX deleted_subjects_at ON deleted_subjects(deleted_at);
   CREATE TABLE user_removals (user_id TEXT PRIMARY KEY, removed INTEGER NOT NULL);`,
  // The list's version (every GET /api/notifications, a 304 poll included) from kept counts of each user's
  // notifications and read ones (by triggers, in each change's transaction), not a count over the user's rows: for a
  // user of 30,000 notifications that count read every row (~7 ms a poll). The triggers live in the file, so a release
  // before this one keeps them true; the version's text is unchanged, so tags given before stay valid.
  `CREATE TABLE user_notification_counts (user_id TEXT PRIMARY KEY, total INTEGER NOT NULL, read INTEGER NOT NULL) WITHOUT ROWID;
   INSERT INTO user_notification_counts (user_id, total, read) SELECT user_id, count(*), sum(user_read) FROM notifications GROUP BY user_id;
   CREATE TRIGGER user_notification_counts_added AFTER INSERT ON notifications BEGIN
     INSERT INTO user_notification_counts (user_id, total, read) VALUES (NEW.user_id, 1, NEW.user_read)
       ON CONFLICT (user_id) DO UPDATE SET total = total + 1, read = read + excluded.read;
   END;
   CREATE TRIGGER user_notification_counts_removed AFTER DELETE ON notifications BEGIN
     UPDATE user_notification_counts SET total = total - 1, read = read - OLD.user_read WHERE user_id = OLD.user_id;
   END;
   CREATE TRIGGER user_notification_counts_changed AFTER UPDATE OF user_read, user_id ON notifications
     WHEN OLD.user_read IS NOT NEW.user_read OR OLD.user_id IS NOT NEW.user_id BEGIN
     UPDATE user_notification_counts SET total = total - 1, read = read - OLD.user_read WHERE user_id = OLD.user_id;
     INSERT INTO user_notification_counts (user_id, total, read) VALUES (NEW.user_id, 1, NEW.user_read)
       ON CONFLICT (user_id) DO UPDATE SET total = total + 1, read = read + excluded.read;
   END;`,
];

/** Notifications marked read per transaction by markAllRead. */
export const MARK_ALL_READ_CHUNK = 1000;

/** The list's version of a user: kept counts (user_notification_counts) and removals, each one row by its key. */
export const LIST_VERSION_SQL = `SELECT coalesce((SELECT total FROM user_notification_counts WHERE user_id = @userId), 0) AS total,
    coalesce((SELECT read FROM user_notification_counts WHERE user_id = @userId), 0) AS read,
    (SELECT removed FROM user_removals WHERE user_id = @userId) AS removed`;

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
    this.db = openSqlite(path, NOTIFICATIONS_MIGRATIONS);
    // A write meeting another process's lock waits between tries, the service answering meanwhile (docs/decisions.md,
    // "Waiting for another process's lock on a SQLite store").
    writesWaitBetweenTries(this, this.db, ['add', 'removeAbout', 'forgetDeletionsBefore', 'removeOlderThan', 'markRead', 'markAllRead']);
  }

  async add(n: Notification): Promise<boolean> {
    const result = this.db
      .prepare(
        `INSERT INTO notifications (id, user_id, kind, card_id, verification_id, similarity_score, collection_id, user_read, created_at, updated_at, source_event_id, subject_key)
         SELECT @id, @user_id, @kind, @card_id, @verification_id, @similarity_score, @collection_id, @user_read, @created_at, @updated_at, @source_event_id, @subject_key
         WHERE NOT EXISTS (SELECT 1 FROM deleted_subjects WHERE about_key = @about_key)
         ON CONFLICT DO NOTHING`,
      )
      .run({ ...toPrimitives(n), about_key: aboutKeyOf(n) });
    return result.changes > 0;
  }

  async removeAbout(subject: DeletedSubject, at: Date): Promise<number> {
    const [column, id] = subject.kind === 'card' ? ['card_id', subject.cardId] : ['collection_id', subject.collectionId];
    return this.db.transaction(() => {
      this.db.prepare('INSERT INTO deleted_subjects (about_key, deleted_at) VALUES (?, ?) ON CONFLICT DO NOTHING').run(aboutKeyOf(subject), at.toISOString());
      const rows = this.db.prepare(`SELECT seq, user_id FROM notifications WHERE ${column} = ?`).all(id) as { seq: number; user_id: string }[];
      return this.removeRows(rows);
    })();
  }

  async forgetDeletionsBefore(cutoff: Date, limit: number): Promise<number> {
    return this.db.prepare('DELETE FROM deleted_subjects WHERE about_key IN (SELECT about_key FROM deleted_subjects WHERE deleted_at < ? LIMIT ?)').run(cutoff.toISOString(), limit).changes;
  }

  async removeOlderThan(cutoff: Date, limit: number): Promise<number> {
    const before = cutoff.toISOString();
    return this.db.transaction(() => {
      const rows = this.db.prepare('SELECT seq, user_id FROM notifications WHERE created_at < ? ORDER BY created_at, seq LIMIT ?').all(before, limit) as { seq: number; user_id: string }[];
      return this.removeRows(rows);
    })();
  }

  /** Deletes the rows and counts them as removed for their users (the list's version); inside a transaction. */
  private removeRows(rows: { seq: number; user_id: string }[]): number {
    const remove = this.db.prepare('DELETE FROM notifications WHERE seq = ?');
    const count = this.db.prepare('INSERT INTO user_removals (user_id, removed) VALUES (?, 1) ON CONFLICT (user_id) DO UPDATE SET removed = removed + 1');
    for (const row of rows) {
      remove.run(row.seq);
      count.run(row.user_id);
    }
    return rows.length;
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

  /**
   * Newest first, MARK_ALL_READ_CHUNK notifications a transaction, giving the thread up between chunks (those added
   * meanwhile are newer than the first chunk's start and stay unread). One UPDATE of a user's 15,000 unread of 30,000
   * held the service's thread ~0.3-0.4 s, every other request of the process waiting.
   */
  async markAllRead(userId: string, at: Date): Promise<number> {
    const stamp = at.toISOString();
    const first = this.db.prepare('SELECT seq, created_at FROM notifications WHERE user_id = ? ORDER BY created_at DESC, seq DESC LIMIT ?');
    const next = this.db.prepare('SELECT seq, created_at FROM notifications WHERE user_id = ? AND (created_at, seq) < (?, ?) ORDER BY created_at DESC, seq DESC LIMIT ?');
    const mark = this.db.prepare('UPDATE notifications SET user_read = 1, updated_at = ? WHERE seq = ? AND user_read = 0');
    let changed = 0;
    let after: { seq: number; created_at: string } | undefined;
    while (this.db.open) {
      const rows = (after ? next.all(userId, after.created_at, after.seq, MARK_ALL_READ_CHUNK) : first.all(userId, MARK_ALL_READ_CHUNK)) as { seq: number; created_at: string }[];
      changed += this.db.transaction(() => rows.reduce((n, row) => n + mark.run(stamp, row.seq).changes, 0))();
      if (rows.length < MARK_ALL_READ_CHUNK) break;
      after = rows[rows.length - 1];
      await new Promise((resolve) => setImmediate(resolve));
    }
    return changed;
  }

  async listVersionForUser(userId: string): Promise<string> {
    const row = this.db.prepare(LIST_VERSION_SQL).get({ userId }) as { total: number; read: number; removed: number | null };
    // Unchanged for a user none of whose notifications was ever removed: their clients' tags stay valid.
    return row.removed ? `${row.total}.${row.read}.${row.removed}` : `${row.total}.${row.read}`;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
