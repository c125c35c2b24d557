import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqliteDatabase } from '../src/sqlite';
import { testTempDir } from '../../../test/support/cleanup';

const BETTER_SQLITE3 = require.resolve('better-sqlite3');

/**
 * Another process (the backup command) holds the store's write lock, then lets go after `holdMs`; resolves once it
 * holds it, with the moment it will have let go.
 */
function holdWriteLock(path: string, holdMs: number): Promise<{ released: Promise<void> }> {
  const script = `const D = require(${JSON.stringify(BETTER_SQLITE3)}); const db = new D(${JSON.stringify(path)});
    db.exec('BEGIN IMMEDIATE'); console.log('held'); setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, ${holdMs});`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const released = new Promise<void>((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`holder exited ${code}`)))));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve({ released }));
    child.on('error', reject);
  });
}

describe('a store whose write lock another process holds for a moment (the backup command copying it)', () => {
  let dir: string;
  let db: SqliteDatabase;
  beforeEach(() => {
    dir = testTempDir('sqlite-write-lock-');
    db = openSqlite(join(dir, 'store.db'), ['CREATE TABLE bookmarks (collection_id TEXT NOT NULL, card_id TEXT NOT NULL, ord INTEGER NOT NULL)']);
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  // A repository's check-then-insert, as adding a bookmark does: it reads before its first write.
  const addBookmark = (cardId: string) =>
    db.transaction(() => {
      const next = (db.prepare('SELECT coalesce(max(ord), 0) + 1 AS ord FROM bookmarks WHERE collection_id = ?').get('c1') as { ord: number }).ord;
      db.prepare('INSERT INTO bookmarks (collection_id, card_id, ord) VALUES (?, ?, ?)').run('c1', cardId, next);
    })();

  it('a transaction that reads before it writes waits for the lock and is stored, instead of failing SQLITE_BUSY at once', async () => {
    addBookmark('before');
    const holder = await holdWriteLock(join(dir, 'store.db'), 300);
    expect(() => addBookmark('during')).not.toThrow();
    await holder.released;
    expect(db.prepare('SELECT card_id, ord FROM bookmarks ORDER BY ord').all()).toEqual([
      { card_id: 'before', ord: 1 },
      { card_id: 'during', ord: 2 },
    ]);
  });

});
