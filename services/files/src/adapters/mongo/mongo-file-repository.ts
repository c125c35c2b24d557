import type { Collection, Filter } from 'mongodb';
import { appendToMongoOutboxOrUndo, creationCursor, pageOfRows, withOptionalTransaction, type MongoConnection, type OutgoingEvent, type Page } from '@cards/platform';
import type { DocumentFormat, FileRecord, IngestionStatus } from '../../domain/model';
import type { FileRepository, IngestionOutcome } from '../../domain/ports';

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
  createdAt: Date;
  updatedAt: Date;
}

function toPrimitives(r: FileRecord): FileDocument {
  const { id, ...rest } = r;
  return { _id: id, ...rest, tags: [...r.tags] };
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
  ) {}

  static async open(connection: MongoConnection): Promise<MongoFileRepository> {
    const files = connection.db.collection<FileDocument>('files');
    await files.createIndex({ userId: 1, createdAt: -1 });
    return new MongoFileRepository(connection, files);
  }

  async create(record: FileRecord, events: OutgoingEvent[]): Promise<void> {
    const doc = toPrimitives(record);
    await withOptionalTransaction(this.connection, async (session) => {
      await this.files.insertOne(doc, { session });
      await appendToMongoOutboxOrUndo(this.connection.db, events, session, () => this.files.deleteOne({ _id: record.id }));
    });
  }

  async get(id: string): Promise<FileRecord | null> {
    const doc = await this.files.findOne({ _id: id });
    return doc ? fromPrimitives(doc) : null;
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
      { $set: { ingestionStatus: outcome.status, ingestionError: outcome.error, cardCount: outcome.cardCount, collectionId: outcome.collectionId, updatedAt: now } },
    );
    return result.matchedCount > 0;
  }

  async delete(id: string, events: OutgoingEvent[]): Promise<boolean> {
    return withOptionalTransaction(this.connection, async (session) => {
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
