import { Binary, ObjectId, type ClientSession, type Collection, type Db } from 'mongodb';
import { assertPublishable, type OutgoingEvent } from '../events/event-bus';
import type { OutboxEntry, OutboxStore } from '../events/outbox';

interface OutboxDocument {
  _id: ObjectId;
  topic: string;
  key: string;
  payload: Binary;
  createdAt: Date;
}

/** The outbox collection of a service's database. */
export function mongoOutbox(db: Db): Collection<OutboxDocument> {
  return db.collection<OutboxDocument>('outbox');
}

/**
 * Appends events to the outbox. Pass the transaction's session so the events commit with the state
 * change; without transactions, call it in the same single-document step's success path (see docs/engines.md).
 * Throws EventTooLargeError, writing none, when an event is over MAX_EVENT_BYTES.
 */
export async function appendToMongoOutbox(db: Db, events: readonly OutgoingEvent[], session?: ClientSession): Promise<void> {
  if (events.length === 0) return;
  assertPublishable(events);
  const now = new Date();
  await mongoOutbox(db).insertMany(
    events.map((e) => ({ _id: new ObjectId(), topic: e.topic, key: e.key, payload: new Binary(Buffer.from(e.payload)), createdAt: now })),
    { session, ordered: true },
  );
}

/**
 * Writes a change's events: inside the transaction when there is one; otherwise right after the change, undoing
 * the change when the events cannot be written (so no change is kept without its events). The error of the write
 * is what the caller sees, also when the undo fails too.
 */
export async function appendToMongoOutboxOrUndo(db: Db, events: readonly OutgoingEvent[], session: ClientSession | undefined, undo: () => Promise<unknown>): Promise<void> {
  if (session) return appendToMongoOutbox(db, events, session);
  try {
    await appendToMongoOutbox(db, events);
  } catch (err) {
    await undo().catch(() => undefined);
    throw err;
  }
}

/** OutboxStore on a MongoDB collection; entries come out in insertion (ObjectId) order. */
export class MongoOutboxStore implements OutboxStore {
  constructor(private readonly db: Db) {}

  async pending(limit: number): Promise<OutboxEntry[]> {
    const docs = await mongoOutbox(this.db).find({}).sort({ _id: 1 }).limit(limit).toArray();
    return docs.map((d) => ({ id: d._id.toHexString(), topic: d.topic, key: d.key, payload: new Uint8Array(d.payload.buffer) }));
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await mongoOutbox(this.db).deleteMany({ _id: { $in: ids.map((id) => new ObjectId(id)) } });
  }
}
