import { MongoServerError, ObjectId, type Collection, type Filter } from 'mongodb';
import { InvalidArgumentError, pageOfRows, type MongoConnection } from '@cards/platform';
import { aboutKeyOf, subjectKeyOf, type DeletedSubject, type Notification } from '../../domain/model';
import type { NotificationPage, NotificationRepository } from '../../domain/ports';

/** One document per notification; _id is an ObjectId so equal creation times still list in insertion order. */
interface NotificationDocument {
  _id: ObjectId;
  id: string;
  userId: string;
  kind: 'verification' | 'collection_created';
  cardId: string | null;
  verificationId: string | null;
  similarityScore: number | null;
  collectionId: string | null;
  userRead: boolean;
  createdAt: Date;
  updatedAt: Date;
  sourceEventId: string;
  subjectKey: string;
}

function toPrimitives(n: Notification): NotificationDocument {
  return {
    _id: new ObjectId(),
    id: n.id,
    userId: n.userId,
    kind: n.kind,
    cardId: n.kind === 'verification' ? n.cardId : null,
    verificationId: n.kind === 'verification' ? n.verificationId : null,
    similarityScore: n.kind === 'verification' ? n.similarityScore : null,
    collectionId: n.kind === 'collection_created' ? n.collectionId : null,
    userRead: n.read,
    createdAt: n.createdAt,
    updatedAt: n.updatedAt,
    sourceEventId: n.sourceEventId,
    subjectKey: subjectKeyOf(n),
  };
}

/** A listing reads thousands of documents: each is built as one object literal (no spread). */
function fromPrimitives(d: NotificationDocument): Notification {
  if (d.kind === 'verification') {
    return {
      kind: 'verification',
      id: d.id,
      userId: d.userId,
      read: d.userRead,
      createdAt: d.createdAt,
      updatedAt: d.updatedAt,
      sourceEventId: d.sourceEventId,
      cardId: d.cardId ?? '',
      verificationId: d.verificationId ?? '',
      similarityScore: d.similarityScore ?? 0,
    };
  }
  return { kind: 'collection_created', id: d.id, userId: d.userId, read: d.userRead, createdAt: d.createdAt, updatedAt: d.updatedAt, sourceEventId: d.sourceEventId, collectionId: d.collectionId ?? '' };
}

/** A page cursor: the last listed document's createdAt (epoch ms) and _id, the two keys of the list's order. */
const CURSOR = /^(\d{1,15})_([0-9a-f]{24})$/;

function cursorAfter(d: NotificationDocument): string {
  return `${d.createdAt.getTime()}_${d._id.toHexString()}`;
}

function parseCursor(cursor: string): { createdAt: Date; id: ObjectId } {
  const match = CURSOR.exec(cursor);
  if (!match) throw new InvalidArgumentError('page_token: not a token this service gave');
  return { createdAt: new Date(Number(match[1])), id: new ObjectId(match[2]!) };
}

/** A deleted card or collection: a late notification about it is refused (removeAbout). */
interface DeletedSubjectDocument {
  _id: string;
  deletedAt: Date;
}

/** How many of a user's notifications were ever removed, for the list's version. */
interface UserRemovalsDocument {
  _id: string;
  removed: number;
}

const isDuplicateKey = (err: unknown) => err instanceof MongoServerError && err.code === 11000;

/**
 * Notifications in the service's own MongoDB database. Every write touches one document, so no
 * transactions are needed; unique indexes on id, source event and subject make redelivery a no-op.
 */
export class MongoNotificationRepository implements NotificationRepository {
  private constructor(
    private readonly connection: MongoConnection,
    private readonly notifications: Collection<NotificationDocument>,
  ) {}

  private get deletedSubjects() {
    return this.connection.db.collection<DeletedSubjectDocument>('deleted_subjects');
  }

  private get userRemovals() {
    return this.connection.db.collection<UserRemovalsDocument>('user_removals');
  }

  static async open(connection: MongoConnection): Promise<MongoNotificationRepository> {
    const notifications = connection.db.collection<NotificationDocument>('notifications');
    await notifications.createIndexes([
      { key: { id: 1 }, name: 'id', unique: true },
      { key: { sourceEventId: 1 }, name: 'source_event', unique: true },
      { key: { subjectKey: 1 }, name: 'subject', unique: true },
      { key: { userId: 1, createdAt: -1, _id: -1 }, name: 'user_newest' },
      // The list's version (listVersionForUser): both counts over index keys, not the user's documents read to test userRead.
      { key: { userId: 1, userRead: 1 }, name: 'user_read' },
      { key: { cardId: 1 }, name: 'card', partialFilterExpression: { kind: 'verification' } },
      { key: { collectionId: 1 }, name: 'collection', partialFilterExpression: { kind: 'collection_created' } },
      { key: { createdAt: 1, _id: 1 }, name: 'oldest' },
    ]);
    await connection.db.collection<DeletedSubjectDocument>('deleted_subjects').createIndex({ deletedAt: 1 }, { name: 'deleted_at' });
    return new MongoNotificationRepository(connection, notifications);
  }

