import type { NextFunction, Request, Response } from 'express';
import { ClientError, Status } from 'nice-grpc';
import { CHANGED_SINCE_READ, httpStatusFromGrpc, IDEMPOTENCY_KEY_REUSED, isStatusOfService, repeatedWarningLog, SERVICE_BUSY, statusReasonOf, STORAGE_FULL, TOO_LARGE, type Logger } from '@cards/platform';
import { AnsweredRefusal, HttpError, ownShareTaken, serverBusy } from './http-error';
import { KIND_OF_STATUS, recordBodyAborted, recordLogReason } from './access-log';
import { recordPatternBeforeRoute, routeLabel } from './route-label';
import type { RouteMethodIndex } from './unmatched';
import { SESSION_COOKIE } from './session';
import { isWorkOfClientGone } from './client-gone';
import { routeWorkEnded } from './route-work';

/** The request body codings the JSON parser reads (body-parser's inflation). */
const BODY_CODINGS_READ = 'gzip, deflate, br';

interface BodyParserError {
  type?: string;
  status?: number;
  /** The Content-Encoding the parser refused (lower-cased), with type encoding.unsupported. */
  encoding?: string;
  /** zlib's code when a gzip/deflate body does not decompress (Z_DATA_ERROR, ...), or brotli's (ERR__ERROR_FORMAT_...). */
  code?: string;
}

/**
 * The one place that turns any error into an HTTP status and {"message"}; never leaks internals. Its lines name the
 * route pattern (`/api/password/:email`), never the path, which may hold an e-mail address or an id; `routes` finds the
 * pattern of a request refused before its route ran (a malformed body).
 */
export function errorHandler(logger: Logger, routes?: RouteMethodIndex) {
  // A peer or an engine not answering turns every request into a 503 for as long as it lasts: already announced
  // (the peers' and engines' readiness lines), so the first, then one line a minute with the count, and no stack.
  const unavailable = repeatedWarningLog(logger, 'request refused: a service behind the gateway is unavailable');
  // A service whose store is full (reason STORAGE_FULL) refuses every write until an operator makes room: as often.
  const storageFull = repeatedWarningLog(logger, "request refused: a service's storage is full");
  // Express recognises error handlers by their four parameters.
  return (thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    // Whatever follows (an answer, or nothing for a client gone), the route's work is over: a write's slot held for it
    // is given back once its client has gone too (route-work.ts).
    routeWorkEnded(res);
    // The route's calls were cut because its client went away (client-gone.ts): nobody to answer, nothing failed.
    if (isWorkOfClientGone(thrown, res)) {
      recordLogReason(res, 'client-gone');
      if (!res.destroyed) res.destroy();
      return;
    }
    const err = asNotYetReleased(asOwnShareTaken(asServerBusy(thrown)));
    const { status, message } = describeStaticFileError(err, res) ?? describe(err);
    const bodyType = (err as BodyParserError | undefined)?.type;
    if (!req.route && routes && bodyType !== undefined) {
      const pattern = routes.patternFor(req.method, req.path);
      if (pattern) recordPatternBeforeRoute(res, pattern);
    }
    if (bodyType === 'request.aborted') recordBodyAborted(res);
    recordLogReason(res, logReasonOf(err, req, status));
    const route = routeLabel(req, res);
    const refusal = err instanceof AnsweredRefusal ? err.refusal : err;
    // A peer without the method: one warn line naming it, for the operator whose releases came in the wrong order.
    if (err instanceof NotYetReleased) logger.warn({ method: req.method, route, status, grpcMethod: err.grpcMethod }, 'request refused: a peer service does not have this method yet (a caller released before its callee?)');
    // A service's full store or a peer not answering; a refusal a route answered itself (a logout identity could not
    // record, AnsweredRefusal) is logged as the refusal it is, not as the gateway's overload.
    else if (refusal instanceof ClientError && isStorageFull(refusal)) storageFull({ method: req.method, route, status, grpcMethod: refusal.path, grpcStatus: Status[refusal.code] });
    else if (isKnownUnavailability(refusal)) unavailable({ method: req.method, route, status, grpcMethod: refusal.path, grpcStatus: Status[refusal.code] });
    // The gateway's own 503 (uploads or file reads over their bound, a busy files or cards service passed on) is overload answered
    // as designed, not a failure: one warn line, no stack, so a busy hour does not fill the error log.
    else if (err instanceof HttpError && status === 503) logger.warn({ method: req.method, route, status, message }, 'request refused: server busy');
    else if (status >= 500) logger.error({ err, method: req.method, route }, 'request failed');
    if (res.headersSent) {
      res.destroy();
      return;
    }
    // A static file's answer that failed once send had set the file's own headers (a range past its end, a failed
    // If-Match or If-Unmodified-Since): its type, validators and lifetime describe the file, not this JSON error; its
    // `public, max-age` let a cache keep the error, and its Content-Type (text/css) went with the JSON body.
    if (res.hasHeader('last-modified')) for (const name of STATIC_FILE_HEADERS) res.removeHeader(name);
    // An error is about this request at this moment (a 404 outside /api is heuristically cacheable, RFC 9111 §4.2.2):
    // no cache in front keeps it, unless the answer already said otherwise (/api sets no-store itself).
    if (!res.hasHeader('cache-control')) res.setHeader('cache-control', 'no-store');
    if (err instanceof HttpError) res.set(err.headers);
    // A full store frees no room by itself: clients back off rather than repeat the write at once.
    else if (isStorageFull(err)) res.set('retry-after', String(STORAGE_FULL_RETRY_AFTER_SECONDS));
    // RFC 9110 §12.5.3: the codings a request body may have, for a client whose coding was refused.
    else if (bodyType === 'encoding.unsupported') res.set('accept-encoding', BODY_CODINGS_READ);
    res.status(status).json({ message });
  };
}

