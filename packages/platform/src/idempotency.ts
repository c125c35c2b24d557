import { Status } from 'nice-grpc-common';
import { z } from 'zod';
import { envInt } from './config';
import { AlreadyExistsError, DomainError } from './errors';

/** The `reason` of IdempotencyKeyReusedError, by which the gateway answers it 422. */
export const IDEMPOTENCY_KEY_REUSED = 'IDEMPOTENCY_KEY_REUSED';

/**
 * Thrown when a client's idempotency key comes back with a request other than the one it was first used for
 * (draft-ietf-httpapi-idempotency-key-header: 422). Nothing is created or answered from the earlier request.
 */
export class IdempotencyKeyReusedError extends DomainError {
  readonly status = Status.FAILED_PRECONDITION;
  override readonly reason = IDEMPOTENCY_KEY_REUSED;
}

/**
 * Refuses a request whose fingerprint differs from the one stored with its key by the request that used it first.
 * Keys stored without a fingerprint (before fingerprints, or by a caller that sends none) match any request, as does
 * a request that sends none. `what`: what the key made ("a collection"), for the message.
 */
export function refuseOtherRequestForKey(storedFingerprint: string | null, sentFingerprint: string | undefined, what: string): void {
  if (storedFingerprint && sentFingerprint && storedFingerprint !== sentFingerprint) {
    throw new IdempotencyKeyReusedError(`Idempotency-Key: this key was used for a different request (it created ${what} with another body); send a new key for a new request`);
  }
}

/** Where a service keeps its resources' keys: the live resource holding one, and the kept key of a deleted one. */
export interface KeyedResources<T extends { requestFingerprint: string | null }> {
  live(): Promise<T | null>;
  deleted(): Promise<{ requestFingerprint: string | null } | null>;
}

/**
 * What an earlier create with the caller's key made, or null for none: the live resource when the request matches
 * the one that used the key first (IdempotencyKeyReusedError otherwise); a deleted resource's kept key refuses a
 * repeat (AlreadyExistsError with `deletedMessage`), since a late repeat would bring back what the user deleted.
 * `checkDeleted` false: a request without a fingerprint (a service's own key, not a client's) may create again.
 */
export async function earlierCreateForKey<T extends { requestFingerprint: string | null }>(
  resources: KeyedResources<T>,
  requestFingerprint: string | undefined,
  what: string,
  deletedMessage: string,
  checkDeleted = true,
): Promise<T | null> {
  const existing = await resources.live();
  if (existing) {
    refuseOtherRequestForKey(existing.requestFingerprint, requestFingerprint, what);
    return existing;
  }
  if (!checkDeleted) return null;
  const deleted = await resources.deleted();
  if (!deleted) return null;
  refuseOtherRequestForKey(deleted.requestFingerprint, requestFingerprint, what);
  throw new AlreadyExistsError(deletedMessage);
}

/** How long a deleted resource's key keeps refusing a repeat of its create when IDEMPOTENCY_KEY_TTL_HOURS is unset. */
export const DEFAULT_IDEMPOTENCY_KEY_TTL_HOURS = 24;

/** IDEMPOTENCY_KEY_TTL_HOURS in a service's config: whole hours, 1 to 87600 (ten years). */
export const envIdempotencyKeyTtlHours = () =>
  envInt(DEFAULT_IDEMPOTENCY_KEY_TTL_HOURS).pipe(z.number().min(1, 'must be at least 1 (hour)').max(87_600, 'must be at most 87600 (ten years)'));

/**
 * How long the kept key of a deleted resource lasts, and the clock it is read by (tests pass their own). Once expired,
 * the key is as unknown: a repeat with it creates anew. A live resource keeps its key as long as it exists.
 */
export interface KeptKeyExpiry {
  ttlMs: number;
  now: () => Date;
}

export function keptKeyExpiry(ttlHours: number = DEFAULT_IDEMPOTENCY_KEY_TTL_HOURS, now: () => Date = () => new Date()): KeptKeyExpiry {
  return { ttlMs: ttlHours * 3_600_000, now };
}

/** Kept keys of resources deleted at or before this moment have expired. */
export const keptKeysExpiredAt = (expiry: KeptKeyExpiry): Date => new Date(expiry.now().getTime() - expiry.ttlMs);

/**
 * Expired kept keys removed, at most, by each deletion that keeps a key (in its transaction, oldest first): more than
 * the one key it adds, so they never pile up, and a bounded amount of work per deletion. No timer runs for them.
 */
export const EXPIRED_KEYS_PER_SWEEP = 100;
