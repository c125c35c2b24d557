import type { Socket } from 'node:net';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { AdmissionRefusedError, BoundedAdmission, ClientShares, type Logger, type Release } from '@cards/platform';
import { Counter, Gauge, type Registry } from 'prom-client';
import { isAbandonedWithItsClient } from './client-gone';
import { ownShareTaken, serverBusy } from './http-error';
import { routeWorkEnded, whenRouteWorkEnds } from './route-work';
import { clientAddressKey } from './rate-limits';

export interface RequestAdmissionLimits {
  /** API requests served at once (HTTP_REQUESTS_AT_ONCE), the heavy ones apart. */
  atOnce: number;
  /** Heavy API requests served at once (HTTP_HEAVY_REQUESTS_AT_ONCE): searches, password checks, card creates and updates (isHeavyRequest). */
  heavyAtOnce: number;
  /** Requests waiting for a slot at most, in each of the two lines (HTTP_REQUEST_QUEUE); one more is answered 503 at once. */
  queue: number;
  /** How long a request waits for a slot at most before it is answered 503 (HTTP_REQUEST_QUEUE_WAIT_MS). */
  queueWaitMs: number;
  /** Requests one client (the user when signed in, else the client address) has served or waiting at once (HTTP_REQUESTS_PER_CLIENT); one more: 429. */
  perClient: number;
  /**
   * How long an admitted request's answer may wait on its client, the client taking none of its bytes, before the
   * connection is cut and the slot given back (HTTP_ANSWER_IDLE_MS); DEFAULT_ANSWER_IDLE_MS when unset.
   */
  answerIdleMs?: number;
}

export const DEFAULT_ANSWER_IDLE_MS = 30_000;
export const DEFAULT_REQUEST_ADMISSION: RequestAdmissionLimits = { atOnce: 64, heavyAtOnce: 8, queue: 512, queueWaitMs: 5_000, perClient: 64, answerIdleMs: DEFAULT_ANSWER_IDLE_MS };

export const SERVER_BUSY_MESSAGE = 'The server is busy with too many requests; try again in a few seconds';
export const OWN_REQUESTS_BUSY_MESSAGE = 'You have too many requests under way; send more once some have been answered';
/** Seconds a refused client is asked to wait (Retry-After). */
export const REQUEST_RETRY_AFTER_SECONDS = 2;

/**
 * Requests whose cost is CPU the process cannot share out: a search scores the index, a login, sign-up or password
 * reset hashes a password with scrypt, a card written (created or updated) is cleaned, compared with its near copies
 * and embedded. Served in a line of their own, so a flood of them cannot take the slots (nor the event loop) of cheap
 * reads. Paths are the /api-relative paths the router sees.
 */
export function isHeavyRequest(req: Pick<Request, 'method' | 'path'>): boolean {
  // Case-insensitive as the router's matching (express's default): /api/Card/Search/1 is a search too, and was served
  // in the cheap reads' line.
  if (req.method === 'PUT') return /^\/card\/update\/?$/i.test(req.path);
  if (req.method !== 'POST') return false;
  return /^\/(?:card|card_collection)\/(?:search|fulltextsearch)\/[^/]+\/?$/i.test(req.path) || /^\/(?:auth|password|register\/[^/]+|card)\/?$/i.test(req.path);
}

/** Routes with a bound of their own (uploads: UPLOADS_AT_ONCE; file reads with content: FILE_READS_AT_ONCE), not counted here. */
function hasOwnBound(req: Pick<Request, 'method' | 'path'>): boolean {
  if (req.method === 'POST') return /^\/file\/?$/i.test(req.path);
  return req.method === 'GET' && /^\/file\/[^/]+\/?$/i.test(req.path);
}

/** One admitted request's standing: its client's share (taken before its body is read), then its slot. */
interface Standing {
  line: 'light' | 'heavy';
  releaseShare: () => void;
  clientGone: AbortController;
  closed: boolean;
  release?: Release;
  /**
   * Admitted, and its route has neither answered nor failed yet, for a request whose work goes on when its client
   * leaves (a write, a login: not isAbandonedWithItsClient). Its slot and share are held until that work ends.
   */
  working?: boolean;
}

