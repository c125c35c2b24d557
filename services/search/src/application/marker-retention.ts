import type { Logger } from '@cards/platform';
import type { CardIndex } from '../domain/ports';

/** Markers forgotten per batch, each its own short write. */
export const MARKER_PRUNE_BATCH = 1000;

/**
 * Forgets the index's order markers (removed cards' tombstones, removed bookmarks) older than `hours` (0, or more than a
 * Date reaches back, keeps all):
 * past the event retention no event older than them can still arrive. Batches of MARKER_PRUNE_BATCH, yielding between
 * them. Returns how many.
 */
export async function pruneOrderMarkers(index: Pick<CardIndex, 'pruneMarkers'>, hours: number, now: Date, logger: Logger): Promise<number> {
  if (hours <= 0) return 0;
  const before = new Date(now.getTime() - hours * 60 * 60 * 1000);
  // Further back than a Date reaches (9999999999, written for "keep them"): nothing is that old, as with 0. The invalid
  // Date's NaN would otherwise reach the store: SQLite compares nothing with it, but Elasticsearch's range gets
  // `lt: null` (JSON has no NaN), an open bound that matches every marker.
  if (Number.isNaN(before.getTime())) return 0;
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
