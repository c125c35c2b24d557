import type { Logger } from '@cards/platform';
import type { AttemptCount, AttemptCounter } from '../domain/attempt-counter';

export interface FailoverOptions {
  logger: Logger;
  /** What the shared counter may take before this attempt is counted locally instead. */
  timeoutMs?: number;
  /** After a failure, how long attempts are counted locally before the shared counter is tried again. */
  retrySharedAfterMs?: number;
}

/**
 * The shared counter while it answers; while it does not (its store unreachable or slow), this process's own
 * counter, so that the limits still hold per process and a login is never refused or delayed for want of the
 * store (docs/decisions.md, "Shared auth rate limits").
 */
export class FailoverAttemptCounter implements AttemptCounter {
  private readonly timeoutMs: number;
  private readonly retrySharedAfterMs: number;
  private localUntil = 0;
  private failing = false;

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
    if (Date.now() < this.localUntil) return use(this.local);
    try {
      const answer = await this.withinTimeout(use(this.shared));
      if (this.failing) {
        this.failing = false;
        this.options.logger.info('auth rate limits: the shared counter answers again; counting there');
      }
      return answer;
    } catch (err) {
      this.localUntil = Date.now() + this.retrySharedAfterMs;
      if (!this.failing) {
        this.failing = true;
        this.options.logger.warn({ err }, 'auth rate limits: the shared counter failed; counting in this process until it answers again');
      }
      return use(this.local);
    }
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
