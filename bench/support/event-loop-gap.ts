import { performance } from 'node:perf_hooks';

/**
 * Runs `run` once while a 1 ms timer ticks and measures the longest gap between two of its turns: how long `run` held
 * the event loop at a stretch (the machine's own noise included: compare with an idle wait of the same length).
 */
export async function longestEventLoopGap<T>(run: () => Promise<T>): Promise<{ gap: number; took: number; result: T }> {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  await new Promise((resolve) => setTimeout(resolve, 5));
  last = performance.now();
  const started = performance.now();
  const result = await run();
  const took = performance.now() - started;
  await new Promise((resolve) => setTimeout(resolve, 5));
  clearInterval(ticker);
  return { gap: longest, took, result };
}
