import type { ClientSession, Collection } from 'mongodb';
import { EXPIRED_KEYS_PER_SWEEP } from '../idempotency';

/**
 * Removes up to EXPIRED_KEYS_PER_SWEEP kept keys of deleted resources that were deleted at or before `expiredAt`,
 * oldest first (by an index on deletedAt). The delete checks the time again: a key kept anew since it was read (its
 * resource made again and deleted again) stays. Not a TTL index: its period is fixed when the index is created, where
 * IDEMPOTENCY_KEY_TTL_HOURS is each replica's setting, and its clock is the server's.
 */
export async function removeExpiredKeptKeys<T extends { _id: string; deletedAt: Date }>(keys: Collection<T>, expiredAt: Date, session: ClientSession | undefined): Promise<void> {
  const old = keys as unknown as Collection<{ _id: string; deletedAt: Date }>;
  const expired = await old.find({ deletedAt: { $lte: expiredAt } }, { session, projection: { _id: 1 } }).sort({ deletedAt: 1 }).limit(EXPIRED_KEYS_PER_SWEEP).toArray();
  if (expired.length > 0) await old.deleteMany({ _id: { $in: expired.map((k) => k._id) }, deletedAt: { $lte: expiredAt } }, { session });
}