/** The steps of the request bound: `lineFull` before the session is looked up, `share` before the body is read, `slot` once it has been (see requestAdmission). */
export interface RequestAdmission {
  /** 503 at once when the request's line is full (every slot taken, HTTP_REQUEST_QUEUE waiting): who asks changes nothing, so identity is not asked. */
  lineFull: RequestHandler;
  /** The client's share (HTTP_REQUESTS_PER_CLIENT, 429 past it), taken as soon as the caller is known. */
  share: RequestHandler;
  /** A slot of the request's line (503 when the line is full or the wait runs out), taken once its body is read. */
  slot: RequestHandler;
}

/**
 * Bounds the API requests the gateway serves at once. Every request took its turn on the one event loop as soon as it
 * was read, so past what the machine serves each waited longer than the one before it, without limit (nobody got a
 * 503; a search flood's answers took up to the 10 s gRPC deadline, then 504), and the work of clients that had given up
 * went on after they left (docs/benchmarks.md, overload). Now at most `atOnce` requests (and `heavyAtOnce` heavy ones
 * apart: searches, password checks, card writes) are served at once; the rest wait in order of arrival, unread, in a
 * line of at most `queue` for at most `queueWaitMs`, and are answered 503 {"message"} with Retry-After when the line is full or
 * their wait runs out; one whose client leaves meanwhile leaves the line and is never run. One client holds at most
 * `perClient` requests served, waiting or sending their body: one more is answered 429 with Retry-After at once, so
 * one client's flood fills neither the slots nor the line of others. The share is taken before the body is read, the
 * slot only once it has been (`share` goes before the body parser, `slot` after it): a slot held while a body arrives
 * was held at the client's pace, and one client sending 8 bodies slowly (a login's first bytes, then nothing; Node
 * waits 300 s for the rest) held every heavy slot, so every login, search and card write of everyone else waited 5 s
 * and was answered 503 as long as it liked. Its slot and share are given back when the answer is sent, the client
 * goes away, or the client takes none of the answer for `answerIdleMs` (answerCutWhenIdle); a write's or a login's,
 * whose work goes on without its client, only once that work has ended too (whenWorkEnds), so the bound counts the
 * work under way, not the clients still waiting for it. /livez, /healthz and /metrics are not under /api and never wait here; uploads and file reads have their own bounds.
 */
