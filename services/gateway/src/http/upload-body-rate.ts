import type { Readable } from 'node:stream';

/**
 * The slowest an admitted upload's body may arrive (UPLOAD_BODY_GRACE_MS, UPLOAD_MIN_BYTES_PER_SECOND,
 * UPLOAD_BODY_RATE_WINDOW_MS), as nginx's client_body_timeout or Apache's mod_reqtimeout `body=...,MinRate=...`.
 */
export interface UploadBodyRate {
  /** From admission, how long the body may take before its rate is first checked. */
  graceMs: number;
  /** Bytes per second the body must average over the window; 0 checks nothing. */
  minBytesPerSecond: number;
  /** The sliding window the rate is averaged over. */
  windowMs: number;
}

/** What the check saw when it found a body too slow. */
export interface SlowBody {
  /** Body bytes received since the watch began. */
  receivedBytes: number;
  /** Since the watch began. */
  elapsedMs: number;
  /** Averaged over the last window (or the time since the watch began, when shorter). */
  bytesPerSecond: number;
}

/** How often the received bytes are sampled: ten samples a window, at most one a second, at least one every 50 ms. */
const sampleEveryMs = (windowMs: number) => Math.max(50, Math.min(1000, Math.floor(windowMs / 10)));

/**
 * Counts the bytes `body` delivers and calls `tooSlow` once when, after the grace, fewer than the minimum rate arrived
 * over the last window (a client that sends nothing at all included). Attach it after the body's reader has started
 * reading (its own 'data' listener): this one only counts. Answers the function that stops the watch.
 */
export function watchBodyRate(body: Readable, rate: UploadBodyRate, tooSlow: (slow: SlowBody) => void): () => void {
  if (!(rate.minBytesPerSecond > 0)) return () => undefined;
  // The global performance (Node's, as perf_hooks exports it): a test's fake timers move it with the sampling timer.
  const start = performance.now();
  let received = 0;
  const samples: Array<{ at: number; bytes: number }> = [{ at: start, bytes: 0 }];
  const count = (chunk: Buffer | string) => {
    received += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
  };
  const timer = setInterval(() => {
    const now = performance.now();
    samples.push({ at: now, bytes: received });
    // Only samples within the window; when the event loop stalled past a whole window none but this one is left, and
    // the check waits (the bytes kept arriving meanwhile and are counted on the next sample).
    while (samples.length > 1 && samples[0]!.at < now - rate.windowMs) samples.shift();
    if (now - start < rate.graceMs) return;
    const oldest = samples[0]!;
    const span = now - oldest.at;
    if (span <= 0) return;
    const bytesPerSecond = ((received - oldest.bytes) * 1000) / span;
    if (bytesPerSecond >= rate.minBytesPerSecond) return;
    stop();
    tooSlow({ receivedBytes: received, elapsedMs: Math.round(now - start), bytesPerSecond: Math.round(bytesPerSecond) });
  }, sampleEveryMs(rate.windowMs));
  const stop = () => {
    clearInterval(timer);
    body.off('data', count);
  };
  body.on('data', count);
  return stop;
}
