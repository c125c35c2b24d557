import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { createLogger, type Logger } from './logger';
import { creationCursor } from './paging';
import { isStorageFullError, isStoreBusyError } from './readiness';
import { currentRequestContext } from './request-context';

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
  /**
   * How long a statement of this connection waits, blocking its whole process, for another connection's write lock
   * (busy_timeout) once open; STORE_BUSY_TIMEOUT_MS when unset. A connection whose writes all go through
   * writeWhenUnlocked (the event log's) takes a short one: its waits are then made between tries, the process answering
   * meanwhile. Opening (WAL switch, migrations) waits STORE_BUSY_TIMEOUT_MS either way.
   */
  busyTimeoutMs?: number;
  /**
   * The largest store (page_count x page_size) openSqlite rewrites at open to rid it of deleted text from before
   * secure_delete (zeroFreePagesOnce); a larger one opens as it is, with a line saying how to rewrite it.
   * REWRITE_AT_OPEN_MAX_BYTES when unset.
   */
  rewriteAtOpenMaxBytes?: number;
  /** Where openSqlite says what it did at open (the one-time rewrite); a logger named `sqlite-store` when unset. */
  logger?: Logger;
}

/**
 * The largest store rewritten at open (VACUUM) to zero the deleted text of a release before secure_delete: 64 MiB,
 * well under a second (411 MB took about 5 s, docs/benchmarks.md). The rewrite stops the process (it is synchronous,
 * so no health probe is answered meanwhile), copies the store's content to a temporary file in the temp directory
 * (/tmp: a 256 MiB emptyDir in the Helm chart, exceeding it evicts the pod) and again into the WAL; a larger store
 * done at start could outlast the startup probe, be killed and start the rewrite again at every restart.
 */
export const REWRITE_AT_OPEN_MAX_BYTES = 64 * 1024 * 1024;

/**
 * How long a write waits for another connection's write lock (busy_timeout) before it fails with SQLITE_BUSY (answered
 * 503 Service busy): within a call, at most until the call's store-wait budget ends (RequestContext.storeWaitUntil), so
 * that several waits of one call together never outlast its caller's deadline (a 504 that says nothing of the cause).
 */
export const STORE_BUSY_TIMEOUT_MS = 5000;

/**
 * The size a WAL file is truncated to when SQLite resets it after a checkpoint: what the default auto-checkpoint (1000
 * pages of 4 KB) lets it reach anyway, so only a WAL grown past it by one large transaction is cut back.
 */
export const SQLITE_WAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024;

/** Opens (creating if needed) a SQLite file in WAL mode, then applies the migrations not applied yet, in order. */
export function openSqlite(path: string, migrations: readonly SqliteMigration[] = [], options: SqliteOpenOptions = {}): SqliteDatabase {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  // First, so that switching a new file to WAL and the migrations below wait for another process instead of failing.
  db.pragma(`busy_timeout = ${STORE_BUSY_TIMEOUT_MS}`);
  busyWaits.set(db, { usual: STORE_BUSY_TIMEOUT_MS, set: STORE_BUSY_TIMEOUT_MS });
  cachePreparedStatements(db);
  beginTransactionsImmediate(db);
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
  zeroFreePagesOnce(db, path, options.rewriteAtOpenMaxBytes ?? REWRITE_AT_OPEN_MAX_BYTES, () => options.logger ?? storeLogger());
  if (options.busyTimeoutMs !== undefined) {
    busyWaits.get(db)!.usual = options.busyTimeoutMs;
    boundBusyWait(db);
  }
  return db;
}

/** Per connection: its usual busy_timeout, the one set now, and the one writeWhenUnlocked sets for its tries. */
const busyWaits = new WeakMap<SqliteDatabase, { usual: number; set: number; trying?: number }>();

/**
 * Sets the connection's busy_timeout for the write about to start: its usual one, cut to what is left of the current
 * call's store-wait budget (RequestContext.storeWaitUntil; none left: fails at once), or writeWhenUnlocked's short one.
 * A pragma only when the value changes: a call's first STORE_BUSY_TIMEOUT_MS-odd ms leave it as it is.
 */
function boundBusyWait(db: SqliteDatabase): void {
  const state = busyWaits.get(db);
  if (!state) return;
  const until = currentRequestContext()?.storeWaitUntil;
  const left = until === undefined ? Infinity : Math.max(0, Math.floor(until - Date.now()));
  const wanted = Math.min(state.trying ?? state.usual, left);
  if (wanted === state.set) return;
  db.pragma(`busy_timeout = ${wanted}`);
  state.set = wanted;
}

/** How long one try of writeWhenUnlocked waits for the lock inside SQLite (blocking the process): a few ms. */
const UNLOCKED_TRY_WAIT_MS = 5;

