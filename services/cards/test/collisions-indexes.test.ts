import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { connectMongo, createLogger, openSqlite } from '@cards/platform';
import { openMongoCardsDatabase } from '../src/adapters/mongo';
import { MongoCardRepository } from '../src/adapters/mongo/mongo-card-repository';
import { CARDS_MIGRATIONS, openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { COLLISIONS_SQL, SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import type { Card } from '../src/domain/model';
import type { CardRepository } from '../src/domain/ports';
import { fingerprintOf } from '../src/domain/rules';
import { engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { aCard } from './builders';
import { testTempDir } from '../../../test/support/cleanup';

/**
 * Reading a card's collisions (GET /api/card/:id, card-groups.ts) reads a page of one root's collisions in their order,
 * created_at then id. It must walk an index in that order from the page's position, not sort all of the root's
 * collisions for each page (SQLite: 'USE TEMP B-TREE FOR ORDER BY', 0.9 ms for 100 collisions, docs/benchmarks.md).
 */

/** A root and `n` collisions of it, some created at the same time (the id orders those). */
async function rootWithCollisions(cards: Pick<CardRepository, 'insert'>, n: number): Promise<{ root: Card; collisions: Card[] }> {
  const root = aCard().build();
  await cards.insert(root, fingerprintOf(root.content), []);
  const collisions: Card[] = [];
  for (let i = 0; i < n; i++) {
    const built = aCard().collisionOf(root.id).build();
    const card = i % 3 === 1 ? { ...built, createdAt: collisions[i - 1]!.createdAt, updatedAt: collisions[i - 1]!.createdAt } : built;
    await cards.insert(card, fingerprintOf(card.content), []);
    collisions.push(card);
  }
  collisions.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
  return { root, collisions };
}

/** Every collision of `rootId` read page by page. */
async function readInPages(cards: CardRepository, rootId: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  do {
    const page = await cards.findCollisionsPage([rootId], limit, after);
    ids.push(...page.items.map((c) => c.id));
    after = page.next;
  } while (after !== undefined);
  return ids;
}

describe('SQLite reads a card’s collisions from an index in their order', () => {
  it('a page, a later page and all of one root’s collisions walk cards_collisions_order without sorting, with or without statistics', async () => {
    const db = openCardsDatabase(':memory:');
    const cards = new SqliteCardRepository(db);
    const { root, collisions } = await rootWithCollisions(cards, 40);
    await rootWithCollisions(cards, 5);
    const plan = (sql: string, ...args: unknown[]) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((s) => s.detail);
    const expectIndexed = () => {
      // Before: 'SEARCH cards USING INDEX cards_collision_of (collision_of=?)', 'USE TEMP B-TREE FOR ORDER BY'.
      expect(plan(COLLISIONS_SQL.page(1, false), root.id, 11)).toEqual(['SEARCH cards USING INDEX cards_collisions_order (collision_of=?)']);
      // A later page starts at its position in the index (before, the position was tested on each of the root's collisions).
      expect(plan(COLLISIONS_SQL.page(1, true), root.id, collisions[9]!.createdAt.toISOString(), collisions[9]!.id, 11)).toEqual([
        'SEARCH cards USING INDEX cards_collisions_order (collision_of=? AND (created_at,id)>(?,?))',
      ]);
      expect(plan(COLLISIONS_SQL.all(1), root.id)).toEqual(['SEARCH cards USING INDEX cards_collisions_order (collision_of=?)']);
    };
    expectIndexed();
    db.exec('ANALYZE');
    expectIndexed();
    // The order is unchanged: created_at, then id.
    expect(await readInPages(cards, root.id, 7)).toEqual(collisions.map((c) => c.id));
    expect((await cards.findCollisions([root.id])).map((c) => c.id)).toEqual(collisions.map((c) => c.id));
    expect((db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'cards_collision%' ORDER BY name").all() as { name: string }[]).map((r) => r.name)).toEqual(['cards_collisions_order']);
    db.close();
  });

  it('a store made before gets the index (and loses cards_collision_of, which it covers); its collisions read as before', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const before = openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('cards_collisions_order'))));
      const { root, collisions } = await rootWithCollisions(new SqliteCardRepository(before), 12);
      before.close();
      const db = openCardsDatabase(path);
      const cards = new SqliteCardRepository(db);
      expect((db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'cards_collision%' ORDER BY name").all() as { name: string }[]).map((r) => r.name)).toEqual(['cards_collisions_order']);
      expect(await readInPages(cards, root.id, 5)).toEqual(collisions.map((c) => c.id));
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

if (skipReason) {
  console.warn(`SKIPPED collisions indexes on MongoDB: ${skipReason}`);
  it.skip(`collisions indexes on MongoDB (${skipReason.split('\n')[0]})`, () => undefined);
} else {
  describe('MongoDB reads a card’s collisions from an index in their order', () => {
    it('has an index on collisionOf, createdAt, _id (the order of findCollisionsPage) in place of the one on collisionOf alone', async () => {
      const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger: createLogger('collisions-test', 'fatal') });
      try {
        // A database of the previous version: its index on collisionOf alone is dropped when the repository opens.
        await connection.db.collection('cards').createIndex({ collisionOf: 1 }, { name: 'cards_collision_of' });
        const database = await openMongoCardsDatabase(connection);
        const indexes = await database.cards.listIndexes().toArray();
        const keys = indexes.map((i) => JSON.stringify(i.key));
        // Before: only { collisionOf: 1 } (and { collisionOf: 1, createdAt: -1 } for recent roots), so each page sorted all of a root's collisions.
        expect(keys).toContain(JSON.stringify({ collisionOf: 1, createdAt: 1, _id: 1 }));
        expect(indexes.map((i) => i.name)).not.toContain('cards_collision_of');
        const cards = new MongoCardRepository(database);
        const { root, collisions } = await rootWithCollisions(cards, 12);
        expect(await readInPages(cards, root.id, 5)).toEqual(collisions.map((c) => c.id));
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });

    const explainSkip = external ? undefined : 'mongo-java-server has no explain command; set TEST_MONGO_URL to a real MongoDB';
    (explainSkip ? it.skip : it)(`a page of a card's collisions walks the index, never a collection scan or an in-memory sort${explainSkip ? ` (${explainSkip})` : ''}`, async () => {
      const connection = await connectMongo({ url: engine!.url, database: `cards_test_${randomBytes(4).toString('hex')}`, logger: createLogger('collisions-test', 'fatal') });
      try {
        const database = await openMongoCardsDatabase(connection);
        const root = randomUUID();
        await database.cards.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: randomUUID(), collisionOf: i % 4 === 0 ? null : i % 4 === 1 ? root : randomUUID(), createdAt: new Date(Date.UTC(2026, 0, 1, 0, i % 50)) })) as never[]);
        const stages: string[] = [];
        const names: string[] = [];
        const walk = (node: unknown): void => {
          if (Array.isArray(node)) return node.forEach(walk);
          if (node === null || typeof node !== 'object') return;
          const o = node as Record<string, unknown>;
          if (typeof o.stage === 'string') stages.push(o.stage);
          if (typeof o.indexName === 'string') names.push(o.indexName);
          Object.values(o).forEach(walk);
        };
        const explained = await connection.db.command({ explain: { find: 'cards', filter: { collisionOf: { $in: [root] } }, sort: { createdAt: 1, _id: 1 }, limit: 11 }, verbosity: 'queryPlanner' });
        walk((explained.queryPlanner as Record<string, unknown>).winningPlan);
        expect({ indexes: [...new Set(names)], collectionScan: stages.includes('COLLSCAN'), sort: stages.includes('SORT') }).toEqual({ indexes: ['cards_collisions_order'], collectionScan: false, sort: false });
      } finally {
        await connection.db.dropDatabase().catch(() => undefined);
        await connection.close();
      }
    });
  });
}