export function requestAdmission(limits: RequestAdmissionLimits, logger: Logger, registry?: Registry): RequestAdmission {
  const light = new BoundedAdmission({ capacity: limits.atOnce, maxWaiting: limits.queue, maxWaitMs: limits.queueWaitMs });
  const heavy = new BoundedAdmission({ capacity: limits.heavyAtOnce, maxWaiting: limits.queue, maxWaitMs: limits.queueWaitMs });
  const lines = { light, heavy };
  const capacities = { light: limits.atOnce, heavy: limits.heavyAtOnce };
  const refusals = registry
    ? new Counter({ name: 'http_requests_refused_total', help: 'API requests refused by the gateway\'s request bound: 503 (line full or wait over) or 429 (the client\'s share)', labelNames: ['line', 'status'] as const, registers: [registry] })
    : undefined;
  if (registry) {
    new Gauge({
      name: 'http_requests_in_flight',
      help: 'API requests being served under the gateway\'s request bound (HTTP_REQUESTS_AT_ONCE; heavy: HTTP_HEAVY_REQUESTS_AT_ONCE)',
      labelNames: ['line'] as const,
      registers: [registry],
      collect() {
        for (const [line, admission] of Object.entries(lines)) this.set({ line }, admission.inUse);
      },
    });
    new Gauge({
      name: 'http_requests_waiting',
      help: 'API requests waiting for a slot of the gateway\'s request bound (at most HTTP_REQUEST_QUEUE per line)',
      labelNames: ['line'] as const,
      registers: [registry],
      collect() {
        for (const [line, admission] of Object.entries(lines)) this.set({ line }, admission.waiting);
      },
    });
  }
  const answersCut = registry
    ? new Counter({ name: 'http_answers_cut_total', help: 'API answers whose connection the gateway cut because the client took none of their bytes for HTTP_ANSWER_IDLE_MS (the slot given back)', registers: [registry] })
    : undefined;
  const cutWhenIdle = answerCutWhenIdle(limits.answerIdleMs ?? DEFAULT_ANSWER_IDLE_MS, logger, () => answersCut?.inc());
  const perClient = new ClientShares();
  const standings = new WeakMap<Request, Standing>();
  let refusedSinceWarning = 0;
  let lastWarning = 0;
  const refused = (req: Request, reason: string) => {
    refusedSinceWarning += 1;
    const now = Date.now();
    if (now - lastWarning < 60_000) return;
    logger.warn({ refusedSinceLastWarning: refusedSinceWarning, reason, heavy: isHeavyRequest(req), ...limits }, 'requests refused: the gateway is serving all it may at once (HTTP_REQUESTS_AT_ONCE)');
    refusedSinceWarning = 0;
    lastWarning = now;
  };
  const lineFull = (req: Request, _res: Response, next: NextFunction) => {
    if (hasOwnBound(req)) return next();
    const line = isHeavyRequest(req) ? 'heavy' : 'light';
    const admission = lines[line];
    // What acquire() would answer now: a line at its length refuses (an empty one only when every slot is taken).
    const full = admission.waiting >= limits.queue && (admission.waiting > 0 || admission.inUse >= capacities[line]);
    if (!full) return next();
    refusals?.inc({ line, status: '503' });
    refused(req, 'line-full');
    next(serverBusy(SERVER_BUSY_MESSAGE, REQUEST_RETRY_AFTER_SECONDS));
  };
  const share = (req: Request, res: Response, next: NextFunction) => {
    if (hasOwnBound(req)) return next();
    const client = req.user ? `user:${req.user.id}` : `address:${clientAddressKey(req.ip)}`;
    const line = isHeavyRequest(req) ? 'heavy' : 'light';
    const releaseShare = perClient.take(client, 1, limits.perClient);
    if (!releaseShare) {
      refusals?.inc({ line, status: '429' });
      return next(ownShareTaken(OWN_REQUESTS_BUSY_MESSAGE, REQUEST_RETRY_AFTER_SECONDS));
    }
    const standing: Standing = { line, releaseShare, clientGone: new AbortController(), closed: false };
    standings.set(req, standing);
    res.once('close', () => {
      standing.closed = true;
      if (!standing.release) {
        releaseShare();
        standing.clientGone.abort(new Error('the client went away before its request was served'));
        return;
      }
      // A write's or a login's work goes on without its client (client-gone.ts): given back once it ends (whenWorkEnds).
      if (standing.working) return;
      releaseShare();
      standing.release();
    });
    next();
  };
  const slot = (req: Request, res: Response, next: NextFunction) => {
    const standing = standings.get(req);
    if (!standing) return next();
    // The client left while its body arrived: nothing is left to answer.
    if (standing.closed || clientHungUp(req)) return;
    lines[standing.line].acquire(1, standing.clientGone.signal).then(
      (granted) => {
        if (standing.closed || clientHungUp(req)) return granted();
        standing.release = granted;
        if (!isAbandonedWithItsClient(req)) {
          standing.working = true;
          whenWorkEnds(res, () => {
            standing.working = false;
            if (!standing.closed) return;
            standing.releaseShare();
            granted();
          });
        }
        cutWhenIdle(req, res);
        next();
      },
      (err: unknown) => {
        standing.releaseShare();
        if (standing.closed) return;
        if (!(err instanceof AdmissionRefusedError)) return next(err);
        refusals?.inc({ line: standing.line, status: '503' });
        refused(req, err.reason);
        next(serverBusy(SERVER_BUSY_MESSAGE, REQUEST_RETRY_AFTER_SECONDS));
      },
    );
  };
  return { lineFull, share, slot };
}