/**
 * Makes `write` (one IMMEDIATE transaction or one statement: all or nothing, so trying it again is safe) once no other
 * connection holds the store's write lock, waiting for it between tries instead of inside SQLite: better-sqlite3's
 * busy wait is synchronous and froze the whole process (every other request of the service) for as long as the lock
 * was held, up to busy_timeout (a test holding events.db for 2 s: reads of the all-in-one answered in up to 2 s).
 * Each try waits UNLOCKED_TRY_WAIT_MS at most, then the event loop runs for 5 to 50 ms before the next. Gives up with
 * the store's SQLITE_BUSY after `waitMs` (STORE_BUSY_TIMEOUT_MS), or at the end of the current call's store-wait budget.
 */
export async function writeWhenUnlocked<T>(db: SqliteDatabase, write: () => T, waitMs: number = STORE_BUSY_TIMEOUT_MS): Promise<T> {
  const state = busyWaits.get(db);
  const budgetEnd = currentRequestContext()?.storeWaitUntil;
  const giveUpAt = Math.min(Date.now() + waitMs, budgetEnd ?? Infinity);
  for (let tries = 0; ; tries++) {
    if (state) state.trying = UNLOCKED_TRY_WAIT_MS;
    try {
      boundBusyWait(db);
      return write();
    } catch (err) {
      if (!isStoreBusyError(err) || Date.now() >= giveUpAt) throw err;
    } finally {
      if (state) state.trying = undefined;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(50, 5 * 2 ** Math.min(tries, 4), Math.max(1, giveUpAt - Date.now()))));
  }
}

/**
 * `repository` with each of `methods` (async methods writing to `db`) run inside an IMMEDIATE transaction begun by
 * writeWhenUnlocked: another process's lock is waited for between tries on the event loop, the process answering
 * meanwhile, instead of inside SQLite at the method's first write. The method is called once the lock is held; what it
 * does synchronously (all of a better-sqlite3 repository's work up to its first await) runs in that transaction, its
 * own transactions as savepoints of it, and is committed as it returns, whether it failed or not (its own transaction
 * already rolled its part back, as before). Anything after an await runs as it did, waiting inside SQLite. Only the
 * BEGIN can meet the lock, before the method runs, so a try that fails did nothing. Called inside a transaction
 * (one method from another's), a method runs as it is.
 */
export function writesWaitBetweenTries<R extends object>(repository: R, db: SqliteDatabase, methods: readonly (keyof R & string)[]): R {
  const target = repository as Record<string, unknown>;
  for (const name of methods) {
    const method = target[name];
    if (typeof method !== 'function') throw new Error(`writesWaitBetweenTries: ${name} is not a method`);
    target[name] = (...args: unknown[]): unknown => {
      if (db.inTransaction) return method.apply(repository, args);
      return writeWhenUnlocked(db, () => {
        db.exec('BEGIN IMMEDIATE');
        try {
          return method.apply(repository, args) as unknown;
        } finally {
          db.exec('COMMIT');
        }
      });
    };
  }
  return repository;
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
  // A file with nothing in it yet is this release's own: noted as zeroed (zeroFreePagesOnce) in the transaction of its
  // first step, so that another process opening it at the same moment sees the note and does not rewrite it.
  const isEmpty = () => (db.prepare('SELECT count(*) AS n FROM sqlite_schema').get() as { n: number }).n === 0;
  if (version() >= migrations.length) {
    if (isEmpty()) db.transaction(noteZeroed).immediate(db);
    return;
  }
  const applyNextStep = db.transaction((): boolean => {
    const current = version();
    if (current >= migrations.length) return false;
    if (current === 0 && isEmpty()) noteZeroed(db);
    const step = migrations[current]!;
    if (typeof step === 'string') db.exec(step);
    else step(db);
    db.pragma(`user_version = ${current + 1}`);
    return true;
  });
  while (applyNextStep.immediate());
}

/** The table where openSqlite notes upkeep done once per store (zeroFreePagesOnce). */
const UPKEEP_TABLE = 'store_upkeep';
const FREE_PAGES_ZEROED = 'deleted text zeroed (secure_delete)';

