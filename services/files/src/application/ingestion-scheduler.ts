import { isEngineUnavailableError, monotonicNow, newId, repeatedWarningLog, type Logger } from '@cards/platform';
import type { FileRepository, IngestionClaim } from '../domain/ports';
import type { IngestionWorker } from './ingestion-worker';

export interface IngestionSchedulerDeps {
  repository: FileRepository;
  worker: Pick<IngestionWorker, 'ingest'>;
  logger: Logger;
  /** Attempts of one file before its last one records the failure. */
  maxAttempts: number;
  /**
   * Who claims: unique per process where several share the store (MongoDB: the default, a new id); a fixed name for a
   * store only one process opens (SQLite), so a restarted process takes back at once the files it held when it stopped.
   */
  holder?: string;
  /** How long a claim lasts without renewal (renewed every third of it while the attempt runs); default 30 s. */
  claimMs?: number;
  /** How often the queue is looked at without a wake (uploads stored by other replicas, retries due); default 2 s. */
  pollMs?: number;
  /** Backoff of a failed attempt: base * 2^(attempt - 1), at most max; defaults 100 ms and 5 s (as the bus's). */
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** The clock the repeated warnings are spaced by (tests); this process's monotonic one (performance.now) by default. */
  now?: () => number;
}

/** How often a file whose attempts keep failing uncounted (a peer or engine not ready) logs a warning at most. */
export const WAITING_WARNING_EVERY_MS = 60_000;

/**
 * Fair ingestion (docs/files.md#fair-ingestion): runs one document's ingestion at a time, taking the next from the
 * repository's queue (claimNextIngestion: the owner whose last ingestion started longest ago, then that owner's oldest
 * pending file), so one user's thirty uploads make another's single upload wait for about one document, not thirty. The
 * pending record is the queue: the FileUploaded event only wakes it (file-event-subscriptions.ts), a poll finds what
 * other replicas stored, and a claim, renewed while its attempt runs, keeps two replicas off one file; a file whose
 * claim ran out (its process died) is taken again. A failed attempt gives the file back with backoff; the last one
 * (maxAttempts, crashed attempts counted) records `failed`, as the worker does.
 */
export class IngestionScheduler {
  readonly holder: string;
  private running: Promise<void> | undefined;
  private woken = false;
  private stopping = false;
  private poll: NodeJS.Timeout | undefined;
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  /** Files whose last failures were not counted: when the last warning was logged, and the failures since. */
  /** Per file waiting uncounted: its first failure a warning, then one a minute (repeatedWarningLog). */
  private readonly waiting = new Map<string, (fields: Record<string, unknown>) => void>();

  constructor(private readonly deps: IngestionSchedulerDeps) {
    this.holder = deps.holder ?? newId();
  }

  private get claimMs(): number {
    return this.deps.claimMs ?? 30_000;
  }

  /** Takes back the files this holder held before a restart, then ingests what is due and looks again every pollMs. */
  async start(): Promise<void> {
    const taken = await this.deps.repository.releaseIngestionClaimsOf(this.holder);
    if (taken > 0) this.deps.logger.info({ files: taken, holder: this.holder }, 'resuming the ingestions under way when the process stopped');
    this.poll = setInterval(() => this.wake(), this.deps.pollMs ?? 2_000);
    this.poll.unref();
    this.wake();
  }

  /** Something may be due (an upload stored, a retry's time come): ingests until nothing is. */
  wake(): void {
    if (this.stopping) return;
    this.woken = true;
    this.running ??= this.drain().finally(() => {
      this.running = undefined;
      // Woken after the drain's last look and before this: look again.
      if (this.woken) this.wake();
    });
  }

  /** Takes no more files and waits for the attempt under way (as the bus's close waited for its handler). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.poll) clearInterval(this.poll);
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.retryTimers.clear();
    await this.running;
  }

  private async drain(): Promise<void> {
    while (this.woken && !this.stopping) {
      this.woken = false;
      for (;;) {
        if (this.stopping) return;
        let claim: IngestionClaim | null;
        try {
          claim = await this.deps.repository.claimNextIngestion(this.holder, new Date(), this.claimMs);
        } catch (err) {
          // The store is unreachable: the poll looks again.
          this.deps.logger.warn({ err }, 'could not take the next file to ingest; looking again later');
          return;
        }
        if (!claim) break;
        await this.attempt(claim);
      }
    }
  }

  private async attempt({ file, attempt }: IngestionClaim): Promise<void> {
    const { repository, worker, logger, maxAttempts } = this.deps;
    const renewal = setInterval(() => {
      repository.renewIngestionClaim(file.id, this.holder, new Date(Date.now() + this.claimMs)).then(
        (held) => held || logger.debug({ fileId: file.id }, 'the claim of a file under ingestion was not renewed: ingested, deleted or taken'),
        (err: unknown) => logger.warn({ err, fileId: file.id }, 'could not renew the claim of a file under ingestion'),
      );
    }, Math.max(10, Math.floor(this.claimMs / 3)));
    try {
      await worker.ingest(file.id, attempt >= maxAttempts);
      this.waiting.delete(file.id);
    } catch (err) {
      // A failure of a peer before the last attempt: given back, due again after the backoff; other files go meanwhile.
      const counted = !isEngineUnavailableError(err);
      // An uncounted failure leaves the attempt number as it was: it waits the longest backoff, not the shortest again.
      const retryMaxMs = this.deps.retryMaxMs ?? 5_000;
      const delay = counted ? Math.min(retryMaxMs, (this.deps.retryBaseMs ?? 100) * 2 ** Math.min(attempt - 1, 16)) : retryMaxMs;
      this.logFailedAttempt(err, file.id, attempt, delay, counted);
      await repository.releaseIngestionClaim(file.id, this.holder, new Date(Date.now() + delay), counted).catch((releaseErr: unknown) => {
        logger.warn({ err: releaseErr, fileId: file.id }, 'could not give back a file after a failed ingestion attempt; retried once its claim runs out');
      });
      if (!this.stopping) {
        const timer = setTimeout(() => {
          this.retryTimers.delete(timer);
          this.wake();
        }, delay);
        timer.unref();
        this.retryTimers.add(timer);
      }
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * Each counted failure is logged; a file waiting for what is not ready (an engine, a peer not released yet: maybe
   * hours) logs its first failure, then one line a minute at most with the failures in between (debug lines for each).
   */
  private logFailedAttempt(err: unknown, fileId: string, attempt: number, retryInMs: number, counted: boolean): void {
    const { logger } = this.deps;
    if (counted) {
      this.waiting.delete(fileId);
      logger.warn({ err, fileId, attempt, retryInMs }, 'file ingestion attempt failed; it will be retried');
      return;
    }
    let warn = this.waiting.get(fileId);
    if (!warn) {
      // Files another replica finished are never removed here: the map is bounded instead.
      if (this.waiting.size >= 10_000) this.waiting.clear();
      warn = repeatedWarningLog(logger, 'file ingestion attempt failed (not counted: waiting for a service); it will be retried', {
        now: this.deps.now ?? monotonicNow,
        everyMs: WAITING_WARNING_EVERY_MS,
        countField: 'failuresSinceLastWarning',
      });
      this.waiting.set(fileId, warn);
    }
    warn({ err, fileId, attempt, retryInMs });
  }
}
