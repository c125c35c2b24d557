import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Status } from 'nice-grpc';
import { AdmissionRefusedError, BoundedAdmission, ClientShares, InvalidArgumentError, ResourceExhaustedError, ServiceBusyError, UnavailableError, type Logger } from '@cards/platform';
import type { CardHtmlCleaner } from '../../domain/ports';
import { cardTextFromHtml, MAX_HTML_CHARS } from '../../domain/rules';

export interface CardHtmlCleaningLimits {
  /** Card HTML shorter than this (in UTF-16 units) is cleaned on the service's thread: a few ms at most. */
  minWorkerChars: number;
  /** Worker threads at most, each cleaning one card at a time. */
  workers: number;
  /** Large cards waiting for a worker at most; one more is refused ServiceBusyError (HTTP 503 with Retry-After) at once. */
  maxQueued: number;
  /** How long a large card waits for a worker at most before it is refused. */
  maxWaitMs: number;
  /**
   * Large cards one user has being cleaned or waiting at once at most (a client's create or update; a file's ingestion
   * is not counted); one more is refused ResourceExhaustedError (HTTP 429 with Retry-After) at once, before it takes a
   * place, so one user's flood leaves the other workers and the line to the others.
   */
  perUser: number;
}

export const DEFAULT_CARD_HTML_CLEANING_LIMITS: CardHtmlCleaningLimits = { minWorkerChars: 16_384, workers: 2, maxQueued: 16, maxWaitMs: 5_000, perUser: 2 };

export const CARD_HTML_BUSY_MESSAGE = 'The service is busy cleaning other large cards; send the card again in a few seconds';

export const OWN_CARD_HTML_BUSY_MESSAGE = 'You have too many large cards being cleaned at once; send the card again when one of them has finished';

/** A worker's heap cap: cleaning the largest card takes a few MB; the modules it loads, some tens. */
const WORKER_HEAP_MB = 256;

