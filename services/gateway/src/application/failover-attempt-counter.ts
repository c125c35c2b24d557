import type { Logger } from '@cards/platform';
import type { AttemptCount, AttemptCounter } from '../domain/attempt-counter';

export interface FailoverOptions {
  logger: Logger;
  /** What the shared counter may take before this attempt is counted locally instead. */
  timeoutMs?: number;
  /** After a failure, how long attempts are counted locally before the shared counter is asked again (in the background). */
  retrySharedAfterMs?: number;
}

/** The key the background probe forgets in the shared counter: no client's key has this form. */
export const PROBE_KEY = 'failover-probe';

/**
 * The shared counter while it answers; while it does not (its store unreachable or slow), this process's own
 * counter, so that the limits still hold per process and a login is never refused or delayed for want of the
 * store (docs/decisions.md, "Shared auth rate limits"). Only the attempt that finds the store failing waits for it:
 * afterwards attempts are counted locally and the store is probed in the background, at most once per
 * `retrySharedAfterMs`, until it answers.
 */
export class FailoverAttemptCounter implements AttemptCounter {
  private readonly timeoutMs: number;
  private readonly retrySharedAfterMs: number;
  private failing = false;
  /**
   * While failing: when the shared counter may be probed again, by this process's monotonic clock (performance.now): a
   * wall clock set back an hour would otherwise keep the shared counter unasked for an hour.
   */
  private probeAfter = 0;
  private probing = false;

  constructor(
    private readonly shared: AttemptCounter,
    private readonly local: AttemptCounter,
    private readonly options: FailoverOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 1000;
    this.retrySharedAfterMs = options.retrySharedAfterMs ?? 5000;
  }

  record(key: string, windowMs: number): Promise<AttemptCount> {
    return this.either((counter) => counter.record(key, windowMs));
  }

  takeBack(key: string, windowMs: number): Promise<void> {
    return this.either((counter) => counter.takeBack(key, windowMs));
  }

  async forget(key: string): Promise<void> {
    await Promise.all([this.local.forget(key), this.either((counter) => counter.forget(key))]);
  }

  private async either<T>(use: (counter: AttemptCounter) => Promise<T>): Promise<T> {
    if (this.failing) {
      this.probeWhenDue();
      return use(this.local);
    }
    try {
      return await this.withinTimeout(use(this.shared));
    } catch (err) {
      this.fail(err);
      return use(this.local);
    }
  }

  private fail(err: unknown): void {
    this.probeAfter = performance.now() + this.retrySharedAfterMs;
    if (this.failing) return;
    this.failing = true;
    this.options.logger.warn({ err }, 'auth rate limits: the shared counter failed; counting in this process until it answers again');
  }

  /** Asks the shared counter in the background whether it answers again; no attempt waits for the answer. */
  private probeWhenDue(): void {
    if (this.probing || performance.now() < this.probeAfter) return;
    this.probing = true;
    this.withinTimeout(this.shared.forget(PROBE_KEY))
      .then(
        () => {
          this.failing = false;
          this.options.logger.info('auth rate limits: the shared counter answers again; counting there');
        },
        (err: unknown) => this.fail(err),
      )
      .finally(() => (this.probing = false));
  }

  private withinTimeout<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    // A late failure of the abandoned call must not surface as an unhandled rejection.
    work.catch(() => undefined);
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }
}
