import { randomUUID } from 'node:crypto';
import { Binary, ObjectId, type ClientSession, type Collection, type Db } from 'mongodb';
import { isDuplicateKeyError } from './mongo-connection';
import { assertPublishable, type OutgoingEvent } from '../events/event-bus';
import type { OutboxDrainLease, OutboxEntry, OutboxStore } from '../events/outbox';

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

interface OutboxLeaseDocument {
  /** The outbox the lease is for (one database may hold several). */
  _id: string;
  holder: string;
  expiresAt: Date;
}

/**
 * A relay holds its lease for milliseconds and renews it while a long drain runs, so one not renewed for this long
 * belongs to a process that is stuck or gone; the other replicas' events wait at most this long after such a crash.
 */
const DRAIN_LEASE_MS = 10_000;

/**
 * The drain lease of an outbox in a MongoDB database that every replica of the service shares: a document per
 * outbox in `outbox_leases`, taken by an upsert that matches only an expired lease (a live one makes it fail on
 * `_id`), renewed while the holder drains, deleted by its holder after. A holder that crashed lets go when its
 * lease ends; one that stalls longer than the lease may publish what the next holder publishes too (at-least-once).
 */
export class MongoOutboxDrainLease implements OutboxDrainLease {
  constructor(
    private readonly db: Db,
    private readonly outbox: string,
    private readonly leaseMs = DRAIN_LEASE_MS,
  ) {}

  private get leases(): Collection<OutboxLeaseDocument> {
    return this.db.collection<OutboxLeaseDocument>('outbox_leases');
  }

  async run(drain: () => Promise<void>): Promise<boolean> {
    const holder = randomUUID();
    const now = Date.now();
    try {
      await this.leases.updateOne({ _id: this.outbox, expiresAt: { $lte: new Date(now) } }, { $set: { holder, expiresAt: new Date(now + this.leaseMs) } }, { upsert: true });
    } catch (err) {
      if (isDuplicateKeyError(err)) return false;
      throw err;
    }
    const renewal = setInterval(() => {
      this.leases.updateOne({ _id: this.outbox, holder }, { $set: { expiresAt: new Date(Date.now() + this.leaseMs) } }).catch(() => undefined);
    }, this.leaseMs / 3);
    renewal.unref();
    try {
      await drain();
      return true;
    } finally {
      clearInterval(renewal);
      // A failed release only keeps the other relays waiting until the lease ends.
      await this.leases.deleteOne({ _id: this.outbox, holder }).catch(() => undefined);
    }
  }
}

/**
 * OutboxStore on a MongoDB collection; entries come out in insertion (ObjectId) order. Every replica of a service
 * writes to the one collection, so their relays take turns through its drain lease.
 */
export class MongoOutboxStore implements OutboxStore {
  readonly drainLease: OutboxDrainLease;

  constructor(private readonly db: Db) {
    this.drainLease = new MongoOutboxDrainLease(db, 'outbox');
  }

  async pending(limit: number): Promise<OutboxEntry[]> {
    const docs = await mongoOutbox(this.db).find({}).sort({ _id: 1 }).limit(limit).toArray();
    return docs.map((d) => ({ id: d._id.toHexString(), topic: d.topic, key: d.key, payload: new Uint8Array(d.payload.buffer) }));
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await mongoOutbox(this.db).deleteMany({ _id: { $in: ids.map((id) => new ObjectId(id)) } });
  }

  async count(): Promise<number> {
    return mongoOutbox(this.db).countDocuments({});
  }
}
