import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

/** What travels with one request across the gateway and every gRPC hop. */
export interface RequestContext {
  requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export const REQUEST_ID_METADATA_KEY = 'x-request-id';

export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

export function runWithRequestContext<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn);
}

/** Accepts a caller-supplied id only when it is short and plain, so logs cannot be forged. */
export function requestIdFrom(candidate: string | undefined): string {
  return candidate && /^[\w.-]{1,64}$/.test(candidate) ? candidate : randomUUID();
}