// Plain CommonJS (a worker runs no TypeScript loader of its own, under tsx, jest or node): it registers tsx's require
// hook, then loads rules.ts itself, so the worker runs the very cardTextFromHtml the service runs inline.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
require(workerData.tsx).register();
const { cardTextFromHtml } = require(workerData.rules);
parentPort.on('message', ({ id, html }) => {
  try { parentPort.postMessage({ id, result: cardTextFromHtml(html) }); }
  catch (err) { parentPort.postMessage({ id, error: { message: String((err && err.message) || err), status: err && typeof err.status === 'number' ? err.status : undefined } }); }
});`;

interface Task {
  id: number;
  resolve(result: { cardHtml: string; content: string }): void;
  reject(err: Error): void;
}

interface PooledWorker {
  worker: Worker;
  task: Task | undefined;
}

/**
 * Where tsx's CommonJS API (`tsx/cjs/api`) is: beside the workspace (development, tests), or beside the tsx the
 * process was started with (the images run `node --import /usr/local/lib/node_modules/tsx/dist/loader.mjs`, a global
 * install that no require from /app finds: the loader's path is in execArgv).
 */
export function tsxCjsApiPath(execArgv: readonly string[] = process.execArgv, from: readonly string[] = [process.cwd(), __dirname]): string | undefined {
  const started = execArgv.filter((arg) => /[\\/]tsx[\\/]/.test(arg)).map((arg) => dirname(arg.startsWith('file:') ? fileURLToPath(arg) : arg));
  const localRequire = createRequire(__filename);
  for (const dir of [...from, ...started]) {
    try {
      return localRequire.resolve('tsx/cjs/api', { paths: [dir] });
    } catch {
      // not there; the next place
    }
  }
  return undefined;
}

/**
 * Cleans large card HTML on a small pool of worker threads, so that one card of several hundred KB of markup (~60 ms of
 * parsing, docs/benchmarks.md) does not hold the service's event loop while other requests wait; smaller HTML is
 * cleaned inline, where a worker's round trip would cost more than it saves. At most `workers` cards are cleaned at
 * once; the next ones wait in a line of at most `maxQueued` for at most `maxWaitMs`, beyond which they are refused
 * UnavailableError (BoundedAdmission), so a flood of large cards neither spawns workers nor queues without bound.
 * Patient callers (a file's ingestion) wait as long as it takes, as BoundedAdmission lets them.
 * One user (the caller a create or update names) has at most `perUser` large cards being cleaned or waiting at once;
 * one more is refused ResourceExhaustedError at once, before it takes a place (ClientShares, as the files service's
 * document checks): without it, one user's parallel loop of slow large cards held both workers and the whole line,
 * and every other user's large card was refused busy. A patient caller takes no share (it is never refused).
 * Workers start on first use and stay; one that fails is replaced on next use. Without tsx to load the rules in a
 * worker, every card is cleaned inline (logged at the start).
 */
export class WorkerCardHtmlCleaner implements CardHtmlCleaner {
  private readonly admission: BoundedAdmission;
  /** Large cards being cleaned or waiting, by user. */
  private readonly cleansOf = new ClientShares();
  private readonly idle: PooledWorker[] = [];
  private readonly all = new Set<PooledWorker>();
  private nextId = 1;
  private closed = false;
  private readonly workerData: { tsx: string; rules: string } | undefined;

  constructor(
    private readonly limits: CardHtmlCleaningLimits = DEFAULT_CARD_HTML_CLEANING_LIMITS,
    logger?: Logger,
    tsx: string | undefined = tsxCjsApiPath(),
  ) {
    this.admission = new BoundedAdmission({ capacity: limits.workers, maxWaiting: limits.maxQueued, maxWaitMs: limits.maxWaitMs });
    this.workerData = tsx === undefined ? undefined : { tsx, rules: join(__dirname, '..', '..', 'domain', 'rules.ts') };
    if (!this.workerData) logger?.warn('tsx/cjs/api not found: large card HTML is cleaned on the service thread');
  }

  async clean(rawHtml: string, options: { patient?: boolean; caller?: string } = {}): Promise<{ cardHtml: string; content: string }> {
    // HTML over the limit is refused at once, before it waits or is copied to a worker.
    if (!this.workerData || rawHtml.length < this.limits.minWorkerChars || rawHtml.length > MAX_HTML_CHARS) return cardTextFromHtml(rawHtml);
    if (this.closed) throw new UnavailableError('The cards service is stopping');
    const releaseShare = options.patient || options.caller === undefined ? () => undefined : this.cleansOf.take(options.caller, 1, this.limits.perUser);
    if (!releaseShare) throw new ResourceExhaustedError(OWN_CARD_HTML_BUSY_MESSAGE);
    try {
      return await this.admitted(rawHtml, options.patient === true);
    } finally {
      releaseShare();
    }
  }

  private async admitted(rawHtml: string, patient: boolean): Promise<{ cardHtml: string; content: string }> {
    let release: () => void;
    try {
      // A patient caller (ingestion, a few at a time per files process) waits behind the line, never refused nor starved.
      release = await (patient ? this.admission.acquirePatiently() : this.admission.acquire());
    } catch (err) {
      if (err instanceof AdmissionRefusedError) throw new ServiceBusyError(CARD_HTML_BUSY_MESSAGE);
      throw err;
    }
    try {
      return await this.inWorker(rawHtml);
    } finally {
      release();
    }
  }

  /** Stops the workers; a card being cleaned fails with UnavailableError. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.all].map((pooled) => this.retire(pooled, new UnavailableError('The cards service is stopping'))));
  }

  /** Worker threads running now (busy or idle). */
  get workerCount(): number {
    return this.all.size;
  }

  private inWorker(html: string): Promise<{ cardHtml: string; content: string }> {
    // The admission holds at most `workers` callers here at once, so an idle worker or room for one is always there.
    const pooled = this.idle.pop() ?? this.spawn();
    return new Promise((resolve, reject) => {
      const task: Task = { id: this.nextId++, resolve, reject };
      pooled.task = task;
      pooled.worker.postMessage({ id: task.id, html });
    });
  }

  private spawn(): PooledWorker {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: this.workerData, resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB } });
    worker.unref();
    const pooled: PooledWorker = { worker, task: undefined };
    this.all.add(pooled);
    worker.on('message', (message: { id: number; result?: { cardHtml: string; content: string }; error?: { message: string; status?: number } }) => {
      const task = pooled.task;
      if (!task || task.id !== message.id) return;
      pooled.task = undefined;
      if (!this.closed) this.idle.push(pooled);
      if (message.result) task.resolve(message.result);
      // The rules refuse bad HTML with InvalidArgumentError (HTTP 400); anything else is the service's own failure.
      else if (message.error?.status === Status.INVALID_ARGUMENT) task.reject(new InvalidArgumentError(message.error.message));
      else task.reject(new Error(`cleaning card HTML failed: ${message.error?.message ?? 'no result'}`));
    });
    worker.on('error', (err) => void this.retire(pooled, new Error(`cleaning card HTML failed: ${err.message}`)));
    worker.on('exit', (code) => void this.retire(pooled, new Error(`the card HTML worker stopped (exit code ${code})`)));
    return pooled;
  }

  private async retire(pooled: PooledWorker, reason: Error): Promise<void> {
    if (!this.all.delete(pooled)) return;
    const at = this.idle.indexOf(pooled);
    if (at >= 0) this.idle.splice(at, 1);
    const task = pooled.task;
    pooled.task = undefined;
    task?.reject(reason);
    await pooled.worker.terminate().catch(() => undefined);
  }
}
