import { setTimeout as sleep } from 'node:timers/promises';
import { MongoLeases, UnavailableError, type LeaseDocument } from '@cards/platform';
import type { Collection } from 'mongodb';
import type { ContentLock } from '../../domain/ports';
import { InProcessContentLock } from '../in-process/in-process-content-lock';

/** A held lock (MongoLeases): `expiresAt` ends the lease and lets the TTL index clean up. */
export type ContentLockDocument = LeaseDocument;

export interface MongoContentLockOptions {
  /** How long a holder keeps the key at most; after it another process may take the key (a crashed holder's too). */
  leaseMs?: number;
  /** How long to wait for a taken key before giving up with UnavailableError (default 5 s). */
  maxWaitMs?: number;
}

const DEFAULT_LEASE_MS = 30_000;
// A holder takes milliseconds; one that keeps the key for seconds is stuck or gone. Waiting stays under the gateway's
// 10 s call deadline, so the caller hears 'try again' instead of a deadline while its card is created after all.
const DEFAULT_MAX_WAIT_MS = 5_000;

/**
 * A lock per key shared by every process on the database: a lease per key (MongoLeases), which a taker finding it
 * held waits for. Waiters of this process queue in memory first, so only one of them polls the database.
 */
export class MongoContentLock implements ContentLock {
  private readonly local = new InProcessContentLock();
  private readonly leases: MongoLeases;
  private readonly maxWaitMs: number;

  constructor(locks: Collection<ContentLockDocument>, options: MongoContentLockOptions = {}) {
    this.leases = new MongoLeases(locks, options.leaseMs ?? DEFAULT_LEASE_MS);
    this.maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
  }

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.local.run(key, async () => {
      const holder = await this.acquire(key);
      try {
        return await task();
      } finally {
        await this.leases.release(key, holder);
      }
    });
  }

  private async acquire(key: string): Promise<string> {
    // The wait is timed by this process's monotonic clock: by the wall clock, set back an hour, a create would poll for
    // an hour; set forward, it would give up at once. (The leases' expiries are wall-clock times, shared by processes.)
    const giveUpAt = performance.now() + this.maxWaitMs;
    for (let pause = 5; ; pause = Math.min(pause * 2, 100)) {
      const holder = await this.leases.take(key);
      if (holder !== null) return holder;
      if (performance.now() >= giveUpAt) throw new UnavailableError('A card with the same text is being created; try again');
      await sleep(pause);
    }
  }
}