  async add(n: Notification): Promise<boolean> {
    const about = aboutKeyOf(n);
    if (await this.deletedSubjects.findOne({ _id: about })) return false;
    const doc = toPrimitives(n);
    try {
      await this.notifications.insertOne(doc);
    } catch (err) {
      if (isDuplicateKey(err)) return false;
      throw err;
    }
    // Deleted meanwhile (its removal ran between the check and the insert): not kept either.
    if (await this.deletedSubjects.findOne({ _id: about })) {
      await this.removeDocuments([{ _id: doc._id, userId: doc.userId }]);
      return false;
    }
    return true;
  }

  async removeAbout(subject: DeletedSubject, at: Date): Promise<number> {
    await this.deletedSubjects.updateOne({ _id: aboutKeyOf(subject) }, { $setOnInsert: { deletedAt: at } }, { upsert: true });
    const filter: Filter<NotificationDocument> = subject.kind === 'card' ? { kind: 'verification', cardId: subject.cardId } : { kind: 'collection_created', collectionId: subject.collectionId };
    const docs = await this.notifications.find(filter, { projection: { _id: 1, userId: 1 } }).toArray();
    return this.removeDocuments(docs);
  }

  async forgetDeletionsBefore(cutoff: Date, limit: number): Promise<number> {
    const forgotten = await this.deletedSubjects.find({ deletedAt: { $lt: cutoff } }, { projection: { _id: 1 } }).limit(limit).toArray();
    if (forgotten.length === 0) return 0;
    return (await this.deletedSubjects.deleteMany({ _id: { $in: forgotten.map((d) => d._id) } })).deletedCount;
  }

  async removeOlderThan(cutoff: Date, limit: number): Promise<number> {
    const docs = await this.notifications.find({ createdAt: { $lt: cutoff } }, { projection: { _id: 1, userId: 1 } }).sort({ createdAt: 1, _id: 1 }).limit(limit).toArray();
    return this.removeDocuments(docs);
  }

  /**
   * Deletes the documents, each user's removals counted before and again after: a version read meanwhile (its counts
   * taken before the deletion, its removals after the first count) names a list the user's never has again, as does
   * one read while a removal cut off before its end had deleted them.
   */
  private async removeDocuments(docs: Pick<NotificationDocument, '_id' | 'userId'>[]): Promise<number> {
    if (docs.length === 0) return 0;
    const perUser = new Map<string, number>();
    for (const d of docs) perUser.set(d.userId, (perUser.get(d.userId) ?? 0) + 1);
    const countRemovals = () => this.userRemovals.bulkWrite([...perUser].map(([userId, n]) => ({ updateOne: { filter: { _id: userId }, update: { $inc: { removed: n } }, upsert: true } })));
    await countRemovals();
    const result = await this.notifications.deleteMany({ _id: { $in: docs.map((d) => d._id) } });
    await countRemovals();
    return result.deletedCount;
  }

  async listForUser(userId: string): Promise<Notification[]> {
    const docs = await this.notifications.find({ userId }).sort({ createdAt: -1, _id: -1 }).toArray();
    return docs.map(fromPrimitives);
  }

  async listPageForUser(userId: string, limit: number, after?: string): Promise<NotificationPage> {
    let filter: Filter<NotificationDocument> = { userId };
    if (after !== undefined) {
      const { createdAt, id } = parseCursor(after);
      // The $lte bound lets the user_newest index narrow the scan; the $or is the exact (createdAt, _id) < cursor.
      filter = { userId, createdAt: { $lte: createdAt }, $or: [{ createdAt: { $lt: createdAt } }, { _id: { $lt: id } }] };
    }
    const docs = await this.notifications.find(filter).sort({ createdAt: -1, _id: -1 }).limit(limit + 1).toArray();
    const page = pageOfRows(docs, limit, cursorAfter);
    return { notifications: page.items.map(fromPrimitives), ...(page.next !== undefined ? { next: page.next } : {}) };
  }

  async markRead(userId: string, notificationId: string, at: Date): Promise<boolean> {
    const found = await this.notifications.findOne({ id: notificationId, userId }, { projection: { userRead: 1 } });
    if (!found) return false;
    if (!found.userRead) await this.notifications.updateOne({ id: notificationId, userId, userRead: false }, { $set: { userRead: true, updatedAt: at } });
    return true;
  }

  async markAllRead(userId: string, at: Date): Promise<number> {
    const result = await this.notifications.updateMany({ userId, userRead: false }, { $set: { userRead: true, updatedAt: at } });
    return result.modifiedCount;
  }

  /**
   * Three reads, no snapshot. Removals are read first: a removal landing between the counts then adds to what the user's
   * later versions carry, so this one never comes back for a changed list. The total is counted before the read ones:
   * a version never shows reads of notifications it does not count.
   */
  async listVersionForUser(userId: string): Promise<string> {
    const removed = (await this.userRemovals.findOne({ _id: userId }))?.removed ?? 0;
    const total = await this.notifications.countDocuments({ userId });
    const read = await this.notifications.countDocuments({ userId, userRead: true });
    // Unchanged for a user none of whose notifications was ever removed: their clients' tags stay valid.
    return removed ? `${total}.${read}.${removed}` : `${total}.${read}`;
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}
