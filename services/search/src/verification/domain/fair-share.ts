/** What fair claiming needs to know of a runnable job. */
export interface FairCandidate {
  authorId: string;
  cardId: string;
}

/**
 * Which runnable job to claim next so that one author's many jobs cannot hold every slot: among authors below
 * `maxPerAuthor` running jobs, the one with the fewest running, ties to the author whose waiting job is oldest; that
 * job. `candidates` are in queue order (due time, then insertion), so a job put back for a retry waits behind the jobs
 * that were waiting before its retry came due. Skips cards in `busyCards` (never two jobs of one card at once).
 * Returns the index in `candidates`, or -1 when none may run now.
 */
export function nextFairCandidate(candidates: readonly FairCandidate[], running: ReadonlyMap<string, number>, maxPerAuthor: number, busyCards: ReadonlySet<string>): number {
  let best = -1;
  let bestRunning = Infinity;
  for (let i = 0; i < candidates.length; i++) {
    const { authorId, cardId } = candidates[i]!;
    if (busyCards.has(cardId)) continue;
    const n = running.get(authorId) ?? 0;
    // The first (oldest) candidate of each author is the one compared: strictly fewer running wins.
    if (n < maxPerAuthor && n < bestRunning) {
      best = i;
      bestRunning = n;
    }
  }
  return best;
}

/** The default share of one author: half the slots, rounded up, so one author alone still uses two of four. */
export function defaultMaxPerAuthor(concurrency: number): number {
  return Math.max(1, Math.ceil(concurrency / 2));
}
