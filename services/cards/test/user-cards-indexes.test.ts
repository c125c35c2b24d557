import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { connectMongo, createLogger, openSqlite } from '@cards/platform';
import { openMongoCardsDatabase } from '../src/adapters/mongo';
import { CARDS_MIGRATIONS, openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { AUTHOR_CARDS_SQL, SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { fingerprintOf } from '../src/domain/rules';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { aCard } from './builders';
import { testTempDir } from '../../../test/support/cleanup';

/**
 * A user's cards page (GET /api/user/:id/:page) for anyone but its owner lists and counts the author's public cards.
 * Read through the index of all the author's cards, each page and the count read every card row of the author to test
 * `private`: for an author of 20,000 cards ~50 ms each for the last page and for the count (docs/benchmarks.md, "Big
 * accounts"). The public cards have their own index, and the totals are kept.
 */
async function authorWithCards(cards: SqliteCardRepository, n: number): Promise<string> {
  const author = randomUUID();
  for (let i = 0; i < n; i++) {
    const card = i % 3 === 2 ? aCard().by(author).private().build() : aCard().by(author).build();
    await cards.insert(card, fingerprintOf(card.content), []);
  }
  return author;
}

describe("SQLite reads a user's cards page from indexes and kept totals", () => {
  it("anyone's page walks the public cards' own index (no row read to test privacy), the owner's all cards', with or without statistics; the totals are one row", async () => {
    const db = openCardsDatabase(':memory:');
    const cards = new SqliteCardRepository(db);
    const author = await authorWithCards(cards, 30);
    await authorWithCards(cards, 5);
    const plan = (sql: string, ...args: unknown[]) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((s) => s.detail);
    const expectIndexed = () => {
      // Before: 'SEARCH cards USING INDEX cards_author_updated (author_id=?)', testing private on each card row.
      expect(plan(AUTHOR_CARDS_SQL.public, author, 25, 100)).toEqual(['SEARCH cards USING INDEX cards_author_public_updated (author_id=?)']);
      expect(plan(AUTHOR_CARDS_SQL.all, author, 25, 100)).toEqual(['SEARCH cards USING INDEX cards_author_updated (author_id=?)']);
      // Before: a count over the author's cards (of their rows, for anyone's count).
      expect(plan(AUTHOR_CARDS_SQL.count, author)).toEqual(['SEARCH author_card_counts USING PRIMARY KEY (author_id=?)']);
    };
    expectIndexed();
    db.exec('ANALYZE');
    expectIndexed();
    expect(await cards.countByAuthor(author, true)).toBe(30);
    expect(await cards.countByAuthor(author, false)).toBe(20);
    expect((await cards.listByAuthor(author, false, 18, 25)).every((c) => !c.private)).toBe(true);
    expect(await cards.listByAuthor(author, false, 18, 25)).toHaveLength(2);
    db.close();
  });

  it('a store made before gets the totals of the cards it holds, kept from then on', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const before = openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('author_card_counts'))));
      const oldCards = new SqliteCardRepository(before);
      const author = randomUUID();
      const stored = [aCard().by(author).build(), aCard().by(author).private().build(), aCard().by(author).build()];
      for (const card of stored) await oldCards.insert(card, fingerprintOf(card.content), []);
      before.close();
      const db = openCardsDatabase(path);
      const cards = new SqliteCardRepository(db);
      expect([await cards.countByAuthor(author, true), await cards.countByAuthor(author, false)]).toEqual([3, 2]);
      await cards.remove(stored[0]!.id, [], []);
      expect([await cards.countByAuthor(author, true), await cards.countByAuthor(author, false)]).toEqual([2, 1]);
      expect((await cards.listByAuthor(author, false, 0, 25)).map((c) => c.id)).toEqual([stored[2]!.id]);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

if (skipReason) {
  console.warn(`SKIPPED user cards indexes on MongoDB: ${skipReason}`);
  it.skip(`user cards indexes on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describe("MongoDB reads a user's cards page for anyone from an index on author and privacy", () => {
    it('has an index on authorId, private, updatedAt, _id (the filter and order of the page for anyone, and its count)', async () => {
      const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger: createLogger('user-cards-test', 'fatal') });
      try {
        const database = await openMongoCardsDatabase(connection);
        const keys = (await database.cards.listIndexes().toArray()).map((i) => JSON.stringify(i.key));
        // Before: only { authorId, updatedAt, _id }, so anyone's page and count fetched every card of the author to test private.
        expect(keys).toContain(JSON.stringify({ authorId: 1, private: 1, updatedAt: -1, _id: 1 }));
        if (external) {
          const author = randomUUID();
          const explain = (await database.cards.find({ authorId: author, private: false }).sort({ updatedAt: -1, _id: 1 }).skip(100).limit(25).explain('queryPlanner')) as {
            queryPlanner: { winningPlan: unknown };
          };
          expect(JSON.stringify(explain.queryPlanner.winningPlan)).toContain('cards_author_visibility');
        }
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });
  });
}
