import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

/** What travels with one request across the gateway and every gRPC hop. */
export interface RequestContext {
  requestId: string;
  /**
   * Aborted when the work done for the request is no longer wanted (the gateway: its client went away before the
   * answer was sent). Every gRPC call made in this context ends with it (callPolicyMiddleware), as a cancelled call.
   */
  signal?: AbortSignal;
  /**
   * When (ms since the epoch) the call's waits for a SQLite store's write lock (another connection holding it) must have
   * ended: a little before its caller's deadline (storeWaitUntilFor), so that a store kept locked is answered 503 Service
   * busy with Retry-After, not a 504 once the waits of several writes add up. Unset: STORE_BUSY_TIMEOUT_MS per write.
   */
  storeWaitUntil?: number;
}

/** Metadata key carrying the time a gRPC call's caller gives it (its deadline, in ms from sending). */
export const CALL_BUDGET_METADATA_KEY = 'x-call-budget-ms';

/**
 * The end of a call's store-wait budget, given the ms its caller allows it: four fifths of them (10 s, the gateway's
 * GRPC_DEADLINE_MS default: 8 s), leaving the rest for the failing write's answer to travel back. None given: unset.
 */
export function storeWaitUntilFor(callBudget: string | undefined, now: number = Date.now()): number | undefined {
  const ms = Number(callBudget);
  return callBudget && Number.isFinite(ms) && ms > 0 ? now + Math.floor(ms * 0.8) : undefined;
}

const storage = new AsyncLocalStorage<RequestContext>();

export const REQUEST_ID_METADATA_KEY = 'x-request-id';

export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

export function runWithRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/**
 * Runs `fn` outside any request's context: for background work a request only sets off (the outbox relay's drain
 * after its commit), which must not take that request's store-wait budget, abort signal or request id with it.
 */
export function runOutsideRequestContext<T>(fn: () => T): T {
  return storage.exit(fn);
}

/**
 * A caller-supplied id is kept only when it is plain and of a sane length (8 to 128 of A-Z a-z 0-9 . _ -), so logs
 * cannot be forged or flooded, and a short id ("1", "abc") shared by many requests does not merge them; anything else
 * is replaced by a new UUID (the answer's x-request-id says which).
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{8,128}$/;

export function requestIdFrom(candidate: string | undefined): string {
  return candidate && REQUEST_ID_PATTERN.test(candidate) ? candidate : randomUUID();
}
