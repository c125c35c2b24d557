import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AdmissionRefusedError, BoundedAdmission, type Release } from '@cards/platform';
import { ClientShares } from './client-shares';
import { HttpError, serverBusy, unauthorized } from './http-error';

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

export const UPLOADS_BUSY_MESSAGE = 'Too many uploads are under way; upload the file again in a few seconds';
/** Seconds a refused uploader is asked to wait (Retry-After). */
export const UPLOAD_RETRY_AFTER_SECONDS = 5;
export const OWN_UPLOADS_BUSY_MESSAGE = 'You have too many uploads under way; upload the file again when one has finished';

/**
 * Bounds the upload bodies the gateway holds at once. A base64 JSON upload of MAX_FILE_BYTES costs ~170 MB of memory
 * while it is parsed, decoded, sent on and echoed back (docs/files.md), so a few at once would take a pod past its
 * limit. Each request weighs its declared body length (a chunked one the limit) and is admitted before its body is
 * read; one beyond the bound waits, its body left in the socket, and is answered 503 with Retry-After when the line is
 * full or its wait runs out. The weight is given back when the answer is sent or the client goes away.
 *
 * One user's uploads, held or waiting, weigh at most half the bound beyond their first: a further one is answered 429
 * with Retry-After at once, so one user's slow uploads cannot fill the bound and the waiting line for everyone else.
 */
export function uploadAdmission(limits: UploadAdmissionLimits): RequestHandler {
  const capacity = limits.uploadsAtOnce * limits.bodyLimitBytes;
  const admission = new BoundedAdmission({ capacity, maxWaiting: limits.maxQueued, maxWaitMs: limits.maxWaitMs });
  const perUser = new ClientShares();
  return (req: Request, res: Response, next: NextFunction) => {
    const declared = Number(req.headers['content-length']);
    const weight = req.headers['transfer-encoding'] === undefined && Number.isFinite(declared) ? Math.min(declared, limits.bodyLimitBytes) : limits.bodyLimitBytes;
    // refuseUploadUnread runs first: there is a user.
    const releaseShare = perUser.take(req.user!.id, weight, capacity / 2);
    if (!releaseShare) return next(new HttpError(429, OWN_UPLOADS_BUSY_MESSAGE, { 'retry-after': String(UPLOAD_RETRY_AFTER_SECONDS) }));
    const clientGone = new AbortController();
    let release: Release | undefined;
    let closed = false;
    res.once('close', () => {
      closed = true;
      releaseShare();
      if (release) release();
      else clientGone.abort(new Error('the client went away while its upload waited'));
    });
    admission.acquire(weight, clientGone.signal).then(
      (granted) => {
        if (closed) return granted();
        release = granted;
        next();
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
