import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger, serviceMetrics, SqliteEventLog, Topics } from '@cards/platform';
import { events } from '@cards/proto';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { indexWasLost, rebuildRequest, rebuildRequestIfIndexLost, rebuildRequestSender } from '../src/application/lost-index';
import { testTempDir } from '../../../test/support/cleanup';

const requests = async () => (await serviceMetrics.getSingleMetric('card_library_search_index_rebuild_requests_total')!.get()).values[0]?.value ?? 0;

function recordingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = createLogger('search', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { logger, warnings: () => lines.filter((l) => l.level === 40).map((l) => l.msg) };
}

describe('a search index lost while search was stopped (created at this start, its consumer group having handled events before)', () => {
  const group = 'search-index';
  const topics = [Topics.card, Topics.bookmark];
  const check = (created: boolean, committed: boolean) => ({
    index: { createdAtStart: async () => created, lostIndexCheckSettled: jest.fn(async () => undefined) },
    bus: { hasCommitted: jest.fn(async () => committed) },
    group,
    topics,
  });

  it.each([
    ['created now, the group handled events before: lost', true, true, true],
    ['created now, the group never handled an event (a new system, its first cards not indexed yet): not lost', true, false, false],
    ['already there, the group handled events before (a restart): not lost', false, true, false],
    ['already there, the group never handled an event: not lost', false, false, false],
  ])('%s', async (_case, created, committed, lost) => {
    const { logger, warnings } = recordingLogger();
    const before = await requests();
    const c = check(created, committed);
    expect(await indexWasLost(c)).toBe(lost);
    const request = await rebuildRequestIfIndexLost({ ...c, logger });
    expect({ request: request !== undefined, warnings: warnings().length, counted: (await requests()) - before }).toEqual({ request: lost, warnings: lost ? 1 : 0, counted: lost ? 1 : 0 });
    if (created) expect(c.bus.hasCommitted).toHaveBeenCalledWith(group, topics);
    // Created now and not lost: settled here; lost: by the caller once the request is sent; already there: nothing to settle.
    expect(c.index.lostIndexCheckSettled).toHaveBeenCalledTimes(created && !lost ? 1 : 0);
    if (request) {
      expect(request.topic).toBe(Topics.indexRebuild);
      const decoded = events.SearchIndexRebuildRequested.decode(request.payload);
      expect(decoded.eventId).not.toBe('');
      expect(decoded.reason).toMatch(/created at this start while its consumer group had handled events before/);
      expect(warnings()[0]).toMatch(/asking the cards service to tell search every card and bookmark again/);
    }
  });

  it('sending the request: published once, however often settling the check afterwards fails and is tried again; a failed publish is tried again', async () => {
    const request = rebuildRequest('lost');
    let publishFailures = 1;
    let settleFailures = 2;
    let published = 0;
    const bus = {
      publish: jest.fn(async () => {
        if (publishFailures-- > 0) throw new Error('broker down');
        published++;
      }),
    };
    const index = {
      lostIndexCheckSettled: jest.fn(async () => {
        // An Elasticsearch index blocked read-only (disk flood stage) refuses the _meta write.
        if (settleFailures-- > 0) throw new Error('cluster_block_exception');
      }),
    };
    const send = rebuildRequestSender(request, bus, index);
    const outcomes: string[] = [];
    for (let attempt = 0; attempt < 5 && outcomes.at(-1) !== 'done'; attempt++) {
      outcomes.push(await send().then(() => 'done', (err: Error) => err.message));
    }
    expect(outcomes).toEqual(['broker down', 'cluster_block_exception', 'cluster_block_exception', 'done']);
    // One request reached the log (each one has the cards service tell search every card again); settled at the end.
    expect(published).toBe(1);
    expect(bus.publish).toHaveBeenCalledTimes(2);
    expect(bus.publish).toHaveBeenLastCalledWith([request]);
    expect(index.lostIndexCheckSettled).toHaveBeenCalledTimes(3);
  });

  describe('on the embedded adapters', () => {
    let dir: string;
    beforeEach(() => {
      dir = testTempDir('search-lost-index-');
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('the SQLite index says it was created by this open: a new or deleted file yes, a reopened one no once the check settled', async () => {
      const path = join(dir, 'index.db');
      const open = async ({ settle = true } = {}) => {
        const index = new SqliteCardIndex({ path, dimensions: 3 });
        const created = await index.createdAtStart();
        if (settle) await index.lostIndexCheckSettled();
        await index.close();
        return created;
      };
      expect(await open()).toBe(true);
      expect(await open()).toBe(false);
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
      // A start that created it and stopped before its check settled (killed before the rebuild request was sent):
      // the next opens still say so, until one settles it.
      expect(await open({ settle: false })).toBe(true);
      expect(await open()).toBe(true);
      expect(await open()).toBe(false);
    });

    it('a start killed between deciding the index was lost and sending the request: the next start asks again', async () => {
      const { logger } = recordingLogger();
      const path = join(dir, 'index.db');
      const committed = { hasCommitted: async () => true };
      const start = async () => {
        const index = new SqliteCardIndex({ path, dimensions: 3 });
        try {
          return await rebuildRequestIfIndexLost({ index, bus: committed, group, topics, logger });
        } finally {
          await index.close();
        }
      };
      // Created at this start, the group had handled events: lost. The request is not sent (killed), nothing settled.
      expect(await start()).toBeDefined();
      expect(await start()).toBeDefined();
      const index = new SqliteCardIndex({ path, dimensions: 3 });
      await index.lostIndexCheckSettled(); // sent this time
      await index.close();
      expect(await start()).toBeUndefined();
    });

    it('with the event log: lost only after the group committed an event, and the index file was deleted', async () => {
      const { logger } = recordingLogger();
      const path = join(dir, 'index.db');
      const log = new SqliteEventLog({ path: join(dir, 'events.db'), logger, pollIntervalMs: 20 });
      try {
        const lostNow = async () => {
          const index = new SqliteCardIndex({ path, dimensions: 3 });
          try {
            // As a start does: not lost settles the check; lost is settled once the request is sent (here at once).
            const lost = await indexWasLost({ index, bus: log, group, topics });
            await index.lostIndexCheckSettled();
            return lost;
          } finally {
            await index.close();
          }
        };
        await log.publish([{ topic: Topics.card, key: 'card-1', payload: new Uint8Array([1]) }]);
        // A new system: the index made now, nothing handled yet.
        expect(await lostNow()).toBe(false);
        const handled: string[] = [];
        const subscription = await log.subscribe({ group, topics, handler: async (e) => void handled.push(e.key) });
        for (let i = 0; i < 200 && !(await log.hasCommitted(group, topics)); i++) await new Promise((r) => setTimeout(r, 20));
        await subscription.close();
        expect(handled).toEqual(['card-1']);
        // A restart: the index is there.
        expect(await lostNow()).toBe(false);
        for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
        expect(await lostNow()).toBe(true);
      } finally {
        await log.close();
      }
    });
  });
});
