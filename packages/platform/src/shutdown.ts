import type { Logger } from 'pino';

/** Runs stop() once on SIGTERM or SIGINT, then exits; a second SIGINT exits at once, a repeated SIGTERM waits for the stop. */
export function stopOnSignals(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second Ctrl-C is a person who will not wait. A second SIGTERM is the same request again (a process group
      // signalled through the tsx CLI, which relays it, or a supervisor repeating itself): the stop in progress has
      // deadlines of its own, and the signal's default action would end it with no exit hook and requests cut.
      if (signal === 'SIGINT') process.exit(1);
      return;
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}

/** Whether `promise` settled (resolved or rejected) within `ms` (true when there is none), leaving no timer behind. */
export async function settledWithin(promise: Promise<unknown> | undefined, ms: number): Promise<boolean> {
  if (!promise) return true;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise.then(() => true, () => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