/** Notes in the store that it holds no deleted text from before secure_delete (zeroFreePagesOnce). */
function noteZeroed(db: SqliteDatabase): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${UPKEEP_TABLE} (name TEXT PRIMARY KEY, done_at TEXT NOT NULL)`);
  db.prepare(`INSERT OR IGNORE INTO ${UPKEEP_TABLE} (name, done_at) VALUES (?, ?)`).run(FREE_PAGES_ZEROED, new Date().toISOString());
}

let defaultStoreLogger: Logger | undefined;
function storeLogger(): Logger {
  defaultStoreLogger ??= createLogger('sqlite-store');
  return defaultStoreLogger;
}

/**
 * A store made before secure_delete (docs/decisions.md, "Deleted text is overwritten") keeps what was deleted until then
 * (a deleted card's text) in its free pages and in the free space of its pages: an operator's copy of the data dir
 * carried it. Such a store, up to `maxBytes`, is rewritten once (VACUUM: only what it holds, every page written anew),
 * and that is noted in the store (store_upkeep), so later starts only read the note. A larger one opens as it is, with
 * a line giving the command that rewrites and notes it with the services stopped (see REWRITE_AT_OPEN_MAX_BYTES for
 * why not at start). A store this release makes is noted at once; one whose lock another process holds past
 * busy_timeout, or whose disk has no room for the rewrite, is left for the next start (it still opens).
 */
function zeroFreePagesOnce(db: SqliteDatabase, path: string, maxBytes: number, logger: () => Logger): void {
  if (db.memory) return;
  const hasTable = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?").get(UPKEEP_TABLE) !== undefined;
  if (hasTable && db.prepare(`SELECT 1 FROM ${UPKEEP_TABLE} WHERE name = ?`).get(FREE_PAGES_ZEROED) !== undefined) return;
  const bytes = (db.pragma('page_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
  if (bytes > maxBytes) {
    logger().warn(
      { path, bytes, rewriteAtOpenMaxBytes: maxBytes },
      `this store was made before deleted text was overwritten and may still hold some (a deleted card's text) in its free pages; it is too large to rewrite at start (the start would stop for the whole rewrite). To rewrite it once, with every service using it stopped and free disk for twice its size: ${manualRewrite(path)}`,
    );
    return;
  }
  const started = performance.now();
  logger().info({ path, bytes }, 'rewriting this store once, to overwrite deleted text kept from before secure_delete');
  try {
    // VACUUM cannot run inside a transaction; another process may do the same at once (events.db): a second VACUUM is
    // only a second rewrite. It would also apply an auto_vacuum mode asked for but not in effect (openSqlite's
    // `autoVacuum` on an older file), which is SqliteEventLog's to decide by the file's size: the file's own is kept.
    db.pragma(`auto_vacuum = ${db.pragma('auto_vacuum', { simple: true }) as number}`);
    db.exec('VACUUM');
    db.transaction(noteZeroed).immediate(db);
  } catch (err) {
    // VACUUM writes the whole store again through the WAL: without room for that (or with the lock held past
    // busy_timeout) the store opens as it is and the next start tries again.
    if (!isStoreBusyError(err) && !isStorageFullError(err)) throw err;
    logger().warn({ err, path, bytes }, `could not rewrite this store at start (tried again at the next start; or, with the services stopped: ${manualRewrite(path)})`);
    return;
  }
  logger().info({ path, bytes, ms: Math.round(performance.now() - started) }, 'this store was rewritten once: deleted text kept from before secure_delete is overwritten');
}

/** The sqlite3 shell command that does what zeroFreePagesOnce does, for a store too large to rewrite at start. */
function manualRewrite(path: string): string {
  return `sqlite3 '${path}' "VACUUM; CREATE TABLE IF NOT EXISTS ${UPKEEP_TABLE} (name TEXT PRIMARY KEY, done_at TEXT NOT NULL); INSERT OR IGNORE INTO ${UPKEEP_TABLE} (name, done_at) VALUES ('${FREE_PAGES_ZEROED}', strftime('%Y-%m-%dT%H:%M:%fZ'));"`;
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
  // The wait for the lock is bounded by the call's store-wait budget (boundBusyWait), set just before BEGIN; a DEFERRED
  // transaction takes no lock at its begin, and one that writes later is answered SQLITE_BUSY at once when held.
  db.transaction = ((fn: Parameters<SqliteDatabase['transaction']>[0]) => {
    const variants = transaction(fn);
    const bounded = (variant: (...args: unknown[]) => unknown) => (...args: unknown[]) => {
      if (!db.inTransaction) boundBusyWait(db);
      return variant(...args);
    };
    const immediate = bounded(variants.immediate);
    return Object.assign(immediate, { default: immediate, immediate, exclusive: bounded(variants.exclusive), deferred: variants.deferred, database: db });
  }) as SqliteDatabase['transaction'];
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
    // A write outside a transaction takes the write lock itself: its wait is bounded as a transaction's is.
    if (!statement.reader) {
      const run = statement.run.bind(statement);
      statement.run = ((...params: unknown[]) => {
        if (!db.inTransaction) boundBusyWait(db);
        return run(...(params as []));
      }) as typeof statement.run;
    }
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
