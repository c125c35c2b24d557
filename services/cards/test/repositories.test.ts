import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite, SqliteOutboxStore } from '@cards/platform';
import { CARDS_MIGRATIONS, openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { ownerBookmarksOfCardsQuery, SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { describeCardRepositoryContract } from './card-repository.contract';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { describeCollectionRepositoryContract } from './collection-repository.contract';
import { describeContentLockContract } from './content-lock.contract';
import { describeVoteRepositoryContract } from './vote-repository.contract';
import type { CardsStoreFactory } from './fixture';
import { aCard, aCollection } from './builders';

const sqlite: CardsStoreFactory = async () => {
  const db = openCardsDatabase(':memory:');
  const outbox = new SqliteOutboxStore(db);
  return {
    cards: new SqliteCardRepository(db),
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db),
    pendingEventTopics: async () => (await outbox.pending(1000)).map((e) => e.topic),
    close: async () => {
      db.close();
    },
  };
};

describeCardRepositoryContract('SQLite', sqlite);

describe('SQLite cards store migration', () => {
  it('counts the public votes of authors stored before they were counted apart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cards-migration-'));
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
    const dir = mkdtempSync(join(tmpdir(), 'cards-migration-'));
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
});
describeVoteRepositoryContract('SQLite', sqlite);
describeCollectionRepositoryContract('SQLite', sqlite);

describe('SQLite bookmark lookup', () => {
  it("reads the owner's bookmarks of the cards asked about from the cards' side, whatever the owner's collection count", async () => {
    const db = openCardsDatabase(':memory:');
    const collections = new SqliteCollectionRepository(db);
    const owner = randomUUID();
    for (let i = 0; i < 300; i++) {
      const c = aCollection().by(owner).build();
      await collections.insert(c, []);
      for (let j = 0; j < 3; j++) await collections.addBookmark(c.id, randomUUID(), c.createdAt, []);
    }
    const steps = () => (db.prepare(`EXPLAIN QUERY PLAN ${ownerBookmarksOfCardsQuery(3)}`).all(randomUUID(), randomUUID(), randomUUID(), owner) as { detail: string }[]).map((s) => s.detail);
    // Walking collections_author (the owner's collections) first costs one bookmark probe per collection the owner has:
    // the planner's pick for a plain JOIN without statistics, which the service never gathers.
    const fromTheCards = [expect.stringMatching(/^SEARCH b USING (COVERING )?INDEX bookmarks_card \(card_id=\?\)$/), expect.stringMatching(/^SEARCH k USING INDEX sqlite_autoindex_collections_1 \(id=\?\)$/), 'USE TEMP B-TREE FOR ORDER BY'];
    expect(steps()).toEqual(fromTheCards);
    db.exec('ANALYZE');
    expect(steps()).toEqual(fromTheCards);
    db.close();
  });
});
// One process owns a SQLite file, so both holders are the one lock of that process.
describeContentLockContract('in process (SQLite)', async () => {
  const lock = new InProcessContentLock();
  return { holders: [lock, lock], close: async () => undefined };
});

// The MongoDB adapters run the same four suites in repositories-mongo.test.ts.
