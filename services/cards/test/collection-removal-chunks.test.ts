import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { BOOKMARK_SWEEP_CHUNK, SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection, nextTime } from './builders';
import { testTempDir } from '../../../test/support/cleanup';

/**
 * Deleting a collection of many cards on SQLite: the service's thread is shared by every request (better-sqlite3 is
 * synchronous; the all-in-one runs every service on it). In one transaction the bookmarks of a collection of 10,000
 * cards held it ~0.5 s, and every other request waited (docs/benchmarks.md, "Big accounts"). The collection goes at
 * once; its bookmarks go a chunk at a time, and other work is done between the chunks.
 */
async function collectionOf(db: ReturnType<typeof openCardsDatabase>, n: number) {
  const cards = new SqliteCardRepository(db);
  const collections = new SqliteCollectionRepository(db);
  const owner = aCard().build().authorId;
  const collection = aCollection().by(owner).build();
  const other = aCollection().by(owner).build();
  await collections.insert(collection, []);
  await collections.insert(other, []);
  const root = aCard().by(owner).build();
  await cards.insert(root, fingerprintOf(root.content), []);
  const cardIds = [root.id];
  db.exec('BEGIN');
  for (let i = 0; i < n; i++) {
    // Every tenth card a collision of the root (its group's marks were what the delete spent its time on).
    const card = i % 10 === 0 ? aCard().collisionOf(root.id).build() : aCard().by(owner).build();
    await cards.insert(card, fingerprintOf(card.content), []);
    cardIds.push(card.id);
  }
  for (const id of cardIds) await collections.addBookmark(collection.id, id, nextTime(), []);
  db.exec('COMMIT');
  await collections.addBookmark(other.id, root.id, nextTime(), []);
  await collections.addBookmark(other.id, cardIds[5]!, nextTime(), []);
  return { collections, collection, other, cardIds };
}

const bookmarksOf = (db: ReturnType<typeof openCardsDatabase>, collectionId: string) =>
  (db.prepare('SELECT count(*) AS n FROM bookmarks WHERE collection_id = ?').get(collectionId) as { n: number }).n;

describe('SQLite deletes a collection of many cards a chunk at a time', () => {
  it('the collection is gone at once; other work runs between the chunks of its bookmarks; the answer comes once they are all gone', async () => {
    const db = openCardsDatabase(':memory:');
    const { collections, collection, other, cardIds } = await collectionOf(db, 3 * BOOKMARK_SWEEP_CHUNK + 20);
    expect(await collections.countVisibleBookmarkedRoots(other.id, null)).toBe(2);
    let settled = false;
    const removal = collections.remove(collection.id, []).then((removed) => ((settled = true), removed));
    // Work of other requests, done while the removal is under way: each turn sees the collection gone, some of its
    // bookmarks still there. Before, the removal had finished before any other work ran.
    const seenDuring: number[] = [];
    while (!settled) {
      await new Promise((resolve) => setImmediate(resolve));
      if (settled) break;
      expect(await collections.findById(collection.id)).toBeNull();
      seenDuring.push(bookmarksOf(db, collection.id));
    }
    expect(await removal).toBe(true);
    expect(seenDuring.length).toBeGreaterThanOrEqual(2);
    expect(seenDuring[0]).toBeGreaterThan(0);
    expect(seenDuring[0]).toBeLessThan(cardIds.length);
    expect(bookmarksOf(db, collection.id)).toBe(0);
    expect(db.prepare('SELECT count(*) AS n FROM collection_bookmark_sweeps').get()).toEqual({ n: 0 });
    // Another collection holding some of the same cards is untouched, its kept counts right.
    expect(await collections.bookmarkedCardIds(other.id)).toEqual([cardIds[0], cardIds[5]]);
    expect(await collections.countVisibleBookmarkedRoots(other.id, null)).toBe(2);
    expect(await collections.remove(collection.id, [])).toBe(false);
    db.close();
  });

  it('a chunk refused (the store busy past its wait) fails neither the removal nor the sweep, which is tried again', async () => {
    const db = openCardsDatabase(':memory:');
    const { collections, collection, other } = await collectionOf(db, 2 * BOOKMARK_SWEEP_CHUNK + 20);
    // The removal's own transaction goes through; its first chunk of bookmarks is refused as SQLite refuses a write
    // when another connection (a backup holding every store) keeps the lock past busy_timeout.
    const transaction = db.transaction.bind(db);
    let calls = 0;
    db.transaction = ((fn: Parameters<typeof transaction>[0]) => {
      const run = transaction(fn);
      return (...args: unknown[]) => {
        if (++calls === 2) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
        return (run as (...a: unknown[]) => unknown)(...args);
      };
    }) as typeof db.transaction;
    // Before: rejected with 'database is locked' (the caller answered an error for a collection already gone), and the
    // bookmarks stayed until the next start.
    expect(await collections.remove(collection.id, [])).toBe(true);
    expect(await collections.findById(collection.id)).toBeNull();
    for (let turns = 0; bookmarksOf(db, collection.id) > 0 && turns < 600; turns++) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(bookmarksOf(db, collection.id)).toBe(0);
    expect(db.prepare('SELECT count(*) AS n FROM collection_bookmark_sweeps').get()).toEqual({ n: 0 });
    expect(await collections.bookmarkedCardIds(other.id)).toHaveLength(2);
    db.close();
  });

  it('a sweep cut short by a stop is finished when the store is next opened', async () => {
    const dir = testTempDir('cards-sweep-');
    try {
      const path = join(dir, 'cards.db');
      const db = openCardsDatabase(path);
      const { collection, other } = await collectionOf(db, BOOKMARK_SWEEP_CHUNK + 5);
      // As a stop leaves it after the collection's row went and before its bookmarks did.
      db.transaction(() => {
        db.prepare('DELETE FROM collections WHERE id = ?').run(collection.id);
        db.prepare('INSERT INTO collection_bookmark_sweeps (collection_id) VALUES (?)').run(collection.id);
      })();
      db.close();
      const reopened = openCardsDatabase(path);
      const collections = new SqliteCollectionRepository(reopened);
      for (let turns = 0; bookmarksOf(reopened, collection.id) > 0 && turns < 1000; turns++) await new Promise((resolve) => setImmediate(resolve));
      expect(bookmarksOf(reopened, collection.id)).toBe(0);
      for (let turns = 0; turns < 5; turns++) await new Promise((resolve) => setImmediate(resolve));
      expect(reopened.prepare('SELECT count(*) AS n FROM collection_bookmark_sweeps').get()).toEqual({ n: 0 });
      expect(await collections.bookmarkedCardIds(other.id)).toHaveLength(2);
      reopened.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
