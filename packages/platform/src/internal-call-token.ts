import { createHash, timingSafeEqual } from 'node:crypto';
import { Metadata, ServerError, Status, type CallContext, type ServerMiddlewareCall } from 'nice-grpc';

/** Metadata key of the secret that calls between the services of one process carry (see requireInternalCallToken). */
export const INTERNAL_CALL_METADATA_KEY = 'x-internal-call-token';

/** The grpc.health.v1 probes carry no secret and learn nothing but whether a service is up. */
const HEALTH_PATH_PREFIX = '/grpc.health.v1.Health/';

let required: { token: string; digest: Buffer } | undefined;

const digestOf = (token: string) => createHash('sha256').update(token).digest();

/**
 * Every gRPC server started in this process from now on answers only calls carrying `token` (UNAUTHENTICATED
 * otherwise), and every gRPC client of this process sends it. The all-in-one's services listen on loopback ports and
 * take the caller's user id from the request, so without it any local process or user could call them naming anyone
 * as the caller: every private card, collection and file, and every account's profile, would be theirs to read.
 */
export function requireInternalCallToken(token: string): void {
  required = { token, digest: digestOf(token) };
}

/** Whether requireInternalCallToken was called: gRPC servers started from then on check the secret. */
export function internalCallTokenRequired(): boolean {
  return required !== undefined;
}

/** The metadata a client call made from this process adds: the secret, when requireInternalCallToken set one. */
export function withInternalCallToken(metadata: Metadata): Metadata {
  if (required) metadata.set(INTERNAL_CALL_METADATA_KEY, required.token);
  return metadata;
}

/** Refuses a call without the secret requireInternalCallToken set (compared as SHA-256 digests, in constant time). */
export function internalCallTokenMiddleware() {
  return async function* <Request, Response>(call: ServerMiddlewareCall<Request, Response>, context: CallContext) {
    if (required && !call.method.path.startsWith(HEALTH_PATH_PREFIX)) {
      const sent = context.metadata.get(INTERNAL_CALL_METADATA_KEY);
      if (typeof sent !== 'string' || !timingSafeEqual(digestOf(sent), required.digest)) {
        throw new ServerError(Status.UNAUTHENTICATED, 'This service answers only the other services of its process');
      }
    }
    return yield* call.next(call.request, context);
  };
}
