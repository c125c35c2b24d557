import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, SqliteEventLog, SqliteOutboxStore, Topics } from '@cards/platform';
import { events } from '@cards/proto';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteEventOutbox } from '../src/adapters/sqlite/sqlite-event-outbox';
import { answerSearchIndexRebuildRequests, SEARCH_INDEX_REBUILD_GROUP } from '../src/application/search-index-rebuild-requests';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection, nextTime } from './builders';

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

    const rebuilds = await answerSearchIndexRebuildRequests(log, { cards, collections, outbox: new SqliteEventOutbox(db), logger, batchSize: 2 });
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
    const rebuilds = await answerSearchIndexRebuildRequests(log, { cards, collections: new SqliteCollectionRepository(db), outbox: new SqliteEventOutbox(db), logger, batchSize: 2, maxPending: 2, pollMs: 10 });
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
      expect(lines.filter((l) => l.level === 40).map((l) => l.msg)).toEqual(['rebuilding the search index stopped with the service before the end; run rebuild-search-index to finish it']);
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
    const rebuilds = await answerSearchIndexRebuildRequests(log, { cards, collections: new SqliteCollectionRepository(db), outbox: new SqliteEventOutbox(db), logger, batchSize: 2, maxPending: 2, pollMs: 10 });
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
});