/**
 * The client has hung up, though the answer's 'close' has not come yet: Node read the connection's end and ended its
 * own writing side (the server keeps no half-open connection, so no answer can be written any more), and emits 'close'
 * a few turns of the event loop later. A request in line granted its slot in between was run for nobody: when a
 * flood's clients all left at once, each slot given back went to a request whose client was already gone.
 */
function clientHungUp(req: Request): boolean {
  return req.socket.destroyed || !req.socket.writable;
}

/**
 * Calls `ended` once the route's work for this answer is over (route-work.ts): it answered (res.end, which json and send
 * end with), or it failed and the error handler was reached, or its handler returned without passing the request on.
 * A write's or a login's route runs to its end whatever its client does, and its client leaving ends none of its work:
 * a login whose client left still checks its password (scrypt) and opens a session. Its slot given back on the client's
 * 'close' let the next request in line start while that work still ran, so more than HTTP_HEAVY_REQUESTS_AT_ONCE logins
 * hashed at once, and when a flood's clients all left together each close let in the next request in line before its
 * own close was read: the logins of clients already gone were run one after another after the flood
 * (docs/benchmarks.md, overload: the login flood's after-effect). The end no longer depends on the route ending or
 * destroying its answer: one failing with the client-gone error after its client left (the answer destroyed already)
 * held its slot for good.
 */
function whenWorkEnds(res: Response, ended: () => void): void {
  whenRouteWorkEnds(res, ended);
  const { end, destroy } = res;
  res.end = function (this: Response, ...args: unknown[]) {
    routeWorkEnded(res);
    return (end as (...a: unknown[]) => Response).apply(this, args);
  } as Response['end'];
  res.destroy = function (this: Response, error?: Error) {
    routeWorkEnded(res);
    return destroy.call(this, error);
  };
}

/** The connection's answer being written and the bytes it still holds for its client, unsent (Node 20's internals). */
interface HttpSocket extends Socket {
  _httpMessage?: unknown;
}

/**
 * An admitted answer whose client takes none of its bytes for `idleMs` is cut: its connection destroyed, so its
 * 'close' gives the slot and the share back. Node has no timeout on an answer being sent (server.timeout is 0, and
 * requestTimeout and headersTimeout cover the request only), so a client that asks for a large answer (a page of
 * search results, a long card) and then never reads it held its slot for as long as it kept the connection open: 64
 * such connections took every slot for good. The connection's idle timeout is the measure (socket.setTimeout): Node
 * restarts it whenever bytes are written and holds it off while a large write still progresses, so a slow reader that
 * takes bytes is never cut. While the gateway is still working out the answer (nothing waits on the client) the
 * timeout is let pass: the calls behind it have deadlines of their own.
 */
function answerCutWhenIdle(idleMs: number, logger: Logger, counted: () => void): (req: Request, res: Response) => void {
  return (req, res) => {
    const onIdle = () => {
      const socket = res.socket;
      if (!socket || socket.destroyed || socket.writableLength === 0) return;
      counted();
      logger.info(
        { requestId: res.getHeader('x-request-id'), method: req.method, path: req.originalUrl.split('?')[0], unsentBytes: socket.writableLength, idleMs },
        'answer cut: its client took none of it for HTTP_ANSWER_IDLE_MS; its slot is given back',
      );
      socket.destroy();
    };
    res.setTimeout(idleMs, onIdle);
    res.once('finish', () => {
      res.off('timeout', onIdle);
      // Sent whole. The connection's timeout is Node's again: it sets its keep-alive timeout on an idle connection, but
      // an answer to a pipelined request that takes the connection next would inherit this one, unless that answer set
      // a bound of its own (a 'timeout' listener: this bound's, or a file read's FILE_READ_IDLE_MS), which it gave the
      // connection on taking it, before this runs. Told by the listener, not the value: a file read's bound equal to
      // this one was cleared, and a pipelined file read its client never read held its read slot for good.
      const socket = req.socket as HttpSocket;
      const next = socket._httpMessage as Response | null | undefined;
      if (socket.timeout === idleMs && next && next.listenerCount('timeout') === 0 && !socket.destroyed) socket.setTimeout(0);
    });
  };
}
