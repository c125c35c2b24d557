import type { Logger } from 'pino';
import { z } from 'zod';
import { loadConfig } from './config';
import { errorMessage } from './errors';
import { sampledGauge } from './service-metrics';

/** One engine a service needs (MongoDB, Kafka, Elasticsearch, S3), with a cheap probe. */
export interface EngineCheck {
  /** How logs and messages name it, with its variable: "MongoDB (MONGO_URL)". */
  name: string;
  /**
   * The grpc.health.v1 name that reports this engine alone ("engine:mongodb"), SERVING while it answers,
   * whether or not it gates requests. Engines sharing a name are SERVING only while all of them answer.
   */
  healthName: string;
  /** Resolves when the engine answers; rejects (or outlives the monitor's timeout) when it does not. */
  check(): Promise<void>;
  /**
   * While this engine is down, the service is not ready and gRPC calls are answered UNAVAILABLE at once
   * instead of each waiting out the driver's own timeout (default true). Off for engines the request path
   * does not wait on, such as Kafka behind the transactional outbox (writes still commit and their events
   * are published later): their outage shows only under their own health name, so it never takes the
   * service's pods out of rotation.
   */
  gatesRequests?: boolean;
}

export interface EngineReadinessMonitorOptions {
  checks: EngineCheck[];
  logger: Logger;
  /** Pause between two rounds of checks (default 2000 ms). */
  intervalMs?: number;
  /** A check that has not answered within this counts as failed (default 5000 ms). */
  timeoutMs?: number;
  /** Consecutive failed checks before an engine counts as down (default 2), so one slow answer does not flap readiness. */
  failureThreshold?: number;
}

/** What grpc.health.v1 reports for a service: its readiness and each engine's own state. */
export interface ReadinessStatus {
  /** Every engine that gates requests answers; engines that do not gate requests never count. */
  ready: boolean;
  /** Each engine's health name ("engine:kafka") and whether it answers. */
  engines: ReadonlyMap<string, boolean>;
}

interface EngineState {
  check: EngineCheck;
  down: boolean;
  failures: number;
  lastError: string | undefined;
  /** A probe that timed out and has not settled: no second one is started beside it (for a while). */
  pending: Promise<void> | undefined;
  /** When `pending` started, by the monotonic clock (performance.now): a wall clock set back would pin it for the step. */
  pendingSince: number;
}

/**
 * Each engine a started readiness monitor of this process probes: 1 while it counts as unreachable (the moment its
 * health name turns NOT_SERVING), 0 while it answers; `engine` is its health name without "engine:" and
 * `gates_requests` whether its loss makes the service not ready. Services of one process probing one engine (the
 * all-in-one) add up. Read at each scrape, so the loss of an engine that does not gate requests (Kafka, S3) shows here.
 */
export const engineUnreachable = sampledGauge(
  'card_library_engine_unreachable',
  'Engines this process probes for readiness, by health name: 1 (per service) while one counts as unreachable, 0 while it answers; gates_requests: whether its loss makes the service not ready',
  ['engine', 'gates_requests'] as const,
);

/** READINESS_* variables, shared by every service (each reads them through readinessSettingsFrom). */
export const readinessConfigSchema = z.object({
  READINESS_INTERVAL_MS: z.coerce.number().int().min(100).max(600_000).default(2000),
  READINESS_TIMEOUT_MS: z.coerce.number().int().min(50).max(600_000).default(5000),
  READINESS_FAILURE_THRESHOLD: z.coerce.number().int().min(1).max(100).default(2),
});

/** The monitor's timing from the environment; an invalid value stops the start with the variable named. */
export function readinessSettingsFrom(env: Record<string, string | undefined>): Pick<EngineReadinessMonitorOptions, 'intervalMs' | 'timeoutMs' | 'failureThreshold'> {
  const settings = loadConfig(readinessConfigSchema, {
    READINESS_INTERVAL_MS: env.READINESS_INTERVAL_MS?.trim() || undefined,
    READINESS_TIMEOUT_MS: env.READINESS_TIMEOUT_MS?.trim() || undefined,
    READINESS_FAILURE_THRESHOLD: env.READINESS_FAILURE_THRESHOLD?.trim() || undefined,
  });
  return { intervalMs: settings.READINESS_INTERVAL_MS, timeoutMs: settings.READINESS_TIMEOUT_MS, failureThreshold: settings.READINESS_FAILURE_THRESHOLD };
}

function sameStatus(a: ReadinessStatus, b: ReadinessStatus): boolean {
  return a.ready === b.ready && a.engines.size === b.engines.size && [...a.engines].every(([name, up]) => b.engines.get(name) === up);
}