/** A peer not answering, or answering that an engine of its own is not (UNAVAILABLE), or too late: expected in an outage. */
function isKnownUnavailability(err: unknown): err is ClientError {
  return err instanceof ClientError && (err.code === Status.UNAVAILABLE || err.code === Status.DEADLINE_EXCEEDED);
}

/** A name that may follow "invalid:": a field of a body or a path parameter, as a message names it ("title: is required"). */
const FIELD_NAMED = /^([A-Za-z_][A-Za-z0-9_]{0,40}(?:\.[A-Za-z0-9_]{1,40}){0,3}): /;

/**
 * Why the request failed, for the access line: a fixed code per kind, never input (no value, no path, no e-mail). A
 * validation failure names its field ("invalid:title"); a service's refusal its gRPC status and, when the service gave
 * one, its fixed reason ("grpc:RESOURCE_EXHAUSTED:SERVICE_BUSY"); a body refused before routing the body parser's kind.
 */
export function logReasonOf(err: unknown, req: Request, status: number): string {
  const kind = KIND_OF_STATUS[status] ?? `status-${status}`;
  if (err instanceof NotYetReleased) return 'not-yet-released';
  if (err instanceof AnsweredRefusal) return logReasonOf(err.refusal, req, status);
  if (err instanceof HttpError) {
    if (status === 400) return invalidField(err.message) ?? kind;
    // A session cookie that is no live session (expired, revoked) is told apart from no cookie at all.
    if (status === 401) return req.sessionToken === undefined && req.cookies?.[SESSION_COOKIE] !== undefined ? 'unauthenticated:session-not-live' : kind;
    return kind;
  }
  if (err instanceof ClientError) {
    const name = Status[err.code] ?? String(err.code);
    const serviceReason = isStatusOfService(err) ? statusReasonOf(err) : undefined;
    const field = err.code === Status.INVALID_ARGUMENT ? invalidField(err.details) : undefined;
    return ['grpc', name, serviceReason ?? field].filter((part) => part !== undefined).join(':');
  }
  const bodyType = (err as BodyParserError | undefined)?.type;
  if (bodyType === 'request.aborted') return 'body:aborted';
  if (typeof bodyType === 'string' && /^[a-z.]{1,40}$/.test(bodyType)) return `body:${bodyType}`;
  if (err instanceof URIError) return 'bad-percent-encoding';
  if (status >= 500) return err instanceof Error ? `internal:${/^[A-Za-z]{1,40}$/.test(err.name) ? err.name : 'Error'}` : 'internal';
  return kind;
}

