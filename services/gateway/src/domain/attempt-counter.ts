/** The attempts one key has made in the current window. */
export interface AttemptCount {
  /** Attempts in the window so far, the one just recorded included. */
  attempts: number;
  /** When the window ends and the key starts again from zero. */
  windowEndsAt: Date;
}

/**
 * Counts attempts per key (an action and a client address or e-mail) in fixed windows of `windowMs`
 * aligned to the epoch (a window starts at a multiple of `windowMs`), so that every gateway replica
 * counting in the same store sees the same window and the same count. Implementations count atomically:
 * concurrent attempts on one key are all counted.
 */
export interface AttemptCounter {
  /** Records one attempt of `key` and answers the count of its current window. */
  record(key: string, windowMs: number): Promise<AttemptCount>;
  /** Takes back one attempt of `key` in the current window (a count never goes below zero). */
  takeBack(key: string, windowMs: number): Promise<void>;
  /** Forgets every attempt of `key`: its next attempt counts as the first. */
  forget(key: string): Promise<void>;
}

/** Start of the window of `windowMs` that holds the instant `nowMs`. */
export function windowStartOf(nowMs: number, windowMs: number): number {
  return Math.floor(nowMs / windowMs) * windowMs;
}
