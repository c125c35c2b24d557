import type { ClientError } from 'nice-grpc';

/** Thrown by route code for an answer that is not 2xx; the error handler writes {"message"} and `headers`. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/**
 * A route's own answer to a peer's refusal it handled (the logout identity could not record: 503, the cookie cleared):
 * logged as that refusal is (a service unavailable, its storage full), not as the gateway's own overload.
 */
export class AnsweredRefusal extends HttpError {
  constructor(
    status: number,
    message: string,
    readonly refusal: ClientError,
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(status, message, headers);
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
export const unauthorized = (message = 'You must be logged in') => new HttpError(401, message);
export const notFound = (message = 'Not found') => new HttpError(404, message);
/** Overload answered as designed (a bound on uploads or reads is full): 503 with Retry-After. */
export const serverBusy = (message: string, retryAfterSeconds: number) => new HttpError(503, message, { 'retry-after': String(retryAfterSeconds) });
/** The client's own share of a bound is taken (its uploads, its file reads, its document checks), others still served: 429 with Retry-After. */
export const ownShareTaken = (message: string, retryAfterSeconds: number) => new HttpError(429, message, { 'retry-after': String(retryAfterSeconds) });
