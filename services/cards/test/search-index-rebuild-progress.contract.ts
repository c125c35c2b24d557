import type { SearchIndexRebuildProgress } from '../src/domain/ports';

/**
 * Two handles on one store's rebuild progress, as two processes sharing it have them (two cards replicas, or the
 * service and the operator's command), on a clock the test moves.
 */
export interface RebuildProgressFixture {
  handles: [SearchIndexRebuildProgress, SearchIndexRebuildProgress];
  /** Moves both handles' clock forward. */
  advanceClock(ms: number): void;
  close(): Promise<void>;
}

export type RebuildProgressFactory = () => Promise<RebuildProgressFixture>;

const LEASE = 60_000;

/** The SearchIndexRebuildProgress contract; run it against every adapter. */
export function describeSearchIndexRebuildProgressContract(name: string, factory: RebuildProgressFactory): void {
  describe(`SearchIndexRebuildProgress contract: ${name}`, () => {
    let store: RebuildProgressFixture;
    let a: SearchIndexRebuildProgress;
    let b: SearchIndexRebuildProgress;
    beforeEach(async () => {
      store = await factory();
      [a, b] = store.handles;
    });
    afterEach(async () => {
      await store.close();
    });

    it('has nothing to claim when no rebuild was begun', async () => {
      expect(await b.claimUnfinished('replica-b', 0)).toBeUndefined();
    });

    it('hands an unfinished rebuild over, where its holder recorded it was, once the holder said nothing for a lease', async () => {
      const run = await a.begin('search found its index lost', 'replica-a');
      expect(await a.advance(run, { phase: 'cards', after: 'card-4' })).toBe(true);
      store.advanceClock(LEASE - 1000);
      expect(await b.claimUnfinished('replica-b', LEASE)).toBeUndefined();
      store.advanceClock(1000);
      const claimed = await b.claimUnfinished('replica-b', LEASE);
      expect(claimed).toMatchObject({ phase: 'cards', after: 'card-4', reason: 'search found its index lost', previousHolder: 'replica-a' });
      expect(claimed!.run).not.toBe(run);
      // The former holder learns it no longer holds it, and cannot move the claimed record.
      expect(await a.advance(run, { phase: 'bookmarks' })).toBe(false);
      expect(await a.keepAlive(run)).toBe(false);
      await a.finish(run);
      expect(await b.advance(claimed!.run, { phase: 'bookmarks', after: 'list-1 card-2' })).toBe(true);
      await b.release(claimed!.run);
      expect(await a.claimUnfinished('replica-a', LEASE)).toMatchObject({ phase: 'bookmarks', after: 'list-1 card-2', previousHolder: 'replica-b' });
    });

    it('a holder that keeps saying it is alive keeps its rebuild', async () => {
      const run = await a.begin('lost', 'replica-a');
      for (let i = 0; i < 4; i++) {
        store.advanceClock(LEASE / 2);
        expect(await a.keepAlive(run)).toBe(true);
        expect(await b.claimUnfinished('replica-b', LEASE)).toBeUndefined();
      }
      store.advanceClock(LEASE);
      expect(await b.claimUnfinished('replica-b', LEASE)).toMatchObject({ phase: 'cards', previousHolder: 'replica-a' });
    });

    it('a released rebuild is claimed at once, from the start when nothing was recorded', async () => {
      const run = await a.begin('lost', 'replica-a');
      await a.release(run);
      const claimed = await b.claimUnfinished('replica-b', LEASE);
      expect(claimed).toMatchObject({ phase: 'cards', reason: 'lost' });
      expect(claimed!.after).toBeUndefined();
    });

    it('a finished rebuild is not claimed', async () => {
      const run = await a.begin('lost', 'replica-a');
      expect(await a.advance(run, { phase: 'bookmarks', after: 'x y' })).toBe(true);
      await a.finish(run);
      expect(await b.claimUnfinished('replica-b', 0)).toBeUndefined();
    });

    it('begin again records a new rebuild from the start: the older run moves nothing and its finish leaves the new one', async () => {
      const older = await a.begin('first', 'replica-a');
      expect(await a.advance(older, { phase: 'bookmarks', after: 'list-9 card-9' })).toBe(true);
      const newer = await b.begin('lost again', 'replica-b');
      expect(newer).not.toBe(older);
      expect(await a.advance(older, { phase: 'bookmarks', after: 'list-9 card-10' })).toBe(false);
      await a.finish(older);
      await b.release(newer);
      const claimed = await a.claimUnfinished('replica-a', LEASE);
      expect(claimed).toMatchObject({ phase: 'cards', reason: 'lost again', previousHolder: 'replica-b' });
      expect(claimed!.after).toBeUndefined();
    });

    it('of claimers racing for one unfinished rebuild, exactly one gets it', async () => {
      for (let round = 0; round < 5; round++) {
        const run = await a.begin(`lost ${round}`, 'gone');
        expect(await a.advance(run, { phase: 'cards', after: `card-${round}` })).toBe(true);
        await a.release(run);
        const claims = await Promise.all([a.claimUnfinished('replica-a', LEASE), b.claimUnfinished('replica-b', LEASE), a.claimUnfinished('replica-c', LEASE), b.claimUnfinished('replica-d', LEASE)]);
        const won = claims.filter((c) => c !== undefined);
        expect(won).toHaveLength(1);
        expect(won[0]).toMatchObject({ phase: 'cards', after: `card-${round}`, reason: `lost ${round}`, previousHolder: 'gone' });
      }
    });
  });
}
