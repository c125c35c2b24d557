import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SQLITE_WAL_SIZE_LIMIT_BYTES } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, someContent } from './builders';
import { testTempDir } from '../../../test/support/cleanup';

/** The bytes of the file and of its WAL, as a latin1 string to search. */
const bytesOf = (path: string) => [path, `${path}-wal`].map((p) => (existsSync(p) ? readFileSync(p).toString('latin1') : '')).join('');

describe('cards.db after a card is deleted', () => {
  it("holds the deleted card's text nowhere: neither in the file nor in its WAL, once checkpointed", async () => {
    const dir = testTempDir('cards-secure-delete-');
    try {
      const path = join(dir, 'cards.db');
      const db = openCardsDatabase(path);
      const cards = new SqliteCardRepository(db);
      const marker = `unique-${randomUUID()}`;
      // Long enough to spill into overflow pages, which a delete puts on the free list whole.
      const content = `${someContent(3000)} ${marker}`;
      const card = aCard().build();
      const deleted = { ...card, content, cardHtml: `<p>${content}</p>` };
      const kept = aCard().build();
      await cards.insert(deleted, fingerprintOf(deleted.content), []);
      await cards.insert(kept, fingerprintOf(kept.content), []);
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(bytesOf(path)).toContain(marker);

      expect(await cards.remove(deleted.id, [], [])).toBe(true);
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(bytesOf(path)).not.toContain(marker);
      expect(await cards.findById(kept.id)).toMatchObject({ content: kept.content });
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has its WAL cut back to SQLITE_WAL_SIZE_LIMIT_BYTES when reset after a large transaction', async () => {
    const dir = testTempDir('cards-wal-limit-');
    try {
      const path = join(dir, 'cards.db');
      const db = openCardsDatabase(path);
      expect(db.pragma('journal_size_limit', { simple: true })).toBe(SQLITE_WAL_SIZE_LIMIT_BYTES);
      const cards = new SqliteCardRepository(db);
      db.exec('CREATE TABLE filler (b BLOB)');
      db.transaction(() => {
        for (let i = 0; i < 12; i++) db.prepare('INSERT INTO filler (b) VALUES (randomblob(1048576))').run();
      })();
      expect(readFileSync(`${path}-wal`).length).toBeGreaterThan(SQLITE_WAL_SIZE_LIMIT_BYTES);
      db.pragma('wal_checkpoint(PASSIVE)');
      // The next write starts the WAL over, truncating it to the limit.
      const card = aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
      expect(readFileSync(`${path}-wal`).length).toBeLessThanOrEqual(SQLITE_WAL_SIZE_LIMIT_BYTES);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