/**
 * Probes a service's engines every intervalMs (each probe bounded by timeoutMs) and says whether the
 * service is ready: every engine that gates requests answers. Starts ready: a service only starts after
 * reaching its engines. An engine counts as down after failureThreshold failed probes in a row and as back
 * after one answered probe; each change is logged once. startGrpcServer turns this into grpc.health.v1
 * SERVING / NOT_SERVING for "" and the service's name (readiness) and for each engine's health name.
 */
export class EngineReadinessMonitor {
  private readonly engines: EngineState[];
  private readonly listeners = new Set<(status: ReadinessStatus) => void>();
  private readonly intervalMs: number;
  private readonly timeoutMs: number;
  private readonly failureThreshold: number;
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private round: Promise<boolean> | undefined;
  private reported: ReadinessStatus;
  private untrackGauge: (() => void) | undefined;

  constructor(private readonly options: EngineReadinessMonitorOptions) {
    this.engines = options.checks.map((check) => ({ check, down: false, failures: 0, lastError: undefined, pending: undefined, pendingSince: 0 }));
    this.intervalMs = options.intervalMs ?? 2000;
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.failureThreshold = options.failureThreshold ?? 2;
    this.reported = this.status;
  }

  /** True while every engine that gates requests answers. */
  get ready(): boolean {
    return this.engines.every((e) => !e.down || e.check.gatesRequests === false);
  }

  /** Readiness and each engine's state, as health reports them now. */
  get status(): ReadinessStatus {
    const engines = new Map<string, boolean>();
    for (const e of this.engines) engines.set(e.check.healthName, (engines.get(e.check.healthName) ?? true) && !e.down);
    return { ready: this.ready, engines };
  }

  /** Whether any engine gates requests (otherwise no call is ever refused and no gate is needed). */
  get gatesRequests(): boolean {
    return this.engines.some((e) => e.check.gatesRequests !== false);
  }

  /** Why calls are refused right now (an engine that gates requests is down), or undefined. */
  unavailableReason(): string | undefined {
    const down = this.engines.find((e) => e.down && e.check.gatesRequests !== false);
    return down ? `${down.check.name} is unreachable; try again shortly` : undefined;
  }

  /** The engines that are down, with the last error of each. */
  downEngines(): { name: string; error: string | undefined }[] {
    return this.engines.filter((e) => e.down).map((e) => ({ name: e.check.name, error: e.lastError }));
  }

  /** Calls listener(status) on every change of readiness or of an engine's state; returns the unsubscribe function. */
  onChange(listener: (status: ReadinessStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Starts probing (the first round after one interval); a monitor without checks never schedules anything. */
  start(): void {
    if (this.running || this.engines.length === 0) return;
    this.running = true;
    this.untrackGauge = engineUnreachable.addSource(() =>
      this.engines.map((e) => ({
        labels: { engine: e.check.healthName.replace(/^engine:/, ''), gates_requests: String(e.check.gatesRequests !== false) },
        value: e.down ? 1 : 0,
      })),
    );
    this.schedule();
  }

  /** Stops probing; a round in progress finishes without notifying. */
  stop(): void {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.untrackGauge?.();
    this.untrackGauge = undefined;
    this.listeners.clear();
  }

  /** Probes every engine once, concurrently (rounds never overlap), and answers whether the service is ready. */
  checkNow(): Promise<boolean> {
    this.round ??= this.probeAll().finally(() => {
      this.round = undefined;
    });
    return this.round;
  }

  private schedule(): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      void this.checkNow().finally(() => this.schedule());
    }, this.intervalMs);
    this.timer.unref();
  }

  private async probeAll(): Promise<boolean> {
    await Promise.all(this.engines.map((engine) => this.probe(engine)));
    const status = this.status;
    if (!sameStatus(status, this.reported)) {
      this.reported = status;
      for (const listener of [...this.listeners]) {
        try {
          listener(status);
        } catch (err) {
          this.options.logger.error({ err }, 'readiness listener failed');
        }
      }
    }
    return status.ready;
  }

  private async probe(engine: EngineState): Promise<void> {
    let error: string | undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      // A probe stuck past its timeout is awaited again instead of stacking a new one on the engine each
      // round; one that never settles is given up after a few timeouts so it cannot pin the engine down.
      if (engine.pending && performance.now() - engine.pendingSince > 3 * this.timeoutMs) engine.pending = undefined;
      if (!engine.pending) {
        engine.pendingSince = performance.now();
        const started: Promise<void> = Promise.resolve()
          .then(() => engine.check.check())
          .finally(() => {
            if (engine.pending === started) engine.pending = undefined;
          });
        engine.pending = started;
      }
      const attempt = engine.pending;
      attempt.catch(() => undefined);
      await Promise.race([
        attempt,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
        }),
      ]);
    } catch (err) {
      error = errorMessage(err);
    } finally {
      if (timer) clearTimeout(timer);
    }
    const { logger } = this.options;
    const { name, healthName, gatesRequests } = engine.check;
    if (error === undefined) {
      engine.failures = 0;
      engine.lastError = undefined;
      if (engine.down) {
        engine.down = false;
        logger.info({ engine: name, healthName }, gatesRequests === false ? `${name} answers again` : `${name} answers again: ready`);
      }
      return;
    }
    engine.failures++;
    engine.lastError = error;
    if (!engine.down && engine.failures >= this.failureThreshold) {
      engine.down = true;
      const consequence = gatesRequests === false ? `still ready, ${healthName} NOT_SERVING until it answers again` : 'not ready until it answers again';
      logger.error({ engine: name, healthName, error, failures: engine.failures }, `${name} is unreachable: ${consequence}`);
    }
  }
}

