import { randomBytes, randomUUID } from 'node:crypto';
import { connectMongo, createLogger } from '@cards/platform';
import { openMongoCardsDatabase } from '../src/adapters/mongo';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { RANKED_AUTHORS_SQL, SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { fingerprintOf } from '../src/domain/rules';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { aCard, nextTime } from './builders';

/**
 * GET /api/top_users/:page reads a page of ranked authors, counts them, and first looks for ranked authors without a
 * join date. Each read must walk an index of ranked authors in its order, not scan or sort every author: at 20,000
 * ranked authors the last page took 16 ms in SQLite before (docs/benchmarks.md, "Read routes at scale").
 */
describe('SQLite top users read ranked authors from their indexes', () => {
  it('a page in ranking order, the count and the authors without a join date use an index, with or without statistics', async () => {
    const db = openCardsDatabase(':memory:');
    const [cards, votes] = [new SqliteCardRepository(db), new SqliteVoteRepository(db)];
    const authors: string[] = [];
    for (let i = 0; i < 40; i++) {
      const author = randomUUID();
      authors.push(author);
      const card = aCard().by(author).build();
      await cards.insert(card, fingerprintOf(card.content), []);
      for (let v = 0; v <= i % 4; v++) await votes.upsert(randomUUID(), card.id, true, nextTime(), randomUUID());
    }
    await votes.recordJoinDates(new Map(authors.slice(0, 30).map((a, i) => [a, new Date(Date.UTC(2026, 0, 1 + (i % 7)))])));
    const plan = (sql: string, ...args: unknown[]) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((s) => s.detail);
    const expectIndexed = () => {
      // Before: 'SCAN author_scores USING INDEX author_scores_public_rank', 'USE TEMP B-TREE FOR LAST 3 TERMS OF ORDER BY'.
      expect(plan(RANKED_AUTHORS_SQL.page, 25, 500)).toEqual([expect.stringMatching(/^SCAN author_scores USING (COVERING )?INDEX author_scores_ranking$/)]);
      // Before: 'SCAN author_scores' (every author, ranked or not, on every request).
      expect(plan(RANKED_AUTHORS_SQL.withoutJoinDate, 500)).toEqual([expect.stringMatching(/^SCAN author_scores USING (COVERING )?INDEX author_scores_join_unknown$/)]);
    };
    expectIndexed();
    // The count is kept (kept_counts): one row by its key. Before: 'SCAN author_scores USING COVERING INDEX
    // author_scores_ranking', every ranked author on every request (and 'SCAN author_scores' before that index).
    expect(plan(RANKED_AUTHORS_SQL.count)).toEqual([expect.stringMatching(/^SEARCH kept_counts USING PRIMARY KEY \(name=\?\)$/)]);
    db.exec('ANALYZE');
    expectIndexed();
    // The order is unchanged: score, then join date (unknown last), then id.
    const page = await votes.topAuthors(0, 40);
    const scores = page.map((a) => a.score);
    expect(scores).toEqual([...scores].sort((x, y) => y - x));
    expect(page).toHaveLength(40);
    expect((await votes.authorsWithoutJoinDate(100)).sort()).toEqual(authors.slice(30).sort());
    expect(await votes.countRankedAuthors()).toBe(40);
    expect(plan(RANKED_AUTHORS_SQL.count)).toEqual([expect.stringMatching(/^SEARCH kept_counts USING PRIMARY KEY \(name=\?\)$/)]);
    db.close();
  });
});

const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

if (skipReason) {
  console.warn(`SKIPPED top users indexes on MongoDB: ${skipReason}`);
  it.skip(`top users indexes on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describe('MongoDB top users indexes', () => {
    it('the authors without a join date are found by an index on joinUnknown then publicVotes, beside the ranking', async () => {
      const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger: createLogger('top-users-test', 'fatal') });
      try {
        const database = await openMongoCardsDatabase(connection);
        const keys = (await database.authorScores.listIndexes().toArray()).map((i) => JSON.stringify(i.key));
        // Before: only the ranking (publicScore first) and publicVotes, so {joinUnknown: true, publicVotes: {$gt: 0}} fetched every ranked author.
        expect(keys).toEqual(expect.arrayContaining([JSON.stringify({ joinUnknown: 1, publicVotes: 1 }), JSON.stringify({ publicScore: -1, joinUnknown: 1, joinedAt: 1, _id: 1 })]));
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });

    const explainSkip = external ? undefined : 'mongo-java-server has no explain command; set TEST_MONGO_URL to a real MongoDB';
    (explainSkip ? it.skip : it)(`the top users' reads walk an index, never a collection scan or an in-memory sort${explainSkip ? ` (${explainSkip})` : ''}`, async () => {
      const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger: createLogger('top-users-test', 'fatal') });
      try {
        const database = await openMongoCardsDatabase(connection);
        await database.authorScores.insertMany(
          Array.from({ length: 300 }, (_, i) => ({ _id: randomUUID(), publicScore: i % 9, publicVotes: i % 5, joinUnknown: i % 4 === 0, joinedAt: i % 4 === 0 ? null : new Date(Date.UTC(2026, 0, 1 + (i % 20))) })) as never[],
        );
        const stagesOf = async (command: Record<string, unknown>) => {
          const stages: string[] = [];
          const indexes: string[] = [];
          const walk = (node: unknown): void => {
            if (Array.isArray(node)) return node.forEach(walk);
            if (node === null || typeof node !== 'object') return;
            const o = node as Record<string, unknown>;
            if (typeof o.stage === 'string') stages.push(o.stage);
            if (typeof o.indexName === 'string') indexes.push(o.indexName);
            Object.values(o).forEach(walk);
          };
          walk(((await connection.db.command({ explain: command, verbosity: 'queryPlanner' })).queryPlanner as Record<string, unknown>).winningPlan);
          return { indexes: [...new Set(indexes)], collectionScan: stages.includes('COLLSCAN'), sort: stages.includes('SORT') };
        };
        expect(await stagesOf({ find: 'author_scores', filter: { joinUnknown: true, publicVotes: { $gt: 0 } }, projection: { _id: 1 }, limit: 500 })).toEqual({ indexes: ['author_scores_join_unknown'], collectionScan: false, sort: false });
        expect(await stagesOf({ find: 'author_scores', filter: { publicVotes: { $gt: 0 } }, projection: { publicScore: 1 }, sort: { publicScore: -1, joinUnknown: 1, joinedAt: 1, _id: 1 }, skip: 200, limit: 25 })).toEqual({ indexes: ['author_scores_public_rank'], collectionScan: false, sort: false });
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });
  });
}
