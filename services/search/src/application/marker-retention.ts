import type { Logger } from '@cards/platform';
import type { CardIndex } from '../domain/ports';

/** Markers forgotten per batch, each its own short write. */
export const MARKER_PRUNE_BATCH = 1000;

/**
 * Forgets the index's order markers (removed cards' tombstones, removed bookmarks) older than `hours` (0 keeps all):
 * past the event retention no event older than them can still arrive. Batches of MARKER_PRUNE_BATCH, yielding between
 * them. Returns how many.
 */
export async function pruneOrderMarkers(index: Pick<CardIndex, 'pruneMarkers'>, hours: number, now: Date, logger: Logger): Promise<number> {
  if (hours <= 0) return 0;
  const before = new Date(now.getTime() - hours * 60 * 60 * 1000);
  let total = 0;
  for (;;) {
    const pruned = await index.pruneMarkers(before, MARKER_PRUNE_BATCH);
    total += pruned;
    if (pruned < MARKER_PRUNE_BATCH) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (total > 0) logger.info({ forgotten: total, hours }, 'search index: order markers past the event retention forgotten');
  return total;
}