const UNAVAILABLE_ERROR_NAMES = new Set([
  // errors.ts (by name, as every entry here: new.target.name, so a subclass must be listed too). NotDueYetError was
  // missing: a deleted file's bytes waiting their grace (files-deleted-bytes) counted as failures, were dead-lettered
  // after maxAttempts (~10 s) and never removed.
  'RetryableUnavailableError',
  'NotDueYetError',
  // mongodb driver
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoPoolClearedError',
  // an operation still waiting for a server when the client closed (closeIfUnreachable at shutdown)
  'MongoTopologyClosedError',
  // @elastic/transport
  'ConnectionError',
  'NoLivingConnectionsError',
  'TimeoutError',
  // kafkajs
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
]);
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_SOCKET']);

/**
 * SQLite's and the file system's "no space left" (the data dir's file system full, or the user's quota on it): the
 * write was not made, and the same write succeeds once space is freed. SQLITE_IOERR_WRITE/_FSYNC/_TRUNCATE are what
 * SQLite reports when the OS refused a write or a sync with ENOSPC on the way (the journal, the WAL); seen together with
 * a full disk, never for a bad request.
 */
const STORAGE_FULL_CODES = new Set(['SQLITE_FULL', 'ENOSPC', 'EDQUOT', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_IOERR_TRUNCATE', 'SQLITE_IOERR_SHMSIZE']);

/**
 * True when an error says the storage a write went to is full (SQLITE_FULL, ENOSPC, EDQUOT; SQLite's I/O errors of a
 * refused write): like an engine out of reach, a condition to wait out (answered UNAVAILABLE with "Storage is full",
 * never a reason to dead-letter an event), which frees up when the operator makes room. Follows `cause` chains.
 */
export function isStorageFullError(err: unknown): boolean {
  return hasCodeIn(err, STORAGE_FULL_CODES);
}

/** True when the error, or one of the first errors of its `cause` chain, carries one of `codes`. */
function hasCodeIn(err: unknown, codes: ReadonlySet<string>): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && codes.has(code)) return true;
  }
  return false;
}

/**
 * A SQLite store whose write lock another connection held for longer than busy_timeout (5 s): the backup command
 * copying a large store, or another process's long write. Nothing was written and the same write succeeds once the lock
 * is let go. SQLITE_LOCKED is a conflict inside one connection (a bug), not this.
 */
const STORE_BUSY_CODES = new Set(['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_BUSY_TIMEOUT']);

/**
 * True when an error says a SQLite store stayed locked by another connection past busy_timeout: like an engine out of
 * reach, a condition to wait out (answered UNAVAILABLE as the service busy, never a reason to dead-letter an event).
 * Follows `cause` chains.
 */
export function isStoreBusyError(err: unknown): boolean {
  return hasCodeIn(err, STORE_BUSY_CODES);
}

/**
 * True when an error says an engine (MongoDB, Elasticsearch, Kafka, an S3 server) could not be reached
 * rather than refused the request: a transient condition that the caller should retry, answered
 * UNAVAILABLE (HTTP 503), and never a reason to dead-letter an event; so is storage that is full (isStorageFullError)
 * and a store that stayed locked (isStoreBusyError). Follows `cause` chains.
 */
export function isEngineUnavailableError(err: unknown): boolean {
  if (isStorageFullError(err) || isStoreBusyError(err)) return true;
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const { name, code } = e as { name?: unknown; code?: unknown };
    if (typeof name === 'string' && UNAVAILABLE_ERROR_NAMES.has(name)) return true;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    const message = (e as { message?: unknown }).message;
    if (typeof message === 'string' && / is unreachable \([A-Z_]+\)/.test(message)) return true;
  }
  return false;
}
