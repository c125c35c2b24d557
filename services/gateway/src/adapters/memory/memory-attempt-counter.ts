import { windowStartOf, type AttemptCount, type AttemptCounter } from '../../domain/attempt-counter';

interface Window {
  endsAt: number;
  attempts: number;
}

/** How often ended windows are dropped, so keys seen once do not stay in memory. */
const SWEEP_EVERY_MS = 60_000;

/**
 * Whether `now` falls in the window: before its end, and not before its start. A window that starts after `now` was
 * made before the wall clock was set back (NTP, a VM's resume, a clock fixed by hand): it is over, or a limit reached
 * just before a step back of an hour would hold for an hour and a minute.
 */
function isCurrent(window: Window, windowMs: number, now: number): boolean {
  return now < window.endsAt && now >= window.endsAt - windowMs;
}

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
    if (!window || !isCurrent(window, windowMs, now)) {
      window = { endsAt: windowStartOf(now, windowMs) + windowMs, attempts: 0 };
      ofKey.set(windowMs, window);
    }
    window.attempts++;
    return { attempts: window.attempts, windowEndsAt: new Date(window.endsAt) };
  }

  async takeBack(key: string, windowMs: number): Promise<void> {
    const window = this.windows.get(key)?.get(windowMs);
    if (window && isCurrent(window, windowMs, this.now()) && window.attempts > 0) window.attempts--;
  }

  async forget(key: string): Promise<void> {
    this.windows.delete(key);
  }

  private sweep(now: number): void {
    // A due time more than one period ahead: the clock was set back; sweep now rather than after the step.
    if (now < this.nextSweepAt && this.nextSweepAt - now <= SWEEP_EVERY_MS) return;
    this.nextSweepAt = now + SWEEP_EVERY_MS;
    for (const [key, ofKey] of this.windows) {
      for (const [windowMs, window] of ofKey) if (!isCurrent(window, windowMs, now)) ofKey.delete(windowMs);
      if (ofKey.size === 0) this.windows.delete(key);
    }
  }
}
