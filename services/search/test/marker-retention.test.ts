import { createLogger } from '@cards/platform';
import { MARKER_PRUNE_BATCH, pruneOrderMarkers } from '../src/application/marker-retention';
import { searchConfigSchema } from '../src/config';
import { loadConfig } from '@cards/platform';

const logger = createLogger('test', 'silent');

describe('search index order markers past the event retention (SEARCH_MARKER_RETENTION_HOURS)', () => {
  it('forgets those older than the retention, batch after batch until one is short', async () => {
    const calls: { before: Date; limit: number }[] = [];
    let left = MARKER_PRUNE_BATCH + 5;
    const index = {
      async pruneMarkers(before: Date, limit: number) {
        calls.push({ before, limit });
        const n = Math.min(left, limit);
        left -= n;
        return n;
      },
    };
    const now = new Date('2026-03-01T00:00:00Z');
    expect(await pruneOrderMarkers(index, 720, now, logger)).toBe(MARKER_PRUNE_BATCH + 5);
    expect(calls).toHaveLength(2);
    expect(calls.every((c) => c.before.toISOString() === '2026-01-30T00:00:00.000Z' && c.limit === MARKER_PRUNE_BATCH)).toBe(true);
  });

  it('0 keeps them all; the default is 720 hours', async () => {
    const index = { pruneMarkers: jest.fn(async () => 0) };
    expect(await pruneOrderMarkers(index, 0, new Date(), logger)).toBe(0);
    expect(index.pruneMarkers).not.toHaveBeenCalled();
    expect(loadConfig(searchConfigSchema, {}).SEARCH_MARKER_RETENTION_HOURS).toBe(720);
  });

  it('a retention reaching back further than a date can (9999999999 hours, for "keep them") keeps them all, never asking the store with an invalid date', async () => {
    const index = { pruneMarkers: jest.fn(async () => 0) };
    const hours = loadConfig(searchConfigSchema, { SEARCH_MARKER_RETENTION_HOURS: '9999999999' }).SEARCH_MARKER_RETENTION_HOURS;
    expect(await pruneOrderMarkers(index, hours, new Date('2026-03-01T00:00:00Z'), logger)).toBe(0);
    expect(index.pruneMarkers).not.toHaveBeenCalled();
  });
});
