import type { Collection, Db } from 'mongodb';
import { isDuplicateKeyError } from '@cards/platform';
import { windowStartOf, type AttemptCount, type AttemptCounter } from '../../domain/attempt-counter';

/** One key's attempts in one window: `_id` names the key and the window, so a new window is a new document. */
interface AttemptWindowDocument {
  _id: string;
  key: string;
  attempts: number;
  /** The window's end; the TTL index drops the document after it. */
  expiresAt: Date;
}

/**
 * Counts in one MongoDB collection that every gateway replica shares: each attempt is one atomic upsert
 * ($inc) on its key's window document, and a TTL index removes ended windows.
 */
export class MongoAttemptCounter implements AttemptCounter {
  private constructor(
    private readonly windows: Collection<AttemptWindowDocument>,
    private readonly now: () => number,
  ) {}

  /** The counter on `db`'s `auth_attempts` collection, its indexes made. */
  static async open(db: Db, now: () => number = Date.now): Promise<MongoAttemptCounter> {
    const windows = db.collection<AttemptWindowDocument>('auth_attempts');
    await Promise.all([
      windows.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, name: 'auth_attempts_expiry' }),
      windows.createIndex({ key: 1 }, { name: 'auth_attempts_key' }),
    ]);
    return new MongoAttemptCounter(windows, now);
  }

  async record(key: string, windowMs: number): Promise<AttemptCount> {
    const { id, endsAt } = this.window(key, windowMs);
    const recordOnce = () =>
      this.windows.findOneAndUpdate(
        { _id: id },
        { $inc: { attempts: 1 }, $setOnInsert: { key, expiresAt: endsAt } },
        { upsert: true, returnDocument: 'after' },
      );
    // Two first attempts at once may both insert; the one refused on _id then finds the document and counts in it.
    const counted = await recordOnce().catch((err: unknown) => (isDuplicateKeyError(err) ? recordOnce() : Promise.reject(err)));
    return { attempts: counted?.attempts ?? 1, windowEndsAt: endsAt };
  }

  async takeBack(key: string, windowMs: number): Promise<void> {
    await this.windows.updateOne({ _id: this.window(key, windowMs).id, attempts: { $gt: 0 } }, { $inc: { attempts: -1 } });
  }

  async forget(key: string): Promise<void> {
    await this.windows.deleteMany({ key });
  }

  private window(key: string, windowMs: number): { id: string; endsAt: Date } {
    const start = windowStartOf(this.now(), windowMs);
    return { id: `${windowMs}/${start}/${key}`, endsAt: new Date(start + windowMs) };
  }
}
