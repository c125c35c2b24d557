import Database from 'better-sqlite3';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { isStoreBusyError } from '../src/readiness';
import { runWithRequestContext } from '../src/request-context';
import { openSqlite, writesWaitBetweenTries, type SqliteDatabase } from '../src/sqlite';
import { testTempDir } from '../../../test/support/cleanup';
import { holdSqliteWriteLock } from '../../../test/support/sqlite-lock-holder';

const logger = pino({ level: 'silent' });
const holdWriteLock = holdSqliteWriteLock;

let dir: string;
beforeEach(() => {
  dir = testTempDir('sqlite-busy-wait-');
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("the event log's writes wait for another process's lock without stopping the process", () => {
  it('a publish meeting a held events.db lets other work of the process run, and is stored once the lock is let go', async () => {
    const path = join(dir, 'events.db');
    const log = new SqliteEventLog({ path, logger, pollIntervalMs: 20, retryBaseMs: 10 });
    try {
      const holder = await holdWriteLock(path);
      const order: string[] = [];
      // better-sqlite3's wait inside SQLite is synchronous: the process did nothing else until the lock was let go or
      // busy_timeout (5 s) passed, and nothing here lets it go before other work has run, so the publish failed.
      const published = log.publish([{ topic: 'cards.card.v1', key: 'k1', payload: new TextEncoder().encode('held') }]).then(
        () => order.push('published'),
        (err: unknown) => order.push(`failed: ${(err as Error).message}`),
      );
      await new Promise((resolve) => setImmediate(resolve));
      order.push('other work ran');
      await holder.release();
      await published;
      expect(order).toEqual(['other work ran', 'published']);
    } finally {
      await log.close();
    }
    const db = new Database(path, { readonly: true });
    try {
      expect(db.prepare('SELECT topic, key FROM events').all()).toEqual([{ topic: 'cards.card.v1', key: 'k1' }]);
    } finally {
      db.close();
    }
  }, 30_000);
});

describe("a repository's writes wait for another process's lock between tries (writesWaitBetweenTries)", () => {
  class Bookmarks {
    constructor(private readonly db: SqliteDatabase) {}
    async add(cardId: string): Promise<number> {
      return this.db.transaction(() => {
        const next = (this.db.prepare('SELECT count(*) + 1 AS n FROM bookmarks').get() as { n: number }).n;
        this.db.prepare('INSERT INTO bookmarks (card_id, ord) VALUES (?, ?)').run(cardId, next);
        return next;
      })();
    }
    async addTwiceThenFail(cardId: string): Promise<void> {
      this.db.prepare('INSERT INTO bookmarks (card_id, ord) VALUES (?, 0)').run(cardId);
      this.db.transaction(() => {
        this.db.prepare('INSERT INTO bookmarks (card_id, ord) VALUES (?, 0)').run(`${cardId} again`);
        throw new Error('refused');
      })();
    }
  }
  let db: SqliteDatabase;
  let bookmarks: Bookmarks;
  beforeEach(() => {
    db = openSqlite(join(dir, 'store.db'), ['CREATE TABLE bookmarks (card_id TEXT NOT NULL, ord INTEGER NOT NULL)']);
    bookmarks = writesWaitBetweenTries(new Bookmarks(db), db, ['add', 'addTwiceThenFail']);
  });
  afterEach(() => db.close());

  it('a write meeting a held lock lets other work of the process run, and is stored once the lock is let go', async () => {
    const holder = await holdWriteLock(join(dir, 'store.db'));
    const order: string[] = [];
    // Waiting inside SQLite, nothing else ran until the lock was let go or busy_timeout passed: the add failed.
    const added = bookmarks.add('during').then(
      (ord) => order.push(`added at ${ord}`),
      (err: unknown) => order.push(`failed: ${(err as Error).message}`),
    );
    await new Promise((resolve) => setImmediate(resolve));
    order.push('other work ran');
    // A read of the same connection answers meanwhile.
    expect(db.prepare('SELECT count(*) AS n FROM bookmarks').get()).toEqual({ n: 0 });
    await holder.release();
    await added;
    expect(order).toEqual(['other work ran', 'added at 1']);
    expect(db.inTransaction).toBe(false);
  }, 30_000);

  it('a method that fails keeps what it stored before its failing transaction, as without the wrapper', async () => {
    await expect(bookmarks.addTwiceThenFail('kept')).rejects.toThrow('refused');
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT card_id FROM bookmarks').all()).toEqual([{ card_id: 'kept' }]);
    expect(await bookmarks.add('next')).toBe(2);
  });

  it('a lock held past the wait (here the end of the call\'s budget) fails the write SQLITE_BUSY with nothing written', async () => {
    const holder = await holdWriteLock(join(dir, 'store.db'));
    let thrown: unknown;
    try {
      await runWithRequestContext({ requestId: 'short', storeWaitUntil: Date.now() + 200 }, () => bookmarks.add('held'));
    } catch (err) {
      thrown = err;
    }
    await holder.release();
    expect(isStoreBusyError(thrown)).toBe(true);
    expect(db.inTransaction).toBe(false);
    expect(db.prepare('SELECT count(*) AS n FROM bookmarks').get()).toEqual({ n: 0 });
  }, 30_000);
});

describe("a call's waits for a locked store end with its store-wait budget (before its caller's deadline)", () => {
  let db: SqliteDatabase;
  beforeEach(() => {
    db = openSqlite(join(dir, 'store.db'), ['CREATE TABLE bookmarks (card_id TEXT NOT NULL)']);
  });
  afterEach(() => db.close());

  const addBookmark = (cardId: string) => db.transaction(() => db.prepare('INSERT INTO bookmarks (card_id) VALUES (?)').run(cardId))();
  const addOutsideTransaction = (cardId: string) => db.prepare('INSERT INTO bookmarks (card_id) VALUES (?)').run(cardId);

  it.each([
    ['in a transaction', addBookmark],
    ['outside a transaction', addOutsideTransaction],
  ])('a write %s of a call whose budget is spent fails SQLITE_BUSY at once, where the lock let go within busy_timeout would have let it through', async (_, write) => {
    // The holder lets go by itself after 3 s: a write waiting busy_timeout (5 s) would be stored then.
    const holder = await holdWriteLock(join(dir, 'store.db'), 3000);
    let thrown: unknown;
    try {
      runWithRequestContext({ requestId: 'budget-spent', storeWaitUntil: Date.now() - 1 }, () => write('during'));
    } catch (err) {
      thrown = err;
    }
    await holder.release();
    expect(isStoreBusyError(thrown)).toBe(true);
    // Outside a call, the same write waits the lock out as before.
    expect(() => addBookmark('after')).not.toThrow();
    expect(db.prepare('SELECT card_id FROM bookmarks').all()).toEqual([{ card_id: 'after' }]);
  }, 30_000);

  it('a later call has its own budget: the connection waits busy_timeout again', async () => {
    const holder = await holdWriteLock(join(dir, 'store.db'), 300);
    expect(() => runWithRequestContext({ requestId: 'spent', storeWaitUntil: Date.now() - 1 }, () => addBookmark('spent'))).toThrow();
    // The next write, of no call, waits for the lock (let go after 300 ms) and is stored.
    expect(() => addBookmark('waited')).not.toThrow();
    await holder.release();
    expect(db.prepare('SELECT card_id FROM bookmarks').all()).toEqual([{ card_id: 'waited' }]);
  }, 30_000);
});

describe('a store made before secure_delete is rid of its deleted text once, at open', () => {
  /** A store as a release before secure_delete left it: a deleted card's text still in the file's free pages. */
  function olderStore(path: string, text: string): void {
    const older = new Database(path);
    older.pragma('journal_mode = WAL');
    older.exec('CREATE TABLE IF NOT EXISTS cards (text TEXT)');
    older.prepare('INSERT INTO cards (text) VALUES (?)').run(`${text} ${'d'.repeat(20_000)}`);
    older.prepare('INSERT INTO cards (text) VALUES (?)').run('kept card text');
    older.prepare('DELETE FROM cards WHERE text LIKE ?').run(`${text}%`);
    older.pragma('wal_checkpoint(TRUNCATE)');
    older.close();
  }
  const fileHolds = (path: string, text: string) => readFileSync(path).includes(text) || (existsSync(`${path}-wal`) && readFileSync(`${path}-wal`).includes(text));

  it('the deleted text is gone from the file and its WAL after the first open; the rows kept are all there', () => {
    const path = join(dir, 'cards.db');
    olderStore(path, 'deleted before secure_delete');
    expect(fileHolds(path, 'deleted before secure_delete')).toBe(true);
    const db = openSqlite(path, ['CREATE TABLE IF NOT EXISTS cards (text TEXT)']);
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(fileHolds(path, 'deleted before secure_delete')).toBe(false);
      expect(db.prepare('SELECT text FROM cards').all()).toEqual([{ text: 'kept card text' }]);
      expect(db.pragma('freelist_count', { simple: true })).toBe(0);
    } finally {
      db.close();
    }
  });

  it('once only: a later open does not rewrite the store again (every start would pay for it)', () => {
    const path = join(dir, 'cards.db');
    olderStore(path, 'first text');
    openSqlite(path).close();
    // Text deleted afterwards without secure_delete (only this test does that) stays: the second open rewrote nothing.
    olderStore(path, 'second text');
    const db = openSqlite(path);
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(fileHolds(path, 'first text')).toBe(false);
      expect(fileHolds(path, 'second text')).toBe(true);
    } finally {
      db.close();
    }
  });

  it('a store larger than the bound is not rewritten at start (it could outlast the startup probe and start again at every restart): it opens as it is, and a line gives the command that rewrites it', () => {
    const path = join(dir, 'cards.db');
    olderStore(path, 'deleted before secure_delete');
    const lines: { level: number; msg: string; path?: string }[] = [];
    const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const open = () => openSqlite(path, ['CREATE TABLE IF NOT EXISTS cards (text TEXT)'], { rewriteAtOpenMaxBytes: 16 * 1024, logger: captured });
    const db = open();
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(fileHolds(path, 'deleted before secure_delete')).toBe(true);
      expect(db.prepare('SELECT text FROM cards').all()).toEqual([{ text: 'kept card text' }]);
    } finally {
      db.close();
    }
    const warning = lines.find((line) => line.level === 40 && line.path === path);
    expect(warning?.msg).toMatch(/too large to rewrite at start/);
    // The operator runs the command it gives (here its SQL, as the sqlite3 shell would) with the services stopped:
    // the deleted text is gone and later starts neither rewrite the store nor warn again.
    const sql = /sqlite3 '[^']+' "(.*)"$/.exec(warning!.msg)![1]!;
    const shell = new Database(path);
    shell.exec(sql);
    shell.close();
    lines.length = 0;
    const reopened = open();
    try {
      reopened.pragma('wal_checkpoint(TRUNCATE)');
      expect(fileHolds(path, 'deleted before secure_delete')).toBe(false);
      expect(reopened.prepare('SELECT text FROM cards').all()).toEqual([{ text: 'kept card text' }]);
    } finally {
      reopened.close();
    }
    expect(lines).toEqual([]);
  });

  it('a store rewritten at start says so before and after (a slow start is explained)', () => {
    const path = join(dir, 'cards.db');
    olderStore(path, 'deleted before secure_delete');
    const lines: { msg: string; path?: string; ms?: number }[] = [];
    const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    openSqlite(path, [], { logger: captured }).close();
    expect(lines.map((line) => [line.msg, line.path])).toEqual([
      ['rewriting this store once, to overwrite deleted text kept from before secure_delete', path],
      ['this store was rewritten once: deleted text kept from before secure_delete is overwritten', path],
    ]);
  });

  it('a store made by this release is noted as clean when made, and never rewritten', () => {
    const path = join(dir, 'new.db');
    openSqlite(path, ['CREATE TABLE cards (text TEXT)']).close();
    olderStore(path, 'deleted without secure_delete');
    const db = openSqlite(path, ['CREATE TABLE cards (text TEXT)']);
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      expect(fileHolds(path, 'deleted without secure_delete')).toBe(true);
    } finally {
      db.close();
    }
  });
});
