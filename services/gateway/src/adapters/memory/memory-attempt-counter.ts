import { windowStartOf, type AttemptCount, type AttemptCounter } from '../../domain/attempt-counter';

interface Window {
  endsAt: number;
  attempts: number;
}

/** How often ended windows are dropped, so keys seen once do not stay in memory. */
const SWEEP_EVERY_MS = 60_000;

/** Counts in this process's memory: the embedded default, right for one gateway process. */
export class MemoryAttemptCounter implements AttemptCounter {
  /** Key -> window length -> its current window. */
  private readonly windows = new Map<string, Map<number, Window>>();
  private nextSweepAt = 0;

  constructor(private readonly now: () => number = Date.now) {}

  async record(key: string, windowMs: number): Promise<AttemptCount> {
    const now = this.now();
    this.sweep(now);
    const ofKey = this.windows.get(key) ?? new Map<number, Window>();
    this.windows.set(key, ofKey);
    let window = ofKey.get(windowMs);
    if (!window || window.endsAt <= now) {
      window = { endsAt: windowStartOf(now, windowMs) + windowMs, attempts: 0 };
      ofKey.set(windowMs, window);
    }
    window.attempts++;
    return { attempts: window.attempts, windowEndsAt: new Date(window.endsAt) };
  }

  async takeBack(key: string, windowMs: number): Promise<void> {
    const window = this.windows.get(key)?.get(windowMs);
    if (window && window.endsAt > this.now() && window.attempts > 0) window.attempts--;
  }

  async forget(key: string): Promise<void> {
    this.windows.delete(key);
  }

  private sweep(now: number): void {
    if (now < this.nextSweepAt) return;
    this.nextSweepAt = now + SWEEP_EVERY_MS;
    for (const [key, ofKey] of this.windows) {
      for (const [windowMs, window] of ofKey) if (window.endsAt <= now) ofKey.delete(windowMs);
      if (ofKey.size === 0) this.windows.delete(key);
    }
  }
}
