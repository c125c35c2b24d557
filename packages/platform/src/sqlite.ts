import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { creationCursor } from './paging';

export type SqliteDatabase = Database.Database;

/**
 * One step of a file's schema: SQL text, or a function for a step SQL cannot say (one that computes a value in
 * JavaScript for each row). Either runs inside the step's IMMEDIATE transaction.
 */
export type SqliteMigration = string | ((db: SqliteDatabase) => void);

export interface SqliteOpenOptions {
  /**
   * auto_vacuum of a file this call creates (`incremental`: freed pages can be handed back with PRAGMA
   * incremental_vacuum). SQLite fixes the mode when the file's first page is written, which switching to WAL does, so
   * it is set before; an existing file keeps its mode (changing it needs a VACUUM).
   */
  autoVacuum?: 'incremental';
}

/**
 * The size a WAL file is truncated to when SQLite resets it after a checkpoint: what the default auto-checkpoint (1000
 * pages of 4 KB) lets it reach anyway, so only a WAL grown past it by one large transaction is cut back.
 */
export const SQLITE_WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;

/** Opens (creating if needed) a SQLite file in WAL mode, then applies the migrations not applied yet, in order. */
export function openSqlite(path: string, migrations: readonly SqliteMigration[] = [], options: SqliteOpenOptions = {}): SqliteDatabase {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  cachePreparedStatements(db);
  beginTransactionsImmediate(db);
  // First, so that switching a new file to WAL and the migrations below wait for another process instead of failing.
  db.pragma('busy_timeout = 5000');
  if (options.autoVacuum === 'incremental') db.pragma('auto_vacuum = INCREMENTAL');
  switchToWal(db);
  db.pragma('synchronous = NORMAL');
  db.pragma('foreign_keys = ON');
  // What is deleted is overwritten with zeros (a deleted card's text, a spent token), not left in the file's free pages
  // and cells until reused; a WAL a large transaction grew is cut back to SQLITE_WAL_SIZE_LIMIT_BYTES when next reset.
  // See docs/decisions.md ("Deleted text is overwritten").
  db.pragma('secure_delete = ON');
  db.pragma(`journal_size_limit = ${SQLITE_WAL_SIZE_LIMIT_BYTES}`);
  // Reads through the OS page cache instead of a read() per page, and a larger page cache than the 2 MB
  // default: point lookups in a file of 100,000 cards otherwise spend most of their time fetching pages.
  db.pragma('mmap_size = 268435456');
  db.pragma('cache_size = -32768');
  migrate(db, migrations);
  return db;
}

/**
 * Switching a new file to WAL needs the file to itself, and SQLite answers SQLITE_BUSY for it without always calling
 * the busy handler while another process opens the same new file; such opens retry for up to ~5 s.
 */
function switchToWal(db: SqliteDatabase): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let attempt = 0; ; attempt++) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || attempt >= 250) throw err;
      Atomics.wait(pause, 0, 0, 10 + Math.floor(Math.random() * 10));
    }
  }
}

/**
 * Several processes may open a new file at once (services sharing the embedded event log), so each step reads the
 * version inside an IMMEDIATE transaction: a second process waits for the first one's step, then sees it applied.
 */
function migrate(db: SqliteDatabase, migrations: readonly SqliteMigration[]): void {
  const version = () => db.pragma('user_version', { simple: true }) as number;
  if (version() >= migrations.length) return;
  const applyNextStep = db.transaction((): boolean => {
    const current = version();
    if (current >= migrations.length) return false;
    const step = migrations[current]!;
    if (typeof step === 'string') db.exec(step);
    else step(db);
    db.pragma(`user_version = ${current + 1}`);
    return true;
  });
  while (applyNextStep.immediate());
}

/**
 * `db.transaction(fn)()` begins IMMEDIATE (the write lock first, waiting for it within busy_timeout), not DEFERRED.
 * A deferred transaction that reads and then writes (most of the repositories': check, then insert) asks for the write
 * lock only at its first write, and when another connection holds it then, SQLite answers SQLITE_BUSY at once without
 * calling the busy handler: its read snapshot may be stale, so it cannot wait. The backup command holds every store's
 * write lock (data-dir-backup.ts; then for its whole copy, now while it begins its snapshots), so such a write failed
 * (a bookmark added during a backup answered 500) where an IMMEDIATE one waits the lock out. `.deferred` stays for a transaction that only reads.
 */
function beginTransactionsImmediate(db: SqliteDatabase): void {
  const transaction = db.transaction.bind(db);
  // Each variant better-sqlite3 returns carries the others (.deferred, .immediate, .exclusive), so callers keep them.
  db.transaction = ((fn: Parameters<SqliteDatabase['transaction']>[0]) => transaction(fn).immediate) as SqliteDatabase['transaction'];
}

/**
 * Repositories call `db.prepare(sql)` where they use a statement; compiling SQL costs more than
 * running a point lookup, so the same SQL text returns the same compiled statement. A statement
 * still being iterated is busy and cannot be shared, so that case gets a fresh one.
 */
function cachePreparedStatements(db: SqliteDatabase): void {
  const compile = db.prepare.bind(db);
  const statements = new Map<string, Database.Statement>();
  db.prepare = ((sql: string) => {
    const cached = statements.get(sql);
    if (cached && !cached.busy) return cached;
    const statement = compile(sql);
    // Bounded, in case a caller builds SQL text per call (e.g. a variable number of placeholders).
    if (!cached && statements.size < 1000) statements.set(sql, statement);
    return statement;
  }) as SqliteDatabase['prepare'];
}

/**
 * The rows of one page of a table listed newest first (created_at DESC, then id; created_at stored as an ISO string),
 * read one past the page for pageOfRows: from the start, or after the creationCursor `after` (InvalidArgumentError
 * naming page_token for anything else). `where` filters with named parameters taken from `params`.
 */
export function newestFirstRows<Row>(db: SqliteDatabase, table: string, where: string, params: Record<string, unknown>, limit: number, after?: string): Row[] {
  const cursor = after === undefined ? undefined : creationCursor.parse(after);
  const keyset = cursor ? ' AND (created_at < @createdAt OR (created_at = @createdAt AND id > @id))' : '';
  const bound = cursor ? { createdAt: cursor.createdAt.toISOString(), id: cursor.id } : {};
  return db.prepare(`SELECT * FROM ${table} WHERE ${where}${keyset} ORDER BY created_at DESC, id LIMIT @take`).all({ ...params, ...bound, take: limit + 1 }) as Row[];
}
