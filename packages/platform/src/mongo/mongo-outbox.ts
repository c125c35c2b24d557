import { Binary, ObjectId, type ClientSession, type Collection, type Db } from 'mongodb';
import { MongoLeases, type LeaseDocument } from './mongo-leases';
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

/**
 * A relay holds its lease for milliseconds and renews it while a long drain runs, so one not renewed for this long
 * belongs to a process that is stuck or gone; the other replicas' events wait at most this long after such a crash.
 */
const DRAIN_LEASE_MS = 10_000;

/**
 * The drain lease of an outbox in a MongoDB database that every replica of the service shares: a lease per outbox in
 * `outbox_leases` (MongoLeases), renewed while the holder drains, released after. One that stalls longer than the
 * lease may publish what the next holder publishes too (at-least-once).
 */
export class MongoOutboxDrainLease implements OutboxDrainLease {
  private readonly leases: MongoLeases;
  private readonly renewEveryMs: number;

  constructor(
    db: Db,
    private readonly outbox: string,
    leaseMs = DRAIN_LEASE_MS,
  ) {
    this.leases = new MongoLeases(db.collection<LeaseDocument>('outbox_leases'), leaseMs);
    this.renewEveryMs = leaseMs / 3;
  }

  async run(drain: () => Promise<void>): Promise<boolean> {
    const holder = await this.leases.take(this.outbox);
    if (holder === null) return false;
    const renewal = setInterval(() => void this.leases.renew(this.outbox, holder), this.renewEveryMs);
    renewal.unref();
    try {
      await drain();
      return true;
    } finally {
      clearInterval(renewal);
      await this.leases.release(this.outbox, holder);
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
