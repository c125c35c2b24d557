/**
 * The first value `probe` answers other than undefined, asked every 100 ms, for what the system does asynchronously
 * (indexing, notifications); throws naming `what` after `timeoutMs`.
 */
export async function eventuallyDefined<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}