function invalidField(message: string): string | undefined {
  const field = FIELD_NAMED.exec(message)?.[1];
  return field && `invalid:${field}`;
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

/** Retry-After of a 503 for a full store: room is made by an operator (or retention), in minutes rather than seconds. */
export const STORAGE_FULL_RETRY_AFTER_SECONDS = 30;

/** A service's UNAVAILABLE because its storage is full (its errorMiddleware: SQLITE_FULL, ENOSPC, EDQUOT), with its message. */
function isStorageFull(err: unknown): boolean {
  return err instanceof ClientError && err.code === Status.UNAVAILABLE && isStatusOfService(err) && statusReasonOf(err) === STORAGE_FULL;
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

/** What express.static's send sets for the file it is about to answer with, before a range or a precondition fails. */
const STATIC_FILE_HEADERS = ['content-type', 'etag', 'last-modified', 'accept-ranges', 'cache-control'];

/**
 * send's 416 (a Range past the end of a static file: it has set `Content-Range: bytes * /<size>` already) in the
 * words the raw download uses, and its 412 (If-Match or If-Unmodified-Since failed) naming the condition and the
 * file's validators (read here: the error's answer drops them, STATIC_FILE_HEADERS); anything else is left to describe().
 */
function describeStaticFileError(err: unknown, res: Response): { status: number; message: string } | undefined {
  if (err instanceof HttpError) return undefined;
  const status = (err as BodyParserError | undefined)?.status;
  if (status === 412 && res.hasHeader('last-modified')) {
    // send checks If-Match first and, only without it, If-Unmodified-Since (RFC 9110 13.2.2).
    if (res.req.headers['if-match'] !== undefined) return { status, message: `If-Match: the file is not the version named; its ETag is now ${String(res.getHeader('etag'))}` };
    return { status, message: `If-Unmodified-Since: the file was modified after that date; its Last-Modified is ${String(res.getHeader('last-modified'))}` };
  }
  if (status !== 416) return undefined;
  const size = /^bytes \*\/(\d+)$/.exec(String(res.getHeader('content-range') ?? ''))?.[1];
  if (size === undefined) return { status: 416, message: 'Range: no byte of the range asked for is in the file' };
  return { status: 416, message: `Range: no byte of the range asked for is in the file (${size} bytes); ask for bytes from 0 to ${Math.max(0, Number(size) - 1)}` };
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
    // A conditional change (If-Match) on something changed since: HTTP's 412, not grpc-gateway's 400.
    if (statusReasonOf(err) === CHANGED_SINCE_READ) return { status: 412, message: err.details };
    const status = httpStatusFromGrpc(err.code);
    if (status >= 500) {
      // The service's storage is full (its errorMiddleware: SQLITE_FULL, ENOSPC): its message says so and that nothing was saved.
      if (isStorageFull(err)) return { status: 503, message: err.details };
      if (err.code === Status.UNAVAILABLE) return { status, message: 'A backing service is unavailable, try again' };
      if (err.code === Status.DEADLINE_EXCEEDED) return { status, message: 'The request took too long' };
      return { status: 500, message: 'Internal error' };
    }
    return { status, message: err.details };
  }
  const bodyError = err as BodyParserError;
  if (bodyError?.type === 'entity.parse.failed') return { status: 400, message: 'Malformed JSON body' };
  if (bodyError?.type === 'entity.too.large') return { status: 413, message: 'The request body is too large' };
  if (bodyError?.type === 'encoding.unsupported') {
    const coding = JSON.stringify(String(bodyError.encoding).slice(0, 40));
    return { status: 415, message: `The request body's Content-Encoding ${coding} is not supported: send it uncompressed or with gzip, deflate or br` };
  }
  if (bodyError?.type === 'charset.unsupported') return { status: 415, message: 'Unsupported body encoding' };
  if (bodyError?.type === 'request.aborted') return { status: 400, message: 'The request was aborted' };
  if (err instanceof URIError) return { status: 400, message: 'Malformed percent-encoding in the URL' };
  if (bodyError?.status === 400 && /^(Z_|ERR__)/.test(bodyError.code ?? '')) return { status: 400, message: 'The request body does not decompress as its Content-Encoding says' };
  if (typeof bodyError?.status === 'number' && bodyError.status >= 400 && bodyError.status < 500) return { status: bodyError.status, message: 'Bad request' };
  return { status: 500, message: 'Internal error' };
}
