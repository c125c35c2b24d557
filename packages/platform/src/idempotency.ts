import { Status } from 'nice-grpc-common';
import { DomainError } from './errors';

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
