/**
 * The gateway's rate limits count in windows aligned to the clock (windowStartOf: a per-minute count starts again at
 * every minute's :00, the mail limit's every ten minutes). A test that makes N attempts and expects the last refused
 * fails when a boundary passes between its first and its last attempt: the count started again half-way (under load
 * eleven reset requests take 0.3–1.6 s, so about one run in 40–200 crosses a minute).
 *
 * Runs `attempts` until one run begins and ends in the same window (seen by this process's clock, the gateway's too:
 * one machine) and answers that run's result; a run that crossed a boundary is done again, once or twice. `attempts`
 * must count on keys of its own each time it is called (a new e-mail address, a new client address), so a run never
 * starts from another run's count.
 */
export async function withinOneWindow<T>(windowMs: number, attempts: () => Promise<T>): Promise<T> {
  for (let run = 1; ; run++) {
    const window = Math.floor(Date.now() / windowMs);
    const result = await attempts();
    if (Math.floor(Date.now() / windowMs) === window || run === 3) return result;
  }
}

let nextClient = 0;
/** A client address of its own for each call (TEST-NET-2, 198.51.100.0/24, then TEST-NET-3's 203.0.113.0/24). */
export function freshClientAddress(): string {
  const n = nextClient++ % 500;
  return n < 250 ? `198.51.100.${n + 1}` : `203.0.113.${n - 249}`;
}
