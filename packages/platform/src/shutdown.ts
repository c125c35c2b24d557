import type { Logger } from 'pino';

/** Runs stop() once on SIGTERM or SIGINT, then exits; a second signal exits at once. */
export function stopOnSignals(stop: () => Promise<void>, logger: Logger): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    stop()
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
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
