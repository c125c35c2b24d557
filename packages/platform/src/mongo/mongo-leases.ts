import { randomUUID } from 'node:crypto';
import type { Collection } from 'mongodb';
import { isDuplicateKeyError } from './mongo-connection';

/** A lease on a key: `_id` is the key, unique by nature; `holder` has it until `expiresAt`. */
export interface LeaseDocument {
  _id: string;
  holder: string;
  expiresAt: Date;
}

/**
 * Leases on keys that several processes share through one MongoDB collection: a key is taken by an upsert that matches
 * only an expired lease, so a live one makes it fail on `_id`. A holder that crashed lets go when its lease ends.
 */
export class MongoLeases {
  constructor(
    private readonly leases: Collection<LeaseDocument>,
    private readonly leaseMs: number,
  ) {}

  /** The holder's token when the key was free (or its lease over); null while another process holds it. */
  async take(key: string): Promise<string | null> {
    const holder = randomUUID();
    const now = Date.now();
    try {
      await this.leases.updateOne({ _id: key, expiresAt: { $lte: new Date(now) } }, { $set: { holder, expiresAt: new Date(now + this.leaseMs) } }, { upsert: true });
      return holder;
    } catch (err) {
      if (isDuplicateKeyError(err)) return null;
      throw err;
    }
  }

  /** Extends the holder's lease by a whole lease from now; a failure only lets the lease end on time. */
  async renew(key: string, holder: string): Promise<void> {
    await this.leases.updateOne({ _id: key, holder }, { $set: { expiresAt: new Date(Date.now() + this.leaseMs) } }).catch(() => undefined);
  }

  /** Lets the key go; a failed release only keeps it until the lease ends. */
  async release(key: string, holder: string): Promise<void> {
    await this.leases.deleteOne({ _id: key, holder }).catch(() => undefined);
  }
}
