import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { visibleText } from '@cards/html-parsing';
import { token_set_ratio } from 'fuzzball';
import type { PageScorer } from '../../domain/ports';

/**
 * thefuzz's token_set_ratio as fuzzball implements it (lower-cased, punctuation stripped, integer 0-100), on both texts
 * in NFKC: text copied out of a PDF carries ligatures ("ﬁnancial"), which a reader takes for the letters they join.
 */
export function tokenSetRatio(cardText: string, pageText: string): number {
  const score = token_set_ratio(cardText.normalize('NFKC'), pageText.normalize('NFKC'));
  return Math.max(0, Math.min(100, Math.round(score)));
}

/** Scores on the calling thread; for small pages and tests. */
export class InlineFuzzballScorer implements PageScorer {
  async score(cardText: string, pageHtml: string): Promise<number> {
    return tokenSetRatio(cardText, visibleText(pageHtml));
  }
  async close(): Promise<void> {}
}

/** Thrown when scoring one page took longer than allowed (the worker was stopped). */
export class ScoringTimeoutError extends Error {
  constructor(ms: number) {
    super(`scoring took longer than ${ms} ms`);
    this.name = 'ScoringTimeoutError';
  }
}

// Plain CommonJS so it runs the same under tsx, jest and compiled builds (a worker runs no TypeScript loader);
// fuzzball and @cards/html-parsing (plain CommonJS too) are loaded by absolute path. The worker says when it is ready
// and answers on its own port, which the pool can read synchronously (receiveMessageOnPort).
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { token_set_ratio } = require(workerData.fuzzball);
const { visibleText } = require(workerData.htmlParsing);
const port = workerData.port;
port.on('message', ({ id, cardText, pageHtml }) => {
  try { port.postMessage({ id, score: token_set_ratio(cardText.normalize('NFKC'), visibleText(pageHtml).normalize('NFKC')) }); }
  catch (err) { port.postMessage({ id, error: String(err && err.message || err) }); }
});
port.postMessage({ ready: true });`;

interface Task {
  id: number;
  cardText: string;
  pageHtml: string;
  resolve(score: number): void;
  reject(err: Error): void;
}

interface Slot {
  worker: Worker;
  port: MessagePort;
  /** Whether the worker has loaded its modules: a task's time runs from then, not from its start. */
  ready: boolean;
  task: Task | undefined;
  timer: NodeJS.Timeout | undefined;
}

type WorkerMessage = { ready: true } | { id: number; score?: number; error?: string };

/**
 * fuzzball's Levenshtein is O(n·m): a long page takes seconds (see docs/benchmarks.md), and reading the text out of
 * 5 MiB of HTML most of a second, so both run on a small pool of worker threads and never block the service's event
 * loop. A task running past `timeoutMs` has its worker terminated and fails with ScoringTimeoutError. Its time runs
 * from when its worker is ready (loading fuzzball and the HTML reader took seconds on a loaded machine, and a fresh worker
 * spent the first task's time on it), and an answer that came in time but not yet handled (this thread busy past the
 * limit) is taken before the task is declared late.
 */
export class WorkerFuzzballScorer implements PageScorer {
  private readonly slots: Slot[] = [];
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;
  private readonly modules = { fuzzball: require.resolve('fuzzball'), htmlParsing: require.resolve('@cards/html-parsing') };

  constructor(
    private readonly size: number,
    private readonly timeoutMs: number,
  ) {}

  score(cardText: string, pageHtml: string): Promise<number> {
    if (this.closed) return Promise.reject(new Error('scorer is closed'));
    return new Promise<number>((resolve, reject) => {
      this.queue.push({ id: this.nextId++, cardText, pageHtml, resolve, reject });
      this.dispatch();
    }).then((score) => Math.max(0, Math.min(100, Math.round(score))));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const task of this.queue.splice(0)) task.reject(new Error('scorer is closed'));
    await Promise.all(this.slots.splice(0).map((slot) => this.retire(slot, new Error('scorer is closed'))));
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = this.slots.find((s) => !s.task);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      const task = this.queue.shift()!;
      slot.task = task;
      if (slot.ready) this.startClock(slot);
      slot.port.postMessage({ id: task.id, cardText: task.cardText, pageHtml: task.pageHtml });
    }
  }

  private startClock(slot: Slot): void {
    slot.timer = setTimeout(() => {
      // Answers already sent but not yet handled (this thread was busy past the limit) count as in time.
      for (let pending = receiveMessageOnPort(slot.port); pending && slot.task; pending = receiveMessageOnPort(slot.port)) {
        this.onMessage(slot, pending.message as WorkerMessage);
      }
      if (!slot.task) return;
      void this.retire(slot, new ScoringTimeoutError(this.timeoutMs)).then(() => this.dispatch());
    }, this.timeoutMs);
  }

  private onMessage(slot: Slot, message: WorkerMessage): void {
    if ('ready' in message) {
      slot.ready = true;
      if (slot.task && slot.timer === undefined) this.startClock(slot);
      return;
    }
    const task = slot.task;
    if (!task || task.id !== message.id) return;
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.task = undefined;
    if (message.error !== undefined) task.reject(new Error(message.error));
    else task.resolve(message.score ?? 0);
    this.dispatch();
  }

  private spawn(): Slot {
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ...this.modules, port: port2 }, transferList: [port2] });
    worker.unref();
    port1.unref();
    const slot: Slot = { worker, port: port1, ready: false, task: undefined, timer: undefined };
    port1.on('message', (message: WorkerMessage) => this.onMessage(slot, message));
    worker.on('error', (err) => {
      void this.retire(slot, err).then(() => this.dispatch());
    });
    this.slots.push(slot);
    return slot;
  }

  private async retire(slot: Slot, reason: Error): Promise<void> {
    const index = this.slots.indexOf(slot);
    if (index >= 0) this.slots.splice(index, 1);
    clearTimeout(slot.timer);
    const task = slot.task;
    slot.task = undefined;
    task?.reject(reason);
    slot.port.close();
    await slot.worker.terminate().catch(() => undefined);
  }
}
