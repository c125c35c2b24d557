import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, SqliteEventLog, SqliteOutboxStore, Topics } from '@cards/platform';
import { events } from '@cards/proto';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteEventOutbox } from '../src/adapters/sqlite/sqlite-event-outbox';
import { SqliteSearchIndexRebuildProgress } from '../src/adapters/sqlite/sqlite-search-index-rebuild-progress';
import { answerSearchIndexRebuildRequests, SEARCH_INDEX_REBUILD_GROUP } from '../src/application/search-index-rebuild-requests';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection, nextTime } from './builders';
import type { SqliteDatabase } from '@cards/platform';

/**
 * The cards service's answer to search's request (search.index-rebuild.v1, published when search finds its index lost
 * at start): every card and bookmark told again through the outbox, as the rebuild-search-index command does.
 */
describe('search index rebuild requests', () => {
  let dir: string;
  let log: SqliteEventLog;
  let db: ReturnType<typeof openCardsDatabase>;
  const lines: { level: number; msg: string }[] = [];
  const logger = createLogger('cards', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) });
  const request = (reason: string) => ({ topic: Topics.indexRebuild, key: 'cards', payload: events.SearchIndexRebuildRequested.encode({ eventId: reason, occurredAt: new Date(), reason }).finish() });

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cards-rebuild-requests-'));
    log = new SqliteEventLog({ path: join(dir, 'events.db'), logger, pollIntervalMs: 20 });
    db = openCardsDatabase(':memory:');
    lines.length = 0;
  });
  afterEach(async () => {
    await log.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('tells search every card and bookmark again, by the command’s code, for a request published before cards started', async () => {
    const cards = new SqliteCardRepository(db);
    const collections = new SqliteCollectionRepository(db);
    const relayView = new SqliteOutboxStore(db);
    const stored = [aCard().build(), aCard().private().build(), aCard().build()];
    for (const card of stored) await cards.insert(card, fingerprintOf(card.content), []);
    const list = aCollection().build();
    await collections.insert(list, []);
    expect(await collections.addBookmark(list.id, stored[1]!.id, nextTime(), [])).toBe('added');
    expect(await relayView.count()).toBe(0);
    // Published while cards was down: the group reads it when it subscribes.
    await log.publish([request('lost at start')]);

    const rebuilds = await answerSearchIndexRebuildRequests(log, { cards, collections, outbox: new SqliteEventOutbox(db), progress: new SqliteSearchIndexRebuildProgress(db), logger, batchSize: 2 });
    try {
      for (let i = 0; i < 200 && !lines.some((l) => l.msg.includes('every card and bookmark queued')); i++) await new Promise((r) => setTimeout(r, 20));
      await rebuilds.idle();
      const queued = await relayView.pending(100);
      expect(queued.map((e) => e.topic)).toEqual([Topics.card, Topics.card, Topics.card, Topics.bookmark]);
      expect(queued.slice(0, 3).map((e) => e.key).sort()).toEqual(stored.map((c) => c.id).sort());
      expect(lines.filter((l) => l.level === 30).map((l) => l.msg)).toEqual([
        'search asked to rebuild its index (it was lost): telling it every card and bookmark again, as rebuild-search-index does',
        'rebuilding the search index: every card and bookmark queued for search',
      ]);
      expect(await log.hasCommitted(SEARCH_INDEX_REBUILD_GROUP, [Topics.indexRebuild])).toBe(true);
    } finally {
      await rebuilds.close();
    }
  });

  it('a request while a rebuild runs schedules one more rebuild after it; closing ends the rebuild before its next batch, and not the one more', async () => {
    const cards = new SqliteCardRepository(db);
    for (let i = 0; i < 4; i++) {
      const card = aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
    }
    const relayView = new SqliteOutboxStore(db);
    // The outbox is full (no relay here): the rebuild waits for room after its first batch.
    const rebuilds = await answerSearchIndexRebuildRequests(log, { cards, collections: new SqliteCollectionRepository(db), outbox: new SqliteEventOutbox(db), progress: new SqliteSearchIndexRebuildProgress(db), logger, batchSize: 2, maxPending: 2, pollMs: 10 });
    let closed = false;
    try {
      await log.publish([request('first')]);
      for (let i = 0; i < 200 && (await relayView.count()) < 2; i++) await new Promise((r) => setTimeout(r, 20));
      await log.publish([request('second')]);
      for (let i = 0; i < 200 && !lines.some((l) => l.msg.includes('one more rebuild after it')); i++) await new Promise((r) => setTimeout(r, 20));
      expect(lines.map((l) => l.msg).filter((m) => m.startsWith('search asked'))).toEqual([
        'search asked to rebuild its index (it was lost): telling it every card and bookmark again, as rebuild-search-index does',
        'search asked again to rebuild its index while a rebuild runs: one more rebuild after it',
      ]);
      await rebuilds.close();
      closed = true;
      expect(await relayView.count()).toBe(2);
      expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(['rebuilding the search index stopped with the service before the end; the next start resumes it where it stopped']);
    } finally {
      if (!closed) await rebuilds.close();
    }
  });

  it('requests while a rebuild runs (the index may have been lost again: batches already sent went into the lost one) make one more full rebuild after it, however many', async () => {
    const cards = new SqliteCardRepository(db);
    const stored = [];
    for (let i = 0; i < 4; i++) {
      const card = aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
      stored.push(card.id);
    }
    const relayView = new SqliteOutboxStore(db);
    // No relay until both requests came: the first rebuild waits for room after its first batch.
    const rebuilds = await answerSearchIndexRebuildRequests(log, { cards, collections: new SqliteCollectionRepository(db), outbox: new SqliteEventOutbox(db), progress: new SqliteSearchIndexRebuildProgress(db), logger, batchSize: 2, maxPending: 2, pollMs: 10 });
    try {
      await log.publish([request('first')]);
      for (let i = 0; i < 200 && (await relayView.count()) < 2; i++) await new Promise((r) => setTimeout(r, 20));
      await log.publish([request('second'), request('third')]);
      for (let i = 0; i < 200 && lines.filter((l) => l.msg.includes('one more rebuild after it')).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      // The relay: publishes (here, removes) what the rebuilds queue, until they are idle.
      const told: string[] = [];
      let idle = false;
      const idled = rebuilds.idle().then(() => (idle = true));
      const relay = async () => {
        const batch = await relayView.pending(100);
        told.push(...batch.map((e) => e.key));
        await relayView.remove(batch.map((e) => e.id));
      };
      while (!idle) {
        await relay();
        await new Promise((r) => setTimeout(r, 10));
      }
      await idled;
      await relay();
      // Every card told twice: the rebuild the requests came during, and one more after it (not one per request).
      expect(told.sort()).toEqual([...stored, ...stored].sort());
      expect(lines.filter((l) => l.level === 30).map((l) => l.msg)).toEqual([
        'search asked to rebuild its index (it was lost): telling it every card and bookmark again, as rebuild-search-index does',
        'search asked again to rebuild its index while a rebuild runs: one more rebuild after it',
        'search asked again to rebuild its index while a rebuild runs: one more rebuild after it',
        'rebuilding the search index: every card and bookmark queued for search',
        'search asked to rebuild its index (it was lost): telling it every card and bookmark again, as rebuild-search-index does',
        'rebuilding the search index: every card and bookmark queued for search',
      ]);
    } finally {
      await rebuilds.close();
    }
  });

  /** The relay as a test stand-in: publishes (here, removes) what is queued, noting the keys (card ids; bookmarks: the card's). */
  const relayOf = (database: SqliteDatabase, told: string[]) => async () => {
    const view = new SqliteOutboxStore(database);
    const batch = await view.pending(100);
    told.push(...batch.map((e) => (e.topic === Topics.bookmark ? `bookmark ${events.BookmarkEvent.decode(e.payload).cardId}` : e.key)));
    await view.remove(batch.map((e) => e.id));
  };
  const until = async (done: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 250 && !(await done()); i++) await new Promise((r) => setTimeout(r, 20));
  };
  /** Runs the relay stand-in until the instance is idle, then once more. */
  const relayUntilIdle = async (rebuilds: { idle(): Promise<void> }, relay: () => Promise<void>) => {
    let idle = false;
    const idled = rebuilds.idle().then(() => (idle = true));
    while (!idle) {
      await relay();
      await new Promise((r) => setTimeout(r, 10));
    }
    await idled;
    await relay();
  };
  const storeCards = async (database: SqliteDatabase, n: number) => {
    const cards = new SqliteCardRepository(database);
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const card = aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
      ids.push(card.id);
    }
    return ids.sort();
  };
  const instance = (database: SqliteDatabase, options: { maxPending?: number; holder?: string } = {}) =>
    answerSearchIndexRebuildRequests(log, {
      cards: new SqliteCardRepository(database),
      collections: new SqliteCollectionRepository(database),
      outbox: new SqliteEventOutbox(database),
      progress: new SqliteSearchIndexRebuildProgress(database),
      logger,
      batchSize: 2,
      pollMs: 10,
      ...options,
    });

  it('a rebuild stopped mid-way is resumed where it stopped by the next instance on the store: every card and bookmark told, the first part not again', async () => {
    const stored = await storeCards(db, 5);
    const collections = new SqliteCollectionRepository(db);
    const list = aCollection().build();
    await collections.insert(list, []);
    for (const card of [stored[0]!, stored[4]!]) expect(await collections.addBookmark(list.id, card, nextTime(), [])).toBe('added');
    const told: string[] = [];
    const relay = relayOf(db, told);

    // No relay yet: the rebuild appends its first batch, then waits for room; the service stops there.
    const first = await instance(db, { maxPending: 2 });
    await log.publish([request('lost at start')]);
    await until(async () => (await new SqliteOutboxStore(db).count()) >= 2);
    await first.close();
    await relay();
    expect(told).toEqual(stored.slice(0, 2));

    const second = await instance(db);
    try {
      await relayUntilIdle(second, relay);
    } finally {
      await second.close();
    }
    // Every card and bookmark told at least once; the second instance told only the rest.
    expect(told).toEqual([...stored, `bookmark ${stored[0]}`, `bookmark ${stored[4]}`]);
    expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual([
      'rebuilding the search index stopped with the service before the end; the next start resumes it where it stopped',
      `resuming the search index rebuild cut short at cards after ${stored[1]}`,
    ]);
    expect(await new SqliteSearchIndexRebuildProgress(db).claimUnfinished('test', 0)).toBeUndefined();
  });

  it('of two instances starting on a store with a rebuild cut short, one resumes it', async () => {
    const path = join(dir, 'cards.db');
    const dbs = [openCardsDatabase(path), openCardsDatabase(path)] as const;
    try {
      const stored = await storeCards(dbs[0], 6);
      const progress = new SqliteSearchIndexRebuildProgress(dbs[0]);
      // Cut short (kill -9) after telling the first four, long enough ago that its holder's lease ended.
      const run = await progress.begin('lost at start', 'a replica killed');
      await progress.advance(run, { phase: 'cards', after: stored[3] });
      await progress.release(run);
      const told: string[] = [];
      const [a, b] = await Promise.all([instance(dbs[0], { holder: 'replica-a' }), instance(dbs[1], { holder: 'replica-b' })]);
      try {
        await relayUntilIdle({ idle: async () => Promise.all([a.idle(), b.idle()]).then(() => undefined) }, relayOf(dbs[0], told));
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
      expect(told).toEqual(stored.slice(4));
      expect(lines.filter((l) => l.msg.startsWith('resuming the search index rebuild'))).toHaveLength(1);
    } finally {
      for (const d of dbs) d.close();
    }
  });

  it('a request while an unfinished rebuild is recorded (its holder alive elsewhere) starts it again from the start: the index was lost again', async () => {
    const stored = await storeCards(db, 3);
    const progress = new SqliteSearchIndexRebuildProgress(db);
    const other = await progress.begin('an earlier loss', 'another replica');
    await progress.advance(other, { phase: 'bookmarks' });
    const told: string[] = [];
    const rebuilds = await instance(db);
    try {
      // Its holder said it was alive just now: not taken over.
      expect(lines.filter((l) => l.msg.startsWith('resuming'))).toEqual([]);
      await log.publish([request('lost again')]);
      await until(() => lines.some((l) => l.msg.startsWith('search asked')));
      await relayUntilIdle(rebuilds, relayOf(db, told));
    } finally {
      await rebuilds.close();
    }
    expect(told).toEqual(stored);
    expect(await progress.keepAlive(other)).toBe(false);
    expect(await progress.claimUnfinished('test', 0)).toBeUndefined();
  });

  it('a rebuild begun again elsewhere (the operator’s command) stops here after the batch under way, leaving the command’s recorded', async () => {
    await storeCards(db, 8);
    const told: string[] = [];
    const rebuilds = await instance(db, { maxPending: 2 });
    try {
      await log.publish([request('lost at start')]);
      await until(async () => (await new SqliteOutboxStore(db).count()) >= 2);
      const progress = new SqliteSearchIndexRebuildProgress(db);
      await progress.begin('the rebuild-search-index command', 'rebuild-search-index@host');
      await relayUntilIdle(rebuilds, relayOf(db, told));
      expect(told).toHaveLength(4);
      expect(lines.map((l) => l.msg)).toContain('rebuilding the search index: begun again or taken over elsewhere (the rebuild-search-index command, or another replica); stopping here');
      expect(await progress.claimUnfinished('test', 0)).toMatchObject({ reason: 'the rebuild-search-index command', phase: 'cards', previousHolder: 'rebuild-search-index@host' });
    } finally {
      await rebuilds.close();
    }
  });
});
