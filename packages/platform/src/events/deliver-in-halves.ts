/** What a subscription does with a run of events it holds, for deliverInHalves. */
export interface RunDelivery<T> {
  /** One attempt of the batchHandler on the run, committed when it succeeds; false when the handler failed. */
  applyRun(run: T[]): Promise<boolean>;
  /** One event through the handler, its retries and dead-lettering; false when the subscription stopped before it was done. */
  deliverOne(event: T): Promise<boolean>;
  /** False once the subscription is stopping (nothing more is delivered). */
  running(): boolean;
}

/**
 * Delivers a run in order: a run that fails is delivered again as its two halves, each the same way, so the event the
 * batchHandler cannot apply is found in O(log n) runs and alone takes the handler's retries and dead-lettering; the
 * others are applied in runs. (Event by event, a run of 100 cost 100 handler calls, each waiting e.g. for an index refresh.)
 * Resolves false when the subscription stopped before the whole run was done (the rest is left uncommitted).
 */
export async function deliverInHalves<T>(run: readonly T[], delivery: RunDelivery<T>): Promise<boolean> {
  if (!delivery.running()) return false;
  if (run.length === 0) return true;
  if (run.length === 1) return delivery.deliverOne(run[0]!);
  if (await delivery.applyRun([...run])) return true;
  const middle = Math.ceil(run.length / 2);
  return (await deliverInHalves(run.slice(0, middle), delivery)) && (await deliverInHalves(run.slice(middle), delivery));
}
