import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, SqliteOutboxStore } from '@cards/platform';
import { CARDS_MIGRATIONS, openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { RECENT_ROOTS_SQL, SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { ownerBookmarksOfCardsQuery, SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { describeCardRepositoryContract } from './card-repository.contract';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { describeCollectionRepositoryContract } from './collection-repository.contract';
import { describeFilePrivacyBackfillContract } from './file-privacy-backfill.contract';
import { describeFilePrivacyRoundTripContract } from './file-privacy-round-trip.contract';
import { SqliteOneTimeTasks } from '../src/adapters/sqlite/sqlite-one-time-tasks';
import { describeContentLockContract } from './content-lock.contract';
import { describeVoteRepositoryContract } from './vote-repository.contract';
import type { CardsStoreFactory } from './fixture';
import { aCard, aCollection, nextTime } from './builders';
import { fingerprintOf } from '../src/domain/rules';
import type { Card } from '../src/domain/model';
import { testTempDir } from '../../../test/support/cleanup';

const sqlite: CardsStoreFactory = async (options) => {
  const db = openCardsDatabase(':memory:');
  const outbox = new SqliteOutboxStore(db);
  const prepare = db.prepare.bind(db);
  const ports = () => ({
    cards: new SqliteCardRepository(db, options?.keyExpiry),
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db, options?.keyExpiry),
    oneTimeTasks: new SqliteOneTimeTasks(db),
    pendingEventTopics: async () => (await outbox.pending(1000)).map((e) => e.topic),
  });
  return {
    ...ports(),
    refuseBookmarkDeletes: () => {
      db.prepare = ((sql: string) => {
        if (/^\s*DELETE FROM bookmarks\b/i.test(sql)) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
        return prepare(sql);
      }) as typeof db.prepare;
    },
    reopen: async () => {
      db.prepare = prepare;
      return { ...ports(), close: async () => undefined };
    },
    close: async () => {
      db.close();
    },
  };
};

describeCardRepositoryContract('SQLite', sqlite);

describe('SQLite cards store migration', () => {
  it('counts the public votes of authors stored before they were counted apart', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const author = randomUUID();
      const old = openSqlite(path, CARDS_MIGRATIONS.slice(0, 2));
      const [open, hidden] = [aCard().by(author).build(), aCard().by(author).build()];
      const card = (c: typeof open, isPrivate: number, up: number, down: number) =>
        old.prepare(`INSERT INTO cards (id, author_id, content, card_html, link, private, tags, total_upvotes, total_downvotes, content_hash, created_at, updated_at)
                     VALUES (?, ?, ?, '', '', ?, '[]', ?, ?, 'h', '2026-01-01', '2026-01-01')`).run(c.id, author, c.content, isPrivate, up, down);
      card(open, 0, 3, 1);
      card(hidden, 1, 5, 2);
      old.prepare('INSERT INTO author_scores (user_id, upvotes, downvotes) VALUES (?, 8, 3)').run(author);
      old.close();
      const db = openCardsDatabase(path);
      const votes = new SqliteVoteRepository(db);
      expect(await votes.received(author)).toEqual({ upvotes: 3, downvotes: 1 });
      expect(await votes.received(author, true)).toEqual({ upvotes: 8, downvotes: 3 });
      expect(await votes.topAuthors(0, 10)).toEqual([{ userId: author, score: 2 }]);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('marks as hidden by their file only the cards stored before the mark that were made private by a private file at upload and never changed since', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const [owner, fileId] = [randomUUID(), randomUUID()];
      const old = openSqlite(path, CARDS_MIGRATIONS.slice(0, 3));
      const card = (isPrivate: number, idempotencyKey: string | null, updatedAt: string) => {
        const id = randomUUID();
        old.prepare(`INSERT INTO cards (id, author_id, content, card_html, link, private, tags, file_id, file_name, idempotency_key, content_hash, created_at, updated_at)
                     VALUES (?, ?, 'text', '', '', ?, '[]', ?, 'a.docx', ?, 'h', '2026-01-01T00:00:00.000Z', ?)`).run(id, owner, isPrivate, fileId, idempotencyKey, updatedAt);
        return id;
      };
      const ingestedPrivate = card(1, `${fileId}:0`, '2026-01-01T00:00:00.000Z');
      // Changed since (its owner's privacy choice, or the file's earlier privacy change: which one is unknown).
      const changedSince = card(1, `${fileId}:1`, '2026-01-02T00:00:00.000Z');
      const ingestedPublic = card(0, `${fileId}:2`, '2026-01-01T00:00:00.000Z');
      // Written by hand (no ingestion key), private from the start: its owner's choice.
      const byHand = card(1, null, '2026-01-01T00:00:00.000Z');
      old.close();
      const db = openCardsDatabase(path);
      const cards = new SqliteCardRepository(db);
      const marks = new Map((await cards.findByFile(fileId)).map((c) => [c.id, c.hiddenByFile]));
      expect(marks).toEqual(new Map([[ingestedPrivate, true], [changedSince, false], [ingestedPublic, false], [byHand, false]]));
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts the cards stored before the look-again mark as owing none', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const old = openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('look_again_owed'))));
      const [root, collision] = [randomUUID(), randomUUID()];
      const insert = old.prepare(`INSERT INTO cards (id, author_id, content, card_html, link, private, tags, collision_of, content_hash, created_at, updated_at)
                                  VALUES (?, ?, 'text', '', '', 0, '[]', ?, 'h', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`);
      insert.run(root, randomUUID(), null);
      insert.run(collision, randomUUID(), root);
      old.close();
      const db = openCardsDatabase(path);
      const cards = new SqliteCardRepository(db);
      expect(await cards.findWithLookAgainOwed(root)).toBeNull();
      expect(await cards.findCollisionsWithLookAgainOwed(10)).toEqual([]);
      expect((await cards.findById(collision))?.collisionOf).toBe(root);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("gives the bookmarks stored before owners were kept their collection's owner, and the lookup finds them", async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const old = openSqlite(path, CARDS_MIGRATIONS.slice(0, 5));
      const [owner, stranger] = [randomUUID(), randomUUID()];
      const [root, copy] = [aCard().build(), aCard().build()];
      for (const [card, rootId] of [[root, null], [copy, root.id]] as const) {
        old.prepare(`INSERT INTO cards (id, author_id, content, card_html, link, private, tags, collision_of, content_hash, created_at, updated_at)
                     VALUES (?, ?, ?, '', '', 0, '[]', ?, 'h', '2026-01-01', '2026-01-01')`).run(card.id, card.authorId, card.content, rootId);
      }
      const collection = (author: string, createdAt: string) => {
        const id = randomUUID();
        old.prepare(`INSERT INTO collections (id, author_id, name, description, is_public, created_at, updated_at) VALUES (?, ?, 'n', '', 1, ?, ?)`).run(id, author, createdAt, createdAt);
        return id;
      };
      const [older, newer, strangers] = [collection(owner, '2026-01-01T00:00:00.000Z'), collection(owner, '2026-01-02T00:00:00.000Z'), collection(stranger, '2026-01-01T00:00:00.000Z')];
      const bookmark = old.prepare(`INSERT INTO bookmarks (collection_id, card_id, ord, created_at) VALUES (?, ?, 1, '2026-01-03')`);
      for (const [collectionId, cardId] of [[newer, root.id], [older, copy.id], [strangers, root.id], [strangers, copy.id]]) bookmark.run(collectionId, cardId);
      old.close();
      const db = openCardsDatabase(path);
      const collections = new SqliteCollectionRepository(db);
      expect(await collections.collectionsOfOwnerHolding(owner, [root.id, copy.id])).toEqual([
        { cardId: copy.id, collectionId: older },
        { cardId: root.id, collectionId: newer },
      ]);
      expect(await collections.collectionsOfOwnerHolding(stranger, [root.id])).toEqual([{ cardId: root.id, collectionId: strangers }]);
      expect(await collections.collectionIdsHolding(root.id)).toEqual([newer, strangers].sort());
      expect(await collections.addBookmark(older, root.id, nextTime(), [])).toBe('added');
      expect(await collections.collectionsOfOwnerHolding(owner, [root.id])).toEqual([older, newer].map((collectionId) => ({ cardId: root.id, collectionId })));
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads the collections stored before idempotency keys as created without one, and keyed cards as keyed without a request fingerprint', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const old = openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('collections_idempotency'))));
      const [owner, id] = [randomUUID(), randomUUID()];
      old.prepare(`INSERT INTO collections (id, author_id, name, description, is_public, created_at, updated_at) VALUES (?, ?, 'n', '', 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`).run(id, owner);
      const cardId = randomUUID();
      old.prepare(`INSERT INTO cards (id, author_id, content, card_html, link, private, tags, idempotency_key, content_hash, created_at, updated_at)
                   VALUES (?, ?, 'text', '', '', 0, '[]', 'http:card', 'h', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`).run(cardId, owner);
      old.close();
      const db = openCardsDatabase(path);
      const collections = new SqliteCollectionRepository(db);
      expect((await collections.findById(id))?.idempotencyKey).toBeNull();
      expect(await new SqliteCardRepository(db).findByIdempotencyKey(owner, 'http:card')).toMatchObject({ id: cardId, idempotencyKey: 'http:card', requestFingerprint: null });
      const keyed = aCollection().by(owner).withIdempotencyKey('http:k').build();
      await collections.insert(keyed, []);
      expect(await collections.findByIdempotencyKey(owner, 'http:k')).toEqual(keyed);
      expect(await collections.remove(id, [])).toBe(true);
      expect(await collections.findDeletedIdempotencyKey(owner, 'http:k')).toBeNull();
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("gives the cards stored before their file's privacy was kept the privacy of the file's collection, else of their hidden-by-file mark", async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const old = openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('file_private'))));
      const [owner, privateFile, publicFile, uncollected] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      const card = (fileId: string | null, isPrivate: number, hiddenByFile: number) => {
        const id = randomUUID();
        old.prepare(`INSERT INTO cards (id, author_id, content, card_html, link, private, hidden_by_file, tags, file_id, file_name, content_hash, created_at, updated_at)
                     VALUES (?, ?, 'text', '', '', ?, ?, '[]', ?, 'a.docx', 'h', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`).run(id, owner, isPrivate, hiddenByFile, fileId);
        return id;
      };
      const collection = (fileId: string, isPublic: number) =>
        old.prepare(`INSERT INTO collections (id, author_id, name, description, is_public, file_id, created_at, updated_at) VALUES (?, ?, 'n', '', ?, ?, '2026-01-01', '2026-01-01')`).run(randomUUID(), owner, isPublic, fileId);
      collection(privateFile, 0);
      collection(publicFile, 1);
      // Public by its owner's choice while its file is private: the card the file's privacy must not show the file on.
      const publishedOfPrivate = card(privateFile, 0, 0);
      const ofPublic = card(publicFile, 0, 0);
      const hiddenUncollected = card(uncollected, 1, 1);
      const publicUncollected = card(uncollected, 0, 0);
      const noFile = card(null, 0, 0);
      old.close();
      const db = openCardsDatabase(path);
      const cards = new SqliteCardRepository(db);
      const filePrivacy = async (id: string) => (await cards.findById(id))?.filePrivate;
      expect(await Promise.all([publishedOfPrivate, ofPublic, hiddenUncollected, publicUncollected, noFile].map(filePrivacy))).toEqual([true, false, true, false, false]);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
describe('SQLite kept counts', () => {
  /** The query plan of every SELECT prepared while `run` runs. */
  async function plansOf(db: ReturnType<typeof openCardsDatabase>, run: () => Promise<unknown>): Promise<string[][]> {
    const prepared: string[] = [];
    const prepare = db.prepare.bind(db);
    const spy = jest.spyOn(db, 'prepare').mockImplementation(((sql: string) => (prepared.push(sql), prepare(sql))) as typeof db.prepare);
    try {
      await run();
    } finally {
      spy.mockRestore();
    }
    return prepared.filter((sql) => /^\s*SELECT/i.test(sql)).map((sql) => (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(sql.includes('?') ? ['cards'] : [])) as { detail: string }[]).map((r) => r.detail));
  }

  it('answers the count of cards and of ranked authors from one kept row each, not by counting the library', async () => {
    const db = openCardsDatabase(':memory:');
    const [cards, votes] = [new SqliteCardRepository(db), new SqliteVoteRepository(db)];
    for (let i = 0; i < 30; i++) {
      const card = aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
      if (i % 3 === 0) await votes.upsert(randomUUID(), card.id, i % 2 === 0, nextTime(), randomUUID());
    }
    expect(await cards.count()).toBe(30);
    expect(await votes.countRankedAuthors()).toBe(10);
    // Before: 'SCAN cards USING COVERING INDEX cards_content_hash' (all cards, every GET /api/card/count) and
    // 'SCAN author_scores USING COVERING INDEX author_scores_ranking' (all ranked authors, every GET /api/top_users/:page).
    expect(await plansOf(db, () => cards.count())).toEqual([['SEARCH kept_counts USING PRIMARY KEY (name=?)']]);
    expect(await plansOf(db, () => votes.countRankedAuthors())).toEqual([['SEARCH kept_counts USING PRIMARY KEY (name=?)']]);
    db.close();
  });

  it('counts the cards and ranked authors of a store made before the kept counts, then keeps them through changes', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      const before = openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('CREATE TABLE kept_counts'))));
      const [oldCards, oldVotes] = [new SqliteCardRepository(before), new SqliteVoteRepository(before)];
      const stored: Card[] = [];
      for (let i = 0; i < 12; i++) {
        const card = i === 11 ? aCard().private().build() : aCard().build();
        await oldCards.insert(card, fingerprintOf(card.content), []);
        stored.push(card);
      }
      for (const card of stored.slice(0, 4)) await oldVotes.upsert(randomUUID(), card.id, true, nextTime(), randomUUID());
      await oldVotes.upsert(randomUUID(), stored[11]!.id, true, nextTime(), randomUUID());
      before.close();

      const db = openCardsDatabase(path);
      const [cards, votes] = [new SqliteCardRepository(db), new SqliteVoteRepository(db)];
      const recount = () => [
        (db.prepare('SELECT count(*) AS n FROM cards').get() as { n: number }).n,
        (db.prepare('SELECT count(*) AS n FROM author_scores WHERE public_upvotes + public_downvotes > 0').get() as { n: number }).n,
      ];
      expect([await cards.count(), await votes.countRankedAuthors()]).toEqual([12, 4]);
      expect(recount()).toEqual([12, 4]);
      await cards.remove(stored[0]!.id, [], []);
      await cards.update({ ...stored[11]!, private: false, updatedAt: nextTime() }, null, []);
      await votes.remove('nobody', stored[1]!.id);
      const later = aCard().build();
      await cards.insert(later, fingerprintOf(later.content), []);
      await votes.upsert(randomUUID(), later.id, false, nextTime(), randomUUID());
      expect([await cards.count(), await votes.countRankedAuthors()]).toEqual(recount());
      expect(recount()).toEqual([12, 5]);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeVoteRepositoryContract('SQLite', sqlite);
describeCollectionRepositoryContract('SQLite', sqlite);
describeFilePrivacyBackfillContract('SQLite', sqlite);
describeFilePrivacyRoundTripContract('SQLite', sqlite);

describe('SQLite roots created since a time', () => {
  it('walk the recent roots index between both bounds in its order, with or without an end and statistics, and stop at the limit', async () => {
    const db = openCardsDatabase(':memory:');
    const cards = new SqliteCardRepository(db);
    const stored: Card[] = [];
    for (let i = 0; i < 300; i++) {
      const card = i % 3 === 2 ? aCard().collisionOf(stored[i - 1]!.id).build() : aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
      stored.push(card);
    }
    const roots = stored.filter((c) => c.collisionOf === null);
    const [since, until] = [roots[20]!.createdAt, roots[40]!.createdAt];
    const plan = (sql: string, ...args: unknown[]) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as { detail: string }[]).map((s) => s.detail);
    const expectBounded = () => {
      // Before, with an end ('(? IS NULL OR created_at <= ?)'): 'SEARCH cards USING INDEX cards_recent_roots (created_at>?)',
      // 'USE TEMP B-TREE FOR LAST TERM OF ORDER BY': every root newer than the start, down from the newest.
      expect(plan(RECENT_ROOTS_SQL.within, since.toISOString(), until.toISOString(), null, null, 10)).toEqual([
        expect.stringMatching(/^SEARCH cards USING INDEX cards_recent_roots_order \(created_at>\? AND created_at<\?\)$/),
      ]);
      expect(plan(RECENT_ROOTS_SQL.since, since.toISOString(), 'viewer', 'viewer', 10)).toEqual([
        expect.stringMatching(/^SEARCH cards USING INDEX cards_recent_roots_order \(created_at>\?\)$/),
      ]);
    };
    expectBounded();
    db.exec('ANALYZE');
    expectBounded();
    const ids = (found: Card[]) => found.map((c) => c.id);
    expect(ids(await cards.findRootsCreatedSince(null, since, 100, until))).toEqual(ids(roots.slice(20, 41).reverse()));
    expect(ids(await cards.findRootsCreatedSince(null, since, 5, until))).toEqual(ids(roots.slice(36, 41).reverse()));
    expect(ids(await cards.findRootsCreatedSince(null, since, 5))).toEqual(ids(roots.slice(-5).reverse()));
    db.close();
  });

  it('replaces the older recent roots index when a store made before opens', async () => {
    const dir = testTempDir('cards-migration-');
    try {
      const path = join(dir, 'cards.db');
      openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('cards_recent_roots_order')))).close();
      const db = openCardsDatabase(path);
      const indexes = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'cards_recent_roots%'").all() as { name: string }[]).map((r) => r.name);
      expect(indexes).toEqual(['cards_recent_roots_order']);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite bookmark lookup', () => {
  it("reads only the owner's bookmarks of the cards asked about, whatever the owner's collection count and however many others hold them", async () => {
    const db = openCardsDatabase(':memory:');
    const [cards, collections] = [new SqliteCardRepository(db), new SqliteCollectionRepository(db)];
    const popular = aCard().build();
    await cards.insert(popular, fingerprintOf(popular.content), []);
    const owner = randomUUID();
    const owned: string[] = [];
    for (let i = 0; i < 300; i++) {
      const [own, others] = [aCollection().by(owner).build(), aCollection().build()];
      for (const c of [own, others]) await collections.insert(c, []);
      owned.push(own.id);
      await collections.addBookmark(others.id, popular.id, nextTime(), []);
    }
    for (const id of [owned[7]!, owned[3]!]) await collections.addBookmark(id, popular.id, nextTime(), []);
    const steps = () => (db.prepare(`EXPLAIN QUERY PLAN ${ownerBookmarksOfCardsQuery(3)}`).all(popular.id, randomUUID(), randomUUID(), owner) as { detail: string }[]).map((s) => s.detail);
    // bookmarks_card alone reads every user's bookmark of the popular card to find the owner's two; collections_author
    // first (the planner's pick for a plain JOIN without statistics, which the service never gathers) reads every
    // collection of the owner.
    const ownersBookmarks = [
      expect.stringMatching(/^SEARCH b USING (COVERING )?INDEX bookmarks_card_owner \(card_id=\? AND owner_id=\?\)$/),
      expect.stringMatching(/^SEARCH k USING INDEX sqlite_autoindex_collections_1 \(id=\?\)$/),
      'USE TEMP B-TREE FOR ORDER BY',
    ];
    expect(steps()).toEqual(ownersBookmarks);
    db.exec('ANALYZE');
    expect(steps()).toEqual(ownersBookmarks);
    expect(await collections.collectionsOfOwnerHolding(owner, [popular.id])).toEqual([owned[3]!, owned[7]!].map((collectionId) => ({ cardId: popular.id, collectionId })));
    db.close();
  });
});
// One process owns a SQLite file, so both holders are the one lock of that process.
describeContentLockContract('in process (SQLite)', async () => {
  const lock = new InProcessContentLock();
  return { holders: [lock, lock], close: async () => undefined };
});

// The MongoDB adapters run the same four suites in repositories-mongo.test.ts.

describe('SQLite collection page', () => {
  /** The query plan of every statement `run` made the repository run, each with the arguments it was given. */
  async function plansOf(db: ReturnType<typeof openCardsDatabase>, run: () => Promise<unknown>): Promise<string[][]> {
    const ran: { sql: string; args: unknown[] }[] = [];
    const prepare = db.prepare.bind(db);
    const spy = jest.spyOn(db, 'prepare').mockImplementation(((sql: string) => {
      const statement = prepare(sql);
      return new Proxy(statement, {
        get: (target, key) => {
          const value = Reflect.get(target, key, target) as unknown;
          if (typeof value !== 'function' || !['all', 'get', 'run', 'iterate'].includes(String(key))) return typeof value === 'function' ? value.bind(target) : value;
          return (...args: unknown[]) => {
            ran.push({ sql, args });
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
    }) as typeof db.prepare);
    try {
      await run();
    } finally {
      spy.mockRestore();
    }
    return ran.filter((r) => /^\s*SELECT/i.test(r.sql)).map((r) => (prepare(`EXPLAIN QUERY PLAN ${r.sql}`).all(...r.args) as { detail: string }[]).map((s) => s.detail));
  }

  it('reads a page of roots from the bookmark order and stops at it, and counts a collection once until it changes', async () => {
    const db = openCardsDatabase(':memory:');
    const [cards, collections] = [new SqliteCardRepository(db), new SqliteCollectionRepository(db)];
    const owner = randomUUID();
    const c = aCollection().by(owner).build();
    await collections.insert(c, []);
    let root: Card | undefined;
    for (let i = 0; i < 300; i++) {
      const card = i % 3 === 2 ? aCard().collisionOf(root!.id).build() : i % 5 === 0 ? aCard().by(owner).private().build() : aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
      if (card.collisionOf === null) root = card;
      await collections.addBookmark(c.id, card.id, nextTime(), []);
    }
    const expectPageAndCount = async () => {
      for (const viewer of [null, owner]) {
        // Before: 'SCAN b USING INDEX bookmarks_order', 'USE TEMP B-TREE FOR GROUP BY', 'USE TEMP B-TREE FOR ORDER BY':
        // every bookmark of the collection grouped and sorted for each page.
        // Now, once counted: the kept page starts, then the bookmarks from the start nearest before the page on.
        await collections.countVisibleBookmarkedRoots(c.id, viewer);
        for (const offset of [0, 40, 160]) {
          const [latest, kept, listing, ...more] = await plansOf(db, () => collections.listVisibleBookmarkedRoots(c.id, viewer, offset, 20));
          expect(more).toEqual([]);
          expect(latest).toEqual([expect.stringMatching(/^SEARCH bookmark_block_changes USING COVERING INDEX bookmark_block_changes_seq \(collection_id=\?\)$/)]);
          expect(kept).toEqual([expect.stringMatching(/^SEARCH bookmark_block_counts USING PRIMARY KEY \(collection_id=\? AND viewer_id=\?\)$/)]);
          expect(listing![0]).toMatch(/^SEARCH b USING (COVERING )?INDEX bookmarks_order \(collection_id=\? AND ord>\?\)$/);
          expect(listing!.filter((step) => /TEMP B-TREE|^SCAN/.test(step))).toEqual([]);
        }
        await collections.countVisibleBookmarkedRoots(c.id, viewer);
        // Before: count(DISTINCT ...) over every bookmark again on each page.
        const counting = await plansOf(db, () => collections.countVisibleBookmarkedRoots(c.id, viewer));
        expect(counting.flat().filter((step) => !/bookmark_block_counts|bookmark_block_changes/.test(step))).toEqual([]);
      }
    };
    await expectPageAndCount();
    db.exec('ANALYZE');
    await expectPageAndCount();
    expect(await collections.countVisibleBookmarkedRoots(c.id, null)).toBe(new Set((await collections.listVisibleBookmarkedRoots(c.id, null, 0, 1000))).size);
    const all = await collections.listVisibleBookmarkedRoots(c.id, owner, 0, 1000);
    for (const offset of [49, 50, 51, 160, 199]) expect(await collections.listVisibleBookmarkedRoots(c.id, owner, offset, 20)).toEqual(all.slice(offset, offset + 20));
    expect(await collections.listVisibleBookmarkedRoots(c.id, owner, all.length, 20)).toEqual([]);
    db.close();
  });

  it('counts again, after a change, only the blocks of bookmark orders holding a bookmark of a card group it touched', async () => {
    const db = openCardsDatabase(':memory:');
    const [cards, collections] = [new SqliteCardRepository(db), new SqliteCollectionRepository(db)];
    const owner = randomUUID();
    const c = aCollection().by(owner).build();
    await collections.insert(c, []);
    const marked: Card[] = [];
    let root: Card | undefined;
    for (let i = 0; i < 1000; i++) {
      const card = (i % 3 === 2 ? aCard().collisionOf(root!.id) : i % 5 === 0 ? aCard().by(owner).private() : aCard()).build();
      await cards.insert(card, fingerprintOf(card.content), []);
      if (card.collisionOf === null) root = card;
      await collections.addBookmark(c.id, card.id, nextTime(), []);
      marked.push(card);
    }
    /** The statements the repository ran for a count and a first page, and the count. */
    const firstPage = async (viewer: string | null) => {
      const ran: string[] = [];
      const prepare = db.prepare.bind(db);
      const spy = jest.spyOn(db, 'prepare').mockImplementation(((sql: string) => {
        ran.push(sql);
        return prepare(sql);
      }) as typeof db.prepare);
      try {
        const n = await collections.countVisibleBookmarkedRoots(c.id, viewer);
        const page = await collections.listVisibleBookmarkedRoots(c.id, viewer, 0, 25);
        return { n, page, grouped: ran.filter((sql) => /GROUP BY/.test(sql)).length, blocks: ran.filter((sql) => /count\(\*\)/.test(sql)).length };
      } finally {
        spy.mockRestore();
      }
    };
    /** What a count read whole says, kept counts forgotten. */
    const truth = async (viewer: string | null) => {
      db.prepare('DELETE FROM bookmark_block_counts WHERE viewer_id = ?').run(viewer ?? '');
      return { n: await collections.countVisibleBookmarkedRoots(c.id, viewer), all: await collections.listVisibleBookmarkedRoots(c.id, viewer, 0, 10_000) };
    };
    const viewers = [null, owner];
    for (const viewer of viewers) await collections.countVisibleBookmarkedRoots(c.id, viewer);
    const changes: [string, () => Promise<unknown>][] = [
      ['a bookmark added', async () => {
        const late = aCard().build();
        await cards.insert(late, fingerprintOf(late.content), []);
        await collections.addBookmark(c.id, late.id, nextTime(), []);
      }],
      ['an entry removed', () => collections.removeEntry(c.id, marked[301]!.id, () => [])],
      ['a privacy change', () => cards.update({ ...marked[600]!, private: !marked[600]!.private, updatedAt: nextTime() }, null, [])],
      ['a card deleted', () => cards.remove(marked[450]!.id, [], [])],
    ];
    for (const [, change] of changes) {
      await change();
      for (const viewer of viewers) {
        const first = await firstPage(viewer);
        // Before: any change made the next count group the whole collection again (one GROUP BY over 1000 bookmarks).
        expect(first.grouped).toBe(0);
        expect(first.blocks).toBeGreaterThan(0);
        expect(first.blocks).toBeLessThanOrEqual(3);
        const whole = await truth(viewer);
        expect(first.n).toBe(whole.n);
        expect(first.page).toEqual(whole.all.slice(0, 25));
        for (const offset of [0, 49, 50, 301, whole.n - 3]) expect(await collections.listVisibleBookmarkedRoots(c.id, viewer, offset, 25)).toEqual(whole.all.slice(offset, offset + 25));
      }
    }
    db.close();
  });
});

describe('SQLite kept collection counts across a rollback', () => {
  // The release before 5d8f480 (e.g. b521ce9) as it reads and keeps a viewer's roots in a collection: its statements,
  // copied from its sqlite-collection-repository.ts (keptRoots, GROUPED_ROOTS_SQL; ROOT_STRIDE was 50).
  const OLD_GROUPED_ROOTS_SQL = `
  SELECT coalesce(c.collision_of, c.id) AS root_id, min(b.ord) AS ord, b.card_id AS card_id
  FROM bookmarks b CROSS JOIN cards c INDEXED BY cards_visibility ON c.id = b.card_id
  WHERE b.collection_id = @collectionId AND (c.private = 0 OR c.author_id = @viewerId)
  GROUP BY root_id ORDER BY ord, card_id`;
  function oldKeptRoots(db: ReturnType<typeof openCardsDatabase>, collectionId: string, viewerId: string | null): { n: number; starts: [number, string][] } {
    return db.transaction(() => {
      const viewer = viewerId ?? '';
      const kept = db.prepare('SELECT n, starts FROM bookmark_root_counts WHERE collection_id = ? AND viewer_id = ?').get(collectionId, viewer) as
        | { n: number; starts: string | null }
        | undefined;
      if (kept && kept.starts !== null) return { n: kept.n, starts: JSON.parse(kept.starts) as [number, string][] };
      const rows = db.prepare(OLD_GROUPED_ROOTS_SQL).all({ collectionId, viewerId }) as { ord: number; card_id: string }[];
      const starts = rows.filter((_, i) => i % 50 === 0).map((r): [number, string] => [r.ord, r.card_id]);
      db.prepare('INSERT OR REPLACE INTO bookmark_root_counts (collection_id, viewer_id, n, starts) VALUES (?, ?, ?, ?)')
        .run(collectionId, viewer, rows.length, JSON.stringify(starts));
      return { n: rows.length, starts };
    })();
  }
  // A release from 5d8f480 until the kept counts had a table of their own (sessions 14-16) reads and writes
  // bookmark_root_counts (n, blocks, seq): its statements, copied from its keptRoots, without the mending of blocks.
  function midKeptRow(db: ReturnType<typeof openCardsDatabase>, collectionId: string, viewerId: string | null): { n: number; blocks: number[]; current: boolean } | undefined {
    const latest = (db.prepare('SELECT coalesce(max(seq), 0) AS seq FROM bookmark_block_changes WHERE collection_id = ?').get(collectionId) as { seq: number }).seq;
    const kept = db.prepare('SELECT n, blocks, seq FROM bookmark_root_counts WHERE collection_id = ? AND viewer_id = ?').get(collectionId, viewerId ?? '') as
      | { n: number; blocks: string; seq: number }
      | undefined;
    return kept && { n: kept.n, blocks: JSON.parse(kept.blocks) as number[], current: kept.seq === latest };
  }

  it('leaves bookmark_root_counts as the releases before the mended counts read it, and forgets their counts on every change made since', async () => {
    const dir = testTempDir('cards-rollback-');
    try {
      const path = join(dir, 'cards.db');
      // The store as the release before 5d8f480 made it, with counts it kept.
      const before = openSqlite(path, CARDS_MIGRATIONS.slice(0, CARDS_MIGRATIONS.findIndex((m) => m.includes('CREATE TABLE bookmark_block_changes'))));
      const [oldCards, oldCollections] = [new SqliteCardRepository(before), new SqliteCollectionRepository(before)];
      const owner = randomUUID();
      const c = aCollection().by(owner).build();
      await oldCollections.insert(c, []);
      const stored: Card[] = [];
      let root: Card | undefined;
      for (let i = 0; i < 240; i++) {
        const card = (i % 3 === 2 ? aCard().collisionOf(root!.id) : i % 5 === 0 ? aCard().by(owner).private() : aCard()).build();
        await oldCards.insert(card, fingerprintOf(card.content), []);
        if (card.collisionOf === null) root = card;
        await oldCollections.addBookmark(c.id, card.id, nextTime(), []);
        stored.push(card);
      }
      const viewers = [null, owner];
      const oldBefore = viewers.map((viewer) => oldKeptRoots(before, c.id, viewer).n);
      before.close();

      // This release runs on it: counts, pages and changes.
      const db = openCardsDatabase(path);
      const [cards, collections] = [new SqliteCardRepository(db), new SqliteCollectionRepository(db)];
      expect(await Promise.all(viewers.map((viewer) => collections.countVisibleBookmarkedRoots(c.id, viewer)))).toEqual(oldBefore);
      const late = aCard().build();
      await cards.insert(late, fingerprintOf(late.content), []);
      await collections.addBookmark(c.id, late.id, nextTime(), []);
      await collections.removeEntry(c.id, stored[30]!.id, () => []);
      await cards.update({ ...stored[100]!, private: !stored[100]!.private, updatedAt: nextTime() }, null, []);
      await cards.remove(stored[151]!.id, [], []);
      const now = await Promise.all(viewers.map((viewer) => collections.countVisibleBookmarkedRoots(c.id, viewer)));
      const pages = await Promise.all(viewers.map((viewer) => collections.listVisibleBookmarkedRoots(c.id, viewer, 0, 10_000)));
      expect(now).toEqual(pages.map((p) => p.length));

      // Rolled back: the old release's statements run, and count what this release changed (before: 'no such column: starts').
      for (const [i, viewer] of viewers.entries()) {
        const old = oldKeptRoots(db, c.id, viewer);
        expect(old.n).toBe(now[i]);
        expect(old.starts.length).toBe(Math.ceil(now[i]! / 50));
        // Its kept count is forgotten by a change made while it runs (its triggers), here by this release's repository.
        expect(oldKeptRoots(db, c.id, viewer).n).toBe(now[i]);
      }
      const another = aCard().build();
      await cards.insert(another, fingerprintOf(another.content), []);
      await collections.addBookmark(c.id, another.id, nextTime(), []);
      expect(db.prepare('SELECT count(*) AS n FROM bookmark_root_counts').get()).toEqual({ n: 0 });
      expect(oldKeptRoots(db, c.id, null).n).toBe(now[0]! + 1);
      // A root without collisions made private: one root fewer for anyone.
      await cards.update({ ...stored[3]!, private: true, updatedAt: nextTime() }, null, []);
      expect(oldKeptRoots(db, c.id, null).n).toBe(now[0]!);
      expect(await collections.countVisibleBookmarkedRoots(c.id, null)).toBe(now[0]!);

      // A release of the mended counts in bookmark_root_counts (5d8f480 on) reads a row the old release wrote as a
      // current count with no block known (its pages read from the first bookmark), and the old release reads its rows.
      oldKeptRoots(db, c.id, owner);
      expect(midKeptRow(db, c.id, owner)).toEqual({ n: await collections.countVisibleBookmarkedRoots(c.id, owner), blocks: [], current: true });
      db.prepare('INSERT OR REPLACE INTO bookmark_root_counts (collection_id, viewer_id, n, blocks, seq) VALUES (?, ?, ?, ?, ?)').run(c.id, '', 999, '[1]', 0);
      expect(oldKeptRoots(db, c.id, null).n).toBe(now[0]!);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
