import { join } from 'node:path';
import { createLogger, OutboxRelay, SqliteEventLog, Topics, type Subscription } from '@cards/platform';
import { events } from '@cards/proto';
import { answerSearchIndexRebuildRequests, type SearchIndexRebuilds } from '../../services/cards/src/application/search-index-rebuild-requests';
import { openCardsStore, type CardsStore } from '../../services/cards/src/cards-store';
import type { EventOutbox } from '../../services/cards/src/domain/ports';
import { fingerprintOf } from '../../services/cards/src/domain/rules';
import { aCard, aCollection, nextTime } from '../../services/cards/test/builders';
import { SqliteCardIndex } from '../../services/search/src/adapters/sqlite/sqlite-card-index';
import { IndexProjector } from '../../services/search/src/application/index-projector';
import type { Embedder } from '../../services/search/src/domain/ports';
import { testTempDir } from '../support/cleanup';

/**
 * A search index rebuild cut short by a stop (SIGTERM during a rolling update, kill -9, OOM) resumes where it stopped
 * when the cards service starts again: before, the index then held some cards, search's next start did not ask again,
 * and the rest stayed unfindable until an operator ran rebuild-search-index. The cards service's parts on its real
 * SQLite store under DATA_DIR, the event log, and search's own projection into its SQLite index, in this process.
 */

const lines: { level: number; msg: string }[] = [];
const logger = createLogger('cards', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) });
const quiet = createLogger('search', 'fatal');

/** Every text along one axis: this test looks at which cards search holds, not how they rank. */
const embedder: Embedder = {
  id: 'one-axis',
  dimensions: 3,
  ready: async () => undefined,
  embed: async (texts) => texts.map(() => new Float32Array([1, 0, 0])),
  orderAware: true,
  duplicateThreshold: () => 1,
};

const until = async (what: string, done: () => Promise<boolean>) => {
  for (let i = 0; i < 500; i++) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
};

/** The cards service's parts that matter here, on DATA_DIR's store: the relay, and the answer to search's requests. */
async function startCardsParts(dataDir: string, log: SqliteEventLog, outbox: (store: CardsStore) => EventOutbox = (s) => s.eventOutbox) {
  const store = await openCardsStore({ DATA_DIR: dataDir }, logger);
  const relay = new OutboxRelay(store.outbox, log, logger, { name: 'cards', intervalMs: 20 });
  relay.start();
  const rebuilds: SearchIndexRebuilds = await answerSearchIndexRebuildRequests(log, {
    cards: store.cards,
    collections: store.collections,
    outbox: outbox(store),
    progress: store.searchIndexRebuild,
    logger,
    batchSize: 2,
    pollMs: 10,
  });
  return {
    store,
    relay,
    rebuilds,
    /** As the service stops (SIGTERM): the rebuild ends before its next batch, what was queued is published. */
    async stop() {
      await rebuilds.close();
      await relay.flush();
      await relay.stop();
      await store.close();
    },
  };
}

// Batches appended before the stop, what search then holds, and where the next start resumes.
describe.each([
  ['in the cards', 2, { cards: 4, bookmarks: 0 }, 'cards after'],
  ['in the bookmarks', 5, { cards: 7, bookmarks: 2 }, 'bookmarks after'],
])('a search index rebuild stopped %s', (_where, batchesBeforeStop, expectedFirst, resumedAt) => {
  let dataDir: string;
  let log: SqliteEventLog;
  let index: SqliteCardIndex;
  let indexing: Subscription;

  beforeEach(async () => {
    lines.length = 0;
    dataDir = testTempDir('cards-rebuild-resumed-');
    log = new SqliteEventLog({ path: join(dataDir, 'events.db'), logger: quiet, pollIntervalMs: 20 });
    index = new SqliteCardIndex({ path: join(dataDir, 'index.db'), dimensions: embedder.dimensions, embedderId: embedder.id });
    const projector = new IndexProjector(index, embedder, log, quiet);
    indexing = await log.subscribe({ group: 'search-index', topics: [Topics.card, Topics.bookmark], handler: (e) => projector.handle(e), batchHandler: (es) => projector.handleBatch(es) });
  });

  afterEach(async () => {
    await indexing.close();
    await index.close();
    await log.close();
  });

  it('is resumed where it stopped by the next start: search ends up holding every card and bookmark', async () => {
    // 7 cards and 3 bookmarks the index lost: 4 batches of cards, then 2 of bookmarks.
    const setup = await openCardsStore({ DATA_DIR: dataDir }, logger);
    const cards: string[] = [];
    for (let i = 0; i < 7; i++) {
      const card = aCard().build();
      await setup.cards.insert(card, fingerprintOf(card.content), []);
      cards.push(card.id);
    }
    const list = aCollection().build();
    await setup.collections.insert(list, []);
    const bookmarked = [cards[1]!, cards[3]!, cards[6]!];
    for (const card of bookmarked) expect(await setup.collections.addBookmark(list.id, card, nextTime(), [])).toBe('added');
    await setup.close();
    const holds = async () => {
      const held = await Promise.all(cards.map((id) => index.get(id)));
      return { cards: held.filter((c) => c !== undefined).length, bookmarks: held.filter((c) => c?.collectionIds.includes(list.id)).length };
    };

    // The first start: the outbox takes `batchesBeforeStop` batches, then looks full (its relay slow): the service is
    // stopped while the rebuild waits for room.
    let appended = 0;
    const first = await startCardsParts(dataDir, log, (store) => ({
      append: async (e) => {
        appended++;
        await store.eventOutbox.append(e);
      },
      pending: async () => (appended >= batchesBeforeStop ? Number.MAX_SAFE_INTEGER : store.eventOutbox.pending()),
    }));
    await log.publish([{ topic: Topics.indexRebuild, key: 'cards', payload: events.SearchIndexRebuildRequested.encode({ eventId: 'lost', occurredAt: new Date(), reason: 'lost at start' }).finish() }]);
    await until('the first batches to be appended', async () => appended >= batchesBeforeStop);
    await first.stop();
    await until('search to index the first batches', async () => JSON.stringify(await holds()) === JSON.stringify(expectedFirst));
    // Cut short: search lacks some of them.
    expect(await holds()).toEqual(expectedFirst);

    // The next start, no new request: the rebuild is resumed where it stopped.
    const second = await startCardsParts(dataDir, log);
    try {
      await second.rebuilds.idle();
      await until('search to hold every card and bookmark', async () => JSON.stringify(await holds()) === JSON.stringify({ cards: 7, bookmarks: 3 }));
      expect(await second.store.searchIndexRebuild.claimUnfinished('test', 0)).toBeUndefined();
    } finally {
      await second.stop();
    }
    expect(await holds()).toEqual({ cards: 7, bookmarks: 3 });
    expect(lines.filter((l) => l.msg.startsWith('resuming the search index rebuild cut short at')).map((l) => l.msg)).toEqual([expect.stringContaining(`resuming the search index rebuild cut short at ${resumedAt} `)]);
  });
});
