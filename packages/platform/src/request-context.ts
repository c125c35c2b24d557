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
 * A caller-supplied id is kept only when it is plain and of a sane length (8 to 128 of A-Z a-z 0-9 . _ -), so logs
 * cannot be forged or flooded, and a short id ("1", "abc") shared by many requests does not merge them; anything else
 * is replaced by a new UUID (the answer's x-request-id says which).
 */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9._-]{8,128}$/;

export function requestIdFrom(candidate: string | undefined): string {
  return candidate && REQUEST_ID_PATTERN.test(candidate) ? candidate : randomUUID();
}
