import type { NextFunction, Request, Response } from 'express';
import { ClientError, Status } from 'nice-grpc';
import { httpStatusFromGrpc, IDEMPOTENCY_KEY_REUSED, isStatusOfService, SERVICE_BUSY, statusReasonOf, TOO_LARGE, type Logger } from '@cards/platform';
import { HttpError, ownShareTaken, serverBusy } from './http-error';

interface BodyParserError {
  type?: string;
  status?: number;
  /** zlib's code when a gzip/deflate body does not decompress (Z_DATA_ERROR, ...), or brotli's (ERR__ERROR_FORMAT_...). */
  code?: string;
}

/** The one place that turns any error into an HTTP status and {"message"}; never leaks internals. */
export function errorHandler(logger: Logger) {
  // Express recognises error handlers by their four parameters.
  return (thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    const err = asNotYetReleased(asOwnShareTaken(asServerBusy(thrown)));
    const { status, message } = describe(err);
    // A peer without the method: one warn line naming it, for the operator whose releases came in the wrong order.
    if (err instanceof NotYetReleased) logger.warn({ method: req.method, path: req.path, status, grpcMethod: err.grpcMethod }, 'request refused: a peer service does not have this method yet (a caller released before its callee?)');
    // The gateway's own 503 (uploads or file reads over their bound, a busy files or cards service passed on) is overload answered
    // as designed, not a failure: one warn line, no stack, so a busy hour does not fill the error log.
    else if (err instanceof HttpError && status === 503) logger.warn({ method: req.method, path: req.path, status, message }, 'request refused: server busy');
    else if (status >= 500) logger.error({ err, method: req.method, path: req.path }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (err instanceof HttpError) res.set(err.headers);
    res.status(status).json({ message });
  };
}

/** Retry-After of a service's busy refusal: its line waits a few seconds (the cards service's CARD_HTML_QUEUE_WAIT_MS, 5 s). */
export const SERVICE_BUSY_RETRY_AFTER_SECONDS = 5;

/**
 * A service's own refusal because a bound of its own is full right now (ServiceBusyError, reason SERVICE_BUSY: the cards
 * service's large-HTML cleaners on card create and update) is the overload the gateway answers for itself: 503 with the
 * service's message and Retry-After, not the generic "unavailable" 503 of a service that cannot answer.
 */
function asServerBusy(err: unknown): unknown {
  if (err instanceof ClientError && err.code === Status.UNAVAILABLE && isStatusOfService(err) && statusReasonOf(err) === SERVICE_BUSY) {
    return serverBusy(err.details, SERVICE_BUSY_RETRY_AFTER_SECONDS);
  }
  return err;
}

/**
 * A service's own quota refusal (RESOURCE_EXHAUSTED it sent, not a size limit: the cards service's share of its
 * large-HTML cleaners per user, on card create and update) is the caller's own share taken: 429 with the service's
 * message and Retry-After, as every 429 the gateway sends (the upload route answers the files service's so too).
 */
function asOwnShareTaken(err: unknown): unknown {
  if (err instanceof ClientError && err.code === Status.RESOURCE_EXHAUSTED && isStatusOfService(err) && statusReasonOf(err) !== TOO_LARGE) {
    return ownShareTaken(err.details, SERVICE_BUSY_RETRY_AFTER_SECONDS);
  }
  return err;
}

/** Retry-After when a peer does not have a method yet: a rollout of its new release takes a minute or so. */
export const NOT_YET_RELEASED_RETRY_AFTER_SECONDS = 30;

export const NOT_YET_RELEASED_MESSAGE = 'This operation is not available yet: a service is being upgraded. Try again in a minute';

/** A peer's UNIMPLEMENTED: the method is missing there, not broken. */
class NotYetReleased extends HttpError {
  constructor(readonly grpcMethod: string) {
    super(503, NOT_YET_RELEASED_MESSAGE, { 'retry-after': String(NOT_YET_RELEASED_RETRY_AFTER_SECONDS) });
  }
}

/**
 * UNIMPLEMENTED from a peer: it runs a release without this method, which its caller's release already uses (per-team
 * releases upgraded caller first, or a callee rolled back; docs/deploy.md#upgrade-order). A passing state of a rollout,
 * not a bug in the request: 503 with Retry-After, not 500 (which grpc-gateway's table gives it).
 */
function asNotYetReleased(err: unknown): unknown {
  if (err instanceof ClientError && err.code === Status.UNIMPLEMENTED) return new NotYetReleased(err.path);
  return err;
}

function describe(err: unknown): { status: number; message: string } {
  if (err instanceof HttpError) return { status: err.status, message: err.message };
  if (err instanceof ClientError) {
    // gRPC's own RESOURCE_EXHAUSTED (a message over the size limit) is no quota of the client's: a 500, its detail logged.
    if (err.code === Status.RESOURCE_EXHAUSTED && !isStatusOfService(err)) return { status: 500, message: 'Internal error' };
    // gRPC has no status of its own for it (draft-ietf-httpapi-idempotency-key-header: 422).
    if (statusReasonOf(err) === IDEMPOTENCY_KEY_REUSED) return { status: 422, message: err.details };
    // A service's size limit (the files service's MAX_FILE_BYTES, lower than the gateway's) is not a quota to retry.
    if (statusReasonOf(err) === TOO_LARGE) return { status: 413, message: err.details };
    const status = httpStatusFromGrpc(err.code);
    if (status >= 500) {
      if (err.code === Status.UNAVAILABLE) return { status, message: 'A backing service is unavailable, try again' };
      if (err.code === Status.DEADLINE_EXCEEDED) return { status, message: 'The request took too long' };
      return { status: 500, message: 'Internal error' };
    }
    return { status, message: err.details };
  }
  const bodyError = err as BodyParserError;
  if (bodyError?.type === 'entity.parse.failed') return { status: 400, message: 'Malformed JSON body' };
  if (bodyError?.type === 'entity.too.large') return { status: 413, message: 'The request body is too large' };
  if (bodyError?.type === 'encoding.unsupported' || bodyError?.type === 'charset.unsupported') return { status: 415, message: 'Unsupported body encoding' };
  if (bodyError?.type === 'request.aborted') return { status: 400, message: 'The request was aborted' };
  if (err instanceof URIError) return { status: 400, message: 'Malformed percent-encoding in the URL' };
  if (bodyError?.status === 400 && /^(Z_|ERR__)/.test(bodyError.code ?? '')) return { status: 400, message: 'The request body does not decompress as its Content-Encoding says' };
  if (typeof bodyError?.status === 'number' && bodyError.status >= 400 && bodyError.status < 500) return { status: bodyError.status, message: 'Bad request' };
  return { status: 500, message: 'Internal error' };
}
