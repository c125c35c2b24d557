import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectMongo, createLogger } from '@cards/platform';
import { MongoSearchIndexRebuildProgress, type SearchIndexRebuildDocument } from '../src/adapters/mongo/mongo-search-index-rebuild-progress';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteSearchIndexRebuildProgress } from '../src/adapters/sqlite/sqlite-search-index-rebuild-progress';
import { startMongoSync } from '../../../test/engines/mongo';
import { engineForSuite } from '../../../test/engines/suite';
import { describeSearchIndexRebuildProgressContract } from './search-index-rebuild-progress.contract';

const logger = createLogger('cards-rebuild-progress-test', process.env.LOG_LEVEL ?? 'fatal');

/** A clock both handles read, moved by the test. */
function testClock() {
  let at = Date.parse('2026-03-01T12:00:00.000Z');
  return { now: () => new Date(at), advance: (ms: number) => void (at += ms) };
}

// One SQLite file opened twice: the service and the operator's command share it from two processes.
describeSearchIndexRebuildProgressContract('SQLite, two connections', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cards-rebuild-progress-'));
  const dbs = [openCardsDatabase(join(dir, 'cards.db')), openCardsDatabase(join(dir, 'cards.db'))];
  const clock = testClock();
  return {
    handles: [new SqliteSearchIndexRebuildProgress(dbs[0]!, clock.now), new SqliteSearchIndexRebuildProgress(dbs[1]!, clock.now)],
    advanceClock: clock.advance,
    close: async () => {
      for (const db of dbs) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);
if (skipReason) {
  console.warn(`SKIPPED SearchIndexRebuildProgress on MongoDB: ${skipReason}`);
  it.skip(`SearchIndexRebuildProgress on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  // Two connections to one database, as two cards replicas have.
  describeSearchIndexRebuildProgressContract(external ? 'MongoDB (TEST_MONGO_URL), two connections' : 'MongoDB (mongo-java-server), two connections', async () => {
    const database = `cards_test_${randomBytes(4).toString('hex')}`;
    const connections = [await connectMongo({ url: engine!.url, database, logger }), await connectMongo({ url: engine!.url, database, logger })];
    const clock = testClock();
    const handle = (i: number) => new MongoSearchIndexRebuildProgress(connections[i]!.db.collection<SearchIndexRebuildDocument>('search_index_rebuild'), clock.now);
    return {
      handles: [handle(0), handle(1)],
      advanceClock: clock.advance,
      close: async () => {
        await connections[0]!.db.dropDatabase().catch(() => undefined);
        for (const c of connections) await c.close();
      },
    };
  });
}
