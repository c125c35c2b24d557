import type { Collection, Filter } from 'mongodb';
import { AlreadyExistsError, appendToMongoOutboxOrUndo, creationCursor, isDuplicateKeyError, keptKeyExpiry, keptKeysExpiredAt, pageOfRows, removeExpiredKeptKeys, withOptionalTransaction, type KeptKeyExpiry, type MongoConnection, type OutgoingEvent, type Page } from '@cards/platform';
import type { DeletedIdempotencyKey, DocumentFormat, FileRecord, IngestionStatus } from '../../domain/model';
import type { FileRepository, IngestionClaim, IngestionOutcome } from '../../domain/ports';

interface FileDocument {
  _id: string;
  userId: string;
  fileName: string;
  mimeType: string;
  format: string;
  private: boolean;
  size: number;
  tags: string[];
  ocFilePath: string | null;
  ingestionStatus: string;
  ingestionError: string | null;
  cardCount: number;
  collectionId: string | null;
  /**
   * The client's key of the upload, and `<userId>\n<key>`, present only when there was one: the sparse unique index on
   * `idempotency` makes (user, key) unique.
   */
  idempotencyKey?: string;
  idempotency?: string;
  /** The fingerprint of the request that carried the key, present only when there was one. */
  requestFingerprint?: string;
  createdAt: Date;
  updatedAt: Date;
  /**
   * The ingestion queue (docs/files.md#fair-ingestion), absent on records stored before it (read as none / 0): attempts
   * started, the claim's holder and end, when a failed attempt is retried.
   */
  ingestionAttempts?: number;
  claimHolder?: string | null;
  claimedUntil?: Date | null;
  retryAt?: Date | null;
}

/** Each owner's last claimed ingestion start (`_id` = user id), the order of the ingestion queue's turns. */
interface IngestionTurnDocument {
  _id: string;
  lastStartedAt: Date;
}

/** The kept key of a deleted file; `_id` = `<userId>\n<key>`. */
interface DeletedIdempotencyKeyDocument {
  _id: string;
  requestFingerprint: string | null;
  deletedAt: Date;
}

const idempotencyOf = (userId: string, key: string) => `${userId}\n${key}`;

function toPrimitives(r: FileRecord): FileDocument {
  const { id, idempotencyKey, requestFingerprint, ...rest } = r;
  const doc: FileDocument = { _id: id, ...rest, tags: [...r.tags] };
  if (idempotencyKey !== null) Object.assign(doc, { idempotencyKey, idempotency: idempotencyOf(r.userId, idempotencyKey) });
  if (requestFingerprint !== null) doc.requestFingerprint = requestFingerprint;
  return doc;
}

