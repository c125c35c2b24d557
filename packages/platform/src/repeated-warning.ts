import type { Logger } from './logger';

/**
 * The clock repeated warnings are spaced by: this process's monotonic one. Not the wall clock: set back an hour (NTP, a
 * VM's resume, a clock fixed by hand), it would turn the warnings of an outage into debug lines for that hour.
 */
export const monotonicNow = (): number => performance.now();

/** How often one repeating warning (an engine or a peer not answering, for as long as that lasts) is written at most. */
export const REPEATED_WARNING_EVERY_MS = 60_000;

/**
 * A warning that may repeat many times a second for as long as a known condition lasts (a peer or an engine not
 * answering): writes the first, then one line a minute at most with the number of occurrences since the last line
 * (`sinceLastWarning`); the ones in between are debug lines. No stack: the condition is known, not a bug.
 */
export function repeatedWarningLog(
  logger: Logger,
  msg: string,
  { now = monotonicNow, everyMs = REPEATED_WARNING_EVERY_MS, countField = 'sinceLastWarning' }: { now?: () => number; everyMs?: number; countField?: string } = {},
): (fields: Record<string, unknown>) => void {
  let warnedAt: number | undefined;
  let quiet = 0;
  return (fields) => {
    const at = now();
    if (warnedAt === undefined || at - warnedAt >= everyMs) {
      logger.warn({ ...fields, [countField]: quiet }, msg);
      warnedAt = at;
      quiet = 0;
      return;
    }
    quiet++;
    logger.debug(fields, msg);
  };
}
