import { ClientError, Status } from 'nice-grpc-common';

/** The message of anything thrown: an Error's message, or the value as a string. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Base of the errors a use case throws; the gRPC middleware maps each to its status. */
export abstract class DomainError extends Error {
  abstract readonly status: Status;
  /** Why, when the status alone does not say it to a caller that must tell this error apart (sent as statusReasonOf gives it). */
  readonly reason?: string;
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** Thrown when a request breaks an input rule; the message names the field. */
export class InvalidArgumentError extends DomainError {
  readonly status = Status.INVALID_ARGUMENT;
}

/**
 * Throws InvalidArgumentError "<field>: <problem>" when an input rule found a problem, given as the rules of
 * @cards/card-rules return one (text meant to follow the field's name, or null when there is none). Platform does not
 * depend on those rules; this is where every service turns what they find into the 400 that names the field.
 */
export function refuseIfProblem(field: string, problem: string | null): void {
  if (problem !== null) throw new InvalidArgumentError(`${field}: ${problem}`);
}

/** Thrown when a resource does not exist or must not be revealed to the caller. */
export class NotFoundError extends DomainError {
  readonly status = Status.NOT_FOUND;
}
/** Thrown when the caller may see a resource but not change it. */
export class PermissionDeniedError extends DomainError {
  readonly status = Status.PERMISSION_DENIED;
}
/** Thrown when the caller is not (or no longer) authenticated. */
export class UnauthenticatedError extends DomainError {
  readonly status = Status.UNAUTHENTICATED;
}
/** Thrown when a unique thing already exists. */
export class AlreadyExistsError extends DomainError {
  readonly status = Status.ALREADY_EXISTS;
}
/** Thrown when the state of the system forbids the operation (expired invitation, used token ...). */
export class FailedPreconditionError extends DomainError {
  readonly status = Status.FAILED_PRECONDITION;
}
/** Thrown when a quota or size limit is exceeded. */
export class ResourceExhaustedError extends DomainError {
  readonly status = Status.RESOURCE_EXHAUSTED;
}
/** The reason a TooLargeError carries, so a caller tells a thing too large (HTTP 413) from a quota (429). */
export const TOO_LARGE = 'TOO_LARGE';
/** Thrown when what the caller sent is larger than the service takes (a document over MAX_FILE_BYTES). */
export class TooLargeError extends ResourceExhaustedError {
  override readonly reason = TOO_LARGE;
}
/**
 * Thrown when a change would write an event larger than the event bus carries (MAX_EVENT_BYTES): the change is
 * refused with it, since a stored event the bus refuses would hold back every event written after it.
 */
export class EventTooLargeError extends FailedPreconditionError {}
/** The reason a ChangedSinceReadError carries, so the gateway answers it 412 (If-Match), not 400. */
export const CHANGED_SINCE_READ = 'CHANGED_SINCE_READ';
/** Thrown when a conditional change (the version the caller read, HTTP If-Match) finds the resource changed since. */
export class ChangedSinceReadError extends FailedPreconditionError {
  override readonly reason = CHANGED_SINCE_READ;
}
/** Thrown when a dependency (store, engine, peer) cannot be reached right now. */
export class UnavailableError extends DomainError {
  readonly status = Status.UNAVAILABLE;
}
/**
 * An UnavailableError that passes with time (an HTTP dependency that is down, overloaded or rate-limiting):
 * an event whose handler fails with it is retried until it succeeds, never dead-lettered.
 */
export class RetryableUnavailableError extends UnavailableError {}
/**
 * A handler's way to say its event is not due yet (a deleted file's bytes kept for a grace): delivered again like a
 * RetryableUnavailableError, never dead-lettered, but logged as a debug line, since nothing failed.
 */
export class NotDueYetError extends RetryableUnavailableError {}

/**
 * A peer's UNAVAILABLE (down, restarting, draining, busy) or UNIMPLEMENTED (it runs a release without the method yet:
 * per-team releases upgraded the caller first, docs/deploy.md#upgrade-order) as a RetryableUnavailableError, which the
 * event buses retry with backoff without counting it against maxAttempts: an event consumer that calls the peer waits
 * for it instead of dead-lettering the event. Any other error is returned as it is.
 */
export function retryableWhenPeerNotReady(err: unknown): unknown {
  if (!(err instanceof ClientError) || (err.code !== Status.UNAVAILABLE && err.code !== Status.UNIMPLEMENTED)) return err;
  const why = err.code === Status.UNIMPLEMENTED ? 'does not have this method yet (release the callee first)' : 'is unavailable';
  const retryable = new RetryableUnavailableError(`${err.path}: the peer ${why}: ${err.details}`);
  Object.defineProperty(retryable, 'cause', { value: err, enumerable: false, writable: true, configurable: true });
  return retryable;
}
/**
 * The status reason of an UNAVAILABLE a service answers because the storage a write went to is full (isStorageFullError):
 * the gateway passes its message on with the 503, so the user reads why the write was not stored.
 */
export const STORAGE_FULL = 'STORAGE_FULL';
export const STORAGE_FULL_MESSAGE = 'Storage is full, try again later: nothing was saved';
/** What a write that waited busy_timeout for a store another connection kept locked (isStoreBusyError) answers. */
export const STORE_BUSY_MESSAGE = 'Service busy: its storage is locked for a moment (a backup may be copying it); try again shortly';
/** The reason a ServiceBusyError carries, so a caller tells a service momentarily full from one that cannot answer. */
export const SERVICE_BUSY = 'SERVICE_BUSY';
/**
 * Thrown when a service refuses work because a bound of its own is full right now (the cards service's large-HTML
 * cleaners and their line): nothing is broken and the same request succeeds in a few seconds (the gateway: 503 with
 * the message and Retry-After).
 */
export class ServiceBusyError extends UnavailableError {
  override readonly reason = SERVICE_BUSY;
}