function fromPrimitives(d: FileDocument): FileRecord {
  return {
    id: d._id,
    userId: d.userId,
    fileName: d.fileName,
    mimeType: d.mimeType,
    format: d.format as DocumentFormat,
    private: d.private,
    size: d.size,
    tags: d.tags,
    ocFilePath: d.ocFilePath,
    ingestionStatus: d.ingestionStatus as IngestionStatus,
    ingestionError: d.ingestionError,
    cardCount: d.cardCount,
    collectionId: d.collectionId,
    idempotencyKey: d.idempotencyKey ?? null,
    requestFingerprint: d.requestFingerprint ?? null,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

/**
 * File records in the service's MongoDB database (collection `files`, outbox beside it). On a replica
 * set a record and its events commit in one transaction; on a standalone server the record is written
 * first and removed again when its events cannot be written, so no event is lost and no record
 * without its event stays behind.
 */
export class MongoFileRepository implements FileRepository {
  private constructor(
    private readonly connection: MongoConnection,
    private readonly files: Collection<FileDocument>,
    private readonly deletedKeys: Collection<DeletedIdempotencyKeyDocument>,
    private readonly keyExpiry: KeptKeyExpiry,
    private readonly turns: Collection<IngestionTurnDocument>,
  ) {}

  /** `keyExpiry`: how long the keys of deleted files are kept (IDEMPOTENCY_KEY_TTL_HOURS; 24 h by the real clock when not given). */
  static async open(connection: MongoConnection, keyExpiry: KeptKeyExpiry = keptKeyExpiry()): Promise<MongoFileRepository> {
    const files = connection.db.collection<FileDocument>('files');
    const deletedKeys = connection.db.collection<DeletedIdempotencyKeyDocument>('deleted_idempotency_keys');
    await files.createIndex({ userId: 1, createdAt: -1 });
    await files.createIndex({ idempotency: 1 }, { unique: true, sparse: true, name: 'files_idempotency' });
    // Expired kept keys, oldest first, for the deletions that remove them (removeExpiredKeptKeys: not a TTL index).
    await deletedKeys.createIndex({ deletedAt: 1 }, { name: 'deleted_idempotency_keys_deleted_at' });
    // The ingestion queue: pending files, oldest first (claimNextIngestion).
    await files.createIndex({ ingestionStatus: 1, createdAt: 1, _id: 1 }, { name: 'files_ingestion_queue' });
    return new MongoFileRepository(connection, files, deletedKeys, keyExpiry, connection.db.collection<IngestionTurnDocument>('ingestion_turns'));
  }

  async create(record: FileRecord, events: OutgoingEvent[]): Promise<void> {
    const doc = toPrimitives(record);
    try {
      await withOptionalTransaction(this.connection, async (session) => {
        await this.files.insertOne(doc, { session });
        await appendToMongoOutboxOrUndo(this.connection.db, events, session, () => this.files.deleteOne({ _id: record.id }));
      });
    } catch (err) {
      if (isDuplicateKeyError(err, 'idempotency')) throw new AlreadyExistsError('A file with this idempotency key already exists');
      throw err;
    }
  }

  async get(id: string): Promise<FileRecord | null> {
    const doc = await this.files.findOne({ _id: id });
    return doc ? fromPrimitives(doc) : null;
  }

  async findByIdempotencyKey(userId: string, key: string): Promise<FileRecord | null> {
    const doc = await this.files.findOne({ idempotency: idempotencyOf(userId, key) });
    return doc ? fromPrimitives(doc) : null;
  }

  /** The kept key of a deleted file, or null for none or an expired one (not yet removed). */
  async findDeletedIdempotencyKey(userId: string, key: string): Promise<DeletedIdempotencyKey | null> {
    const doc = await this.deletedKeys.findOne({ _id: idempotencyOf(userId, key), deletedAt: { $gt: keptKeysExpiredAt(this.keyExpiry) } });
    return doc ? { requestFingerprint: doc.requestFingerprint ?? null, deletedAt: doc.deletedAt } : null;
  }

  async listByUser(userId: string): Promise<FileRecord[]> {
    const docs = await this.files.find({ userId }).sort({ createdAt: -1, _id: 1 }).toArray();
    return docs.map(fromPrimitives);
  }

  async listPageByUser(userId: string, includePrivate: boolean, limit: number, after?: string): Promise<Page<FileRecord>> {
    let filter: Filter<FileDocument> = includePrivate ? { userId } : { userId, private: false };
    if (after !== undefined) {
      const { createdAt, id } = creationCursor.parse(after);
      // The $lte bound lets the (userId, createdAt) index narrow the scan; the $or is the exact (createdAt desc, _id asc) position after the cursor.
      filter = { ...filter, createdAt: { $lte: createdAt }, $or: [{ createdAt: { $lt: createdAt } }, { _id: { $gt: id } }] };
    }
    const docs = await this.files.find(filter).sort({ createdAt: -1, _id: 1 }).limit(limit + 1).toArray();
    return pageOfRows(docs.map(fromPrimitives), limit, creationCursor.after);
  }

  async setPrivacy(id: string, isPrivate: boolean, now: Date, events: OutgoingEvent[]): Promise<boolean> {
    return withOptionalTransaction(this.connection, async (session) => {
      const before = await this.files.findOneAndUpdate({ _id: id }, { $set: { private: isPrivate, updatedAt: now } }, { session, returnDocument: 'before' });
      if (!before) return false;
      if (before.private !== isPrivate) {
        // Without a transaction: put the old flag back if its events cannot be written (unless another change came since).
        await appendToMongoOutboxOrUndo(this.connection.db, events, session, () =>
          this.files.updateOne({ _id: id, private: isPrivate, updatedAt: now }, { $set: { private: before.private, updatedAt: before.updatedAt } }),
        );
      }
      return true;
    });
  }

  async setIngestion(id: string, outcome: IngestionOutcome, now: Date): Promise<boolean> {
    const result = await this.files.updateOne(
      { _id: id },
      {
        $set: {
          ingestionStatus: outcome.status,
          ingestionError: outcome.error,
          cardCount: outcome.cardCount,
          collectionId: outcome.collectionId,
          updatedAt: now,
          claimHolder: null,
          claimedUntil: null,
          retryAt: null,
        },
      },
    );
    return result.matchedCount > 0;
  }

  async claimNextIngestion(holder: string, now: Date, leaseMs: number): Promise<IngestionClaim | null> {
    // Pending, unclaimed or its claim ran out, retry time reached (a missing field matches null).
    const due: Filter<FileDocument> = {
      ingestionStatus: 'pending',
      $and: [{ $or: [{ claimedUntil: null }, { claimedUntil: { $lte: now } }] }, { $or: [{ retryAt: null }, { retryAt: { $lte: now } }] }],
    };
    // A claim taken by another replica between the look and the update is looked for again.
    for (let round = 0; round < 10; round++) {
      const owners = (await this.files.distinct('userId', due)) as string[];
      if (owners.length === 0) return null;
      const last = new Map((await this.turns.find({ _id: { $in: owners } }).toArray()).map((t) => [t._id, t.lastStartedAt.getTime()]));
      const turnOf = (owner: string) => last.get(owner) ?? -Infinity;
      const first = Math.min(...owners.map(turnOf));
      const nextOwners = owners.filter((owner) => turnOf(owner) === first);
      const [candidate] = await this.files.find({ ...due, userId: { $in: nextOwners } }).sort({ createdAt: 1, _id: 1 }).limit(1).toArray();
      if (!candidate) continue;
      const claimed = await this.files.findOneAndUpdate(
        { ...due, _id: candidate._id },
        { $set: { claimHolder: holder, claimedUntil: new Date(now.getTime() + leaseMs), retryAt: null }, $inc: { ingestionAttempts: 1 } },
        { returnDocument: 'after' },
      );
      if (!claimed) continue;
      await this.turns.updateOne({ _id: claimed.userId }, { $max: { lastStartedAt: now } }, { upsert: true });
      return { file: fromPrimitives(claimed), attempt: claimed.ingestionAttempts ?? 1 };
    }
    return null;
  }

  async renewIngestionClaim(id: string, holder: string, until: Date): Promise<boolean> {
    const result = await this.files.updateOne({ _id: id, claimHolder: holder, ingestionStatus: 'pending' }, { $set: { claimedUntil: until } });
    return result.matchedCount > 0;
  }

  async releaseIngestionClaim(id: string, holder: string, retryAt: Date, attemptCounted: boolean): Promise<void> {
    await this.files.updateOne(
      { _id: id, claimHolder: holder, ingestionStatus: 'pending' },
      { $set: { claimHolder: null, claimedUntil: null, retryAt }, ...(attemptCounted ? {} : { $inc: { ingestionAttempts: -1 } }) },
    );
  }

  async releaseIngestionClaimsOf(holder: string): Promise<number> {
    const result = await this.files.updateMany({ claimHolder: holder }, { $set: { claimHolder: null, claimedUntil: null } });
    return result.modifiedCount;
  }

  async delete(id: string, events: OutgoingEvent[]): Promise<boolean> {
    return withOptionalTransaction(this.connection, async (session) => {
      // The key first: without a transaction, a delete cut after it leaves the record and its kept key (the record wins).
      const keyed = await this.files.findOne({ _id: id }, { session, projection: { userId: 1, idempotencyKey: 1, requestFingerprint: 1 } });
      if (keyed?.idempotencyKey != null) {
        const kept = { requestFingerprint: keyed.requestFingerprint ?? null, deletedAt: this.keyExpiry.now() };
        await this.deletedKeys.updateOne({ _id: idempotencyOf(keyed.userId, keyed.idempotencyKey) }, { $set: kept }, { upsert: true, session });
        await removeExpiredKeptKeys(this.deletedKeys, keptKeysExpiredAt(this.keyExpiry), session);
      }
      // Without a transaction: take the record out, and put it back if its events cannot be written.
      const doc = await this.files.findOneAndDelete({ _id: id }, { session });
      if (!doc) return false;
      await appendToMongoOutboxOrUndo(this.connection.db, events, session, () => this.files.insertOne(doc));
      return true;
    });
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}
