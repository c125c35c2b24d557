import { UnavailableError } from './errors';
import type { Logger } from './logger';

/** A task running in the background until it succeeds (retryUntilDone). */
export interface BackgroundRetry {
  /** Ends the retries and waits for a run under way. */
  stop(): Promise<void>;
}

/**
 * Runs `task` in the background until it succeeds, again after a growing pause (1 s, doubling up to `maxPauseMs`)
 * while it fails: a peer not up yet (UnavailableError) is logged at debug level, anything else as a warning.
 */
export function retryUntilDone(task: () => Promise<void>, logger: Logger, what: string, maxPauseMs = 60_000): BackgroundRetry {
  let stopped = false;
  let wake = () => undefined as void;
  const run = (async () => {
    for (let pauseMs = 1_000; !stopped; pauseMs = Math.min(pauseMs * 2, maxPauseMs)) {
      try {
        await task();
        return;
      } catch (err) {
        if (stopped) return;
        if (err instanceof UnavailableError) logger.debug({ err }, `${what}: a peer cannot answer yet; trying again`);
        else logger.warn({ err }, `${what} failed; trying again`);
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pauseMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  })();
  return {
    async stop() {
      stopped = true;
      wake();
      await run;
    },
  };
}
