import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AdmissionRefusedError, BoundedAdmission, ClientShares, type Logger, type Release } from '@cards/platform';
import { HttpError, ownShareTaken, serverBusy, unauthorized } from './http-error';
import { declaredPlainLength } from './json-body';
import { watchBodyRate, type SlowBody, type UploadBodyRate } from './upload-body-rate';

export interface UploadAdmissionLimits {
  /** Largest upload body (the upload route's JSON limit): one such body weighs one unit. */
  bodyLimitBytes: number;
  /** Upload bodies of the largest size held at once (smaller ones count by their Content-Length). */
  uploadsAtOnce: number;
  /** Uploads waiting, their bodies unread, at most; one more is answered 503 at once. */
  maxQueued: number;
  /** How long an upload waits at most before it is answered 503. */
  maxWaitMs: number;
}

/** How an admitted upload's body is read, and how slowly it may arrive. */
export interface UploadBodyReading {
  /** Reads the body (the route's JSON parser); run once the upload is admitted, its slot held meanwhile. */
  parse: RequestHandler;
  /** Below this rate the upload is cut (408) and its slot given back; none: only the request timeout ends it. */
  minRate?: UploadBodyRate;
  logger: Logger;
}

/** The 408's message, naming the minimum rate (in KiB/s from 1 KiB/s up). */
export function uploadTooSlowMessage(minBytesPerSecond: number): string {
  const rate = minBytesPerSecond >= 1024 ? `${Number((minBytesPerSecond / 1024).toFixed(1))} KiB/s` : `${minBytesPerSecond} bytes/s`;
  return `The upload arrived too slowly (below ${rate}) and was stopped; upload the file again over a faster connection`;
}
/** After the 408, how long a cut upload's connection may stay before it is closed whatever the client does. */
const CUT_CONNECTION_CLOSE_MS = 5_000;

export const UPLOADS_BUSY_MESSAGE = 'Too many uploads are under way; upload the file again in a few seconds';
/** Seconds a refused uploader is asked to wait (Retry-After). */
export const UPLOAD_RETRY_AFTER_SECONDS = 5;
export const OWN_UPLOADS_BUSY_MESSAGE = 'You have too many uploads under way; upload the file again when one has finished';

/**
 * Bounds the upload bodies the gateway holds at once. A base64 JSON upload of MAX_FILE_BYTES costs ~170 MB of memory
 * while it is parsed, decoded, sent on and echoed back (docs/files.md), so a few at once would take a pod past its
 * limit. Each request weighs its declared body length (a chunked or a compressed one the limit: gzip inflates a few KB
 * to the whole limit) and is admitted before its body is read; one beyond the bound waits, its body left in the socket,
 * and is answered 503 with Retry-After when the line is full or its wait runs out. The weight is given back when the answer is sent or the client goes away.
 *
 * One user's uploads, held or waiting, weigh at most half the bound beyond their first: a further one is answered 429
 * with Retry-After at once, so one user's slow uploads cannot fill the bound and the waiting line for everyone else.
 *
 * With `body`, the admitted upload's body is read here (`body.parse`) and must arrive at `body.minRate` at least: after
 * the grace, an upload averaging less over the window (or sending nothing) is cut. Its slot and share are given back at
 * once, it is answered 408 {"message"} with Connection: close (when no answer has begun), its body is never parsed nor
 * the route run, so nothing is stored, and one warn line says so. Without it a single upload trickling a few bytes a
 * second held the whole default bound (UPLOADS_AT_ONCE=1) until the 300 s request timeout, and every other user's
 * upload waited and was answered 503.
 */
export function uploadAdmission(limits: UploadAdmissionLimits, body?: UploadBodyReading): RequestHandler {
  const capacity = limits.uploadsAtOnce * limits.bodyLimitBytes;
  const admission = new BoundedAdmission({ capacity, maxWaiting: limits.maxQueued, maxWaitMs: limits.maxWaitMs });
  const perUser = new ClientShares();
  return (req: Request, res: Response, next: NextFunction) => {
    const declared = Number(req.headers['content-length']);
    const weight = Math.min(declaredPlainLength(req) ?? limits.bodyLimitBytes, limits.bodyLimitBytes);
    // refuseUploadUnread runs first: there is a user.
    const releaseShare = perUser.take(req.user!.id, weight, capacity / 2);
    if (!releaseShare) return next(ownShareTaken(OWN_UPLOADS_BUSY_MESSAGE, UPLOAD_RETRY_AFTER_SECONDS));
    const clientGone = new AbortController();
    let release: Release | undefined;
    let closed = false;
    let stopWatch = () => undefined as void;
    res.once('close', () => {
      closed = true;
      stopWatch();
      releaseShare();
      if (release) release();
      else clientGone.abort(new Error('the client went away while its upload waited'));
    });
    admission.acquire(weight, clientGone.signal).then(
      (granted) => {
        if (closed) return granted();
        release = granted;
        if (!body) return next();
        let cut = false;
        let parsed = false;
        body.parse(req, res, (err?: unknown) => {
          parsed = true;
          stopWatch();
          // A cut upload's body is never passed on, whatever arrives after the cut.
          if (!cut) next(err);
        });
        if (parsed || !body.minRate) return;
        stopWatch = watchBodyRate(req, body.minRate, (slow) => {
          cut = true;
          releaseShare();
          granted();
          cutSlowUpload(req, res, slow, body, Number.isFinite(declared) ? declared : undefined);
        });
      },
      (err: unknown) => {
        releaseShare();
        if (closed) return;
        if (!(err instanceof AdmissionRefusedError)) return next(err);
        next(serverBusy(UPLOADS_BUSY_MESSAGE, UPLOAD_RETRY_AFTER_SECONDS));
      },
    );
  };
}

/** The 408 (or, when an answer has begun, the connection's end) for an upload whose body came too slowly. */
function cutSlowUpload(req: Request, res: Response, slow: SlowBody, body: UploadBodyReading, declaredBytes: number | undefined): void {
  const rate = body.minRate!;
  body.logger.warn(
    {
      method: req.method,
      path: req.path,
      userId: req.user?.id,
      declaredBytes,
      ...slow,
      minBytesPerSecond: rate.minBytesPerSecond,
      windowMs: rate.windowMs,
      graceMs: rate.graceMs,
    },
    'upload cut: its body arrived below the minimum rate (UPLOAD_MIN_BYTES_PER_SECOND); its slot is free',
  );
  // Connection: close makes Node end the connection once the answer is written (what the parser read meanwhile is
  // dropped); the timer ends it should the answer not get out.
  setTimeout(() => req.socket?.destroy(), CUT_CONNECTION_CLOSE_MS).unref();
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.set('connection', 'close').status(408).json({ message: uploadTooSlowMessage(rate.minBytesPerSecond) });
}

/**
 * Refuses an upload before it waits for admission and before its body is read: no session (401), or a declared
 * length above the limit (413). After the answer Node reads and drops what the client still sends (as for
 * body-parser's own 413) instead of closing: a close with unread bytes resets the connection, and clients still
 * sending then often report the reset instead of the answer (measured with fetch: EPIPE).
 */
export function refuseUploadUnread(bodyLimitBytes: number): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    if (!req.user) return next(unauthorized());
    if (Number(req.headers['content-length']) > bodyLimitBytes) return next(new HttpError(413, 'The request body is too large'));
    next();
  };
}
