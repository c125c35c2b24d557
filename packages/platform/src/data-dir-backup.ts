import Database from 'better-sqlite3';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { open } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { errorMessage } from './errors';

/** A step of a backup a test can act in (what another process does while a backup runs). */
export interface DataDirBackupHooks {
  /** After the data dir was listed and its other files copied a first time, before the write locks are taken. */
  beforeHold?(): Promise<void> | void;
  /** While every store is held against writes, after a read snapshot of each was begun. */
  whileWritesHeld?(): Promise<void> | void;
  /** Once per store, after the hold was let go, while that store's copy is under way (its first pages not yet copied). */
  whileCopying?(store: string): void;
}

export interface DataDirBackupResult {
  /** The SQLite stores copied, relative to DATA_DIR. */
  stores: string[];
  /** Stores listed at the start and removed before the backup's moment (its hold): not in the data dir then, nor in the copy. */
  gone: string[];
  /** Other files copied (file bytes, the session secret, mail). */
  files: number;
  /** How long writes to the stores were held: the time to begin a read snapshot of each, not the copy. */
  writesHeldMs: number;
}

/**
 * Thrown when a backup cannot be made as asked (no data dir, one without stores, a target that already exists or lies
 * inside it, a store removed while its snapshot was begun).
 */
export class DataDirBackupError extends Error {}

const SQLITE_SIDE_FILE = /\.db-(wal|shm|journal)$/;
const LOCK_FILE = /\.lock($|\.)/;
/** Below the services' own busy_timeout (5 s, sqlite.ts): when a service holds a store that long, the backup gives way. */
const HOLD_BUSY_TIMEOUT_MS = 2000;
const HOLD_ATTEMPTS = 5;

/**
 * Copies an embedded DATA_DIR while its services run, into `target` (which must not exist and not lie inside it), so
 * that the copy restores like a copy made with the services stopped: put it in place of DATA_DIR and start.
 *
 * The stores refer to each other (an outbox and the event log it publishes to; a consumer's store and its position in
 * the log; cards and the search index), so they are copied at one moment: the backup takes every store's write lock
 * (BEGIN IMMEDIATE: readers go on, writers wait within their busy_timeout), begins a read transaction on each from
 * another connection (in WAL mode it pins the store as it is at that moment until it ends), and lets go of the write
 * locks: writes wait milliseconds, not for the copy. Each store is then copied through its pinned snapshot with
 * SQLite's online backup API from the connection holding it (sqlite3_backup_step uses the source's open read
 * transaction, so writes committed meanwhile are in no copy and do not restart it), lets go of that snapshot, and
 * rewrites the page copy without its free pages (compactStore). Other files (file bytes, the session secret, mail) are copied before the stores and again
 * after them, so a file record in the copy has its bytes whether they were written during the backup or removed after.
 * The copy is made in `<target>.partial`, flushed to disk (each file, then each directory: syncTree) and only then
 * renamed to `<target>`, whose parent directory is flushed last: a backup cut short, by a kill or a power cut, is never
 * found under the target's name, and one found there is whole (without the flush, a power cut after the rename could
 * leave the renamed directory with empty or torn files, the write-back of their pages not done yet).
 * A store listed at the start and removed before the hold is not in the data dir at the backup's moment: it is left out
 * (`gone`), as a copy made with the services stopped at that moment would; once its snapshot is begun, its removal does
 * not matter (the snapshot reads the open file). A data dir without any store is refused: it is not a services' data dir.
 */
export async function backUpDataDir(dataDir: string, asked: string, hooks: DataDirBackupHooks = {}): Promise<DataDirBackupResult> {
  // Without its trailing slash (`backup /backups/today/`, as a shell completes a directory): `<target>/.partial` would
  // be made inside the target, leaving an empty directory under the finished backup's name when the rename fails.
  const target = resolve(asked);
  if (!existsSync(dataDir) || !lstatSync(dataDir).isDirectory()) throw new DataDirBackupError(`no data dir at ${dataDir}`);
  const inside = relative(resolve(dataDir), resolve(target));
  // The copy would copy itself, and the next backup (or a restore) would take it for stores of the data dir.
  if (inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside)) throw new DataDirBackupError(`${target} is inside the data dir ${dataDir}: put the backup outside it`);
  if (existsSync(target)) throw new DataDirBackupError(`${target} exists already: give the backup a new directory`);
  const partial = `${target}.partial`;
  const claim = `${partial}.pid`;
  claimPartial(claim, target);
  try {
    // Again under the claim: a backup into it that ended meanwhile made it.
    if (existsSync(target)) throw new DataDirBackupError(`${target} exists already: give the backup a new directory`);
    return await backUpInto(dataDir, target, partial, hooks);
  } finally {
    rmSync(claim, { force: true });
  }
}

/**
 * Takes `<target>.partial.pid` for this run (pid and host), made at once or not at all: a second backup into the same
 * target while one runs (a cron job overlapping a manual run) would remove the first's `.partial` and write into it,
 * the two copies mixed. One left by a backup that was killed (its pid gone on this host, or unreadable) is taken over;
 * one of a live process, or of another host, refuses the backup, naming it.
 */
function claimPartial(claim: string, target: string): void {
  mkdirSync(dirname(claim), { recursive: true, mode: 0o700 });
  for (let attempt = 1; ; attempt++) {
    try {
      writeFileSync(claim, JSON.stringify({ pid: process.pid, host: hostname() }), { flag: 'wx', mode: 0o600 });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 1) throw err;
    }
    let holder: { pid?: unknown; host?: unknown } | undefined;
    try {
      holder = JSON.parse(readFileSync(claim, 'utf8')) as { pid?: unknown; host?: unknown };
    } catch {
      holder = undefined;
    }
    if (holder && typeof holder.pid === 'number' && !(holder.host === hostname() && pidGone(holder.pid))) {
      throw new DataDirBackupError(
        `another backup into ${target} is under way (pid ${holder.pid} on ${String(holder.host)}, ${claim}): wait for it to end, or remove ${claim} if that process has stopped`,
      );
    }
    rmSync(claim, { force: true });
  }
}

/** Whether no process of this host has that pid (ESRCH). */
function pidGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

async function backUpInto(dataDir: string, target: string, partial: string, hooks: DataDirBackupHooks): Promise<DataDirBackupResult> {
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true, mode: 0o700 });
  try {
    const { stores: listed, others } = listDataDir(dataDir);
    let files = copyOtherFiles(dataDir, partial, others);
    await hooks.beforeHold?.();
    const { stores, held } = await holdEveryStore(dataDir, listed);
    // None held (none to hold): a wrong DATA_DIR rather than a system to back up, which an empty copy would hide.
    if (stores.length === 0) throw new DataDirBackupError(`no SQLite store (*.db) in ${dataDir}: is DATA_DIR the services' data dir? Nothing was backed up`);
    const heldAt = performance.now();
    let writesHeldMs: number;
    const snapshots: Database.Database[] = [];
    try {
      try {
        for (const store of stores) snapshots.push(beginSnapshot(dataDir, store));
        await hooks.whileWritesHeld?.();
      } finally {
        letGo(held);
        writesHeldMs = Math.round(performance.now() - heldAt);
      }
      for (const [i, snapshot] of snapshots.entries()) {
        const store = stores[i] as string;
        const pages = join(partial, `${store}${PAGE_COPY_SUFFIX}`);
        await copyStore(snapshot, pages, () => hooks.whileCopying?.(store));
        // Copied: its snapshot is let go now, not after the other stores' copies, so that the services' checkpoints
        // of this store pass again and its -wal stops growing (and is cut back at its next reset).
        letGo([snapshot]);
        compactStore(pages, join(partial, store));
      }
    } finally {
      letGo(snapshots);
    }
    files += copyOtherFiles(dataDir, partial, listDataDir(dataDir).others);
    try {
      await syncTree(partial);
    } catch (err) {
      throw new DataDirBackupError(`backup failed: the copy could not be flushed to disk (${errorMessage(err)}); nothing was kept and ${target} was not made: check that disk`);
    }
    renameSync(partial, target);
    try {
      await syncPath(dirname(target), { directory: true });
    } catch (err) {
      // The copy is whole and named: removing it would not help; the operator decides what a failing disk is worth.
      throw new DataDirBackupError(
        `backup failed at its last step: the copy is whole at ${target} (every file flushed), but its name could not be flushed to disk (${errorMessage(err)}): a power cut now could lose it; check that disk, then keep it or back up again into a new directory`,
      );
    }
    return { stores, gone: listed.filter((store) => !stores.includes(store)), files, writesHeldMs };
  } catch (err) {
    rmSync(partial, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Holds the write lock of every store of the data dir, those listed and any made since (a service started for the
 * first time while the other files were copied): a store left out would be missing from the copy while the event log,
 * copied at the hold, already has its consumer's position. Listed again under the hold, and held again until the stores
 * held are the stores listed: a store made after that is made after the moment the copy stands for, and a store
 * removed before it (not there to open, or removed once opened) is not in the data dir at that moment.
 */
async function holdEveryStore(dataDir: string, listed: readonly string[]): Promise<{ stores: string[]; held: Database.Database[] }> {
  let stores = [...listed];
  for (;;) {
    const { held, opened } = await holdWrites(dataDir, stores);
    const now = listDataDir(dataDir).stores;
    if (now.length === opened.length && now.every((store, i) => store === opened[i])) return { stores: opened, held };
    letGo(held);
    stores = now;
  }
}

/**
 * Connections holding the write lock of every store at once (those of `stores` still there: `opened`); a store a
 * service keeps busy makes it let go and try again.
 */
async function holdWrites(dataDir: string, stores: readonly string[]): Promise<{ held: Database.Database[]; opened: string[] }> {
  for (let attempt = 1; ; attempt++) {
    const held: Database.Database[] = [];
    const opened: string[] = [];
    try {
      for (const store of stores) {
        const db = openStore(dataDir, store);
        if (!db) continue;
        held.push(db);
        opened.push(store);
        db.pragma(`busy_timeout = ${HOLD_BUSY_TIMEOUT_MS}`);
        db.exec('BEGIN IMMEDIATE');
      }
      return { held, opened };
    } catch (err) {
      letGo(held);
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || attempt >= HOLD_ATTEMPTS) throw err;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}

/**
 * A connection to an existing store, or undefined when it is not there (removed since it was listed: better-sqlite3
 * answers a TypeError for a missing directory, SQLITE_CANTOPEN for a missing file; any other failure is thrown).
 */
function openStore(dataDir: string, store: string): Database.Database | undefined {
  const path = join(dataDir, store);
  try {
    return new Database(path, { fileMustExist: true });
  } catch (err) {
    if (!existsSync(path)) return undefined;
    throw err;
  }
}

/**
 * A connection holding a read transaction on the store: in WAL mode it sees the store as it was when the transaction
 * began (its first read) until it ends, whatever is committed meanwhile. Begun while the store's write lock is held.
 */
function beginSnapshot(dataDir: string, store: string): Database.Database {
  // Removed between the listing under the hold and this open (the hold does not stop an unlink): too late to leave out.
  const db = openStore(dataDir, store);
  if (!db) throw new DataDirBackupError(`${store} was removed from ${dataDir} while the backup began its copy: run the backup again`);
  try {
    db.pragma('busy_timeout = 5000');
    db.exec('BEGIN');
    db.prepare('SELECT count(*) FROM sqlite_schema').get();
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Ends each connection's transaction (a write lock held, a snapshot pinned) and closes it; one closed already is skipped. */
function letGo(connections: readonly Database.Database[]): void {
  for (const db of connections) {
    if (!db.open) continue;
    if (db.inTransaction) db.exec('ROLLBACK');
    db.close();
  }
}

/** The page copy of a store in the `.partial` directory, before compactStore rewrites it under the store's name. */
const PAGE_COPY_SUFFIX = '.pages';

/**
 * Rewrites a store's page copy (`from`, removed after) into `to` without its free pages, with `VACUUM INTO` (the page
 * copy is a private file no one else uses: nothing waits for it). A page copy keeps every free page as it is, and a
 * store made before secure_delete (docs/decisions.md, "Deleted text is overwritten") still has deleted cards' text in
 * its free pages and cells: the copy holds only what the store holds. secure_delete is not enough either, so no copy
 * is kept as it is, not even one without free pages: a page rebuilt when its b-tree balanced keeps bytes of the cells
 * it held before in its unused space (SQLite zeroes a deleted cell, not that gap), so a card deleted later can still be
 * read there (docs/decisions.md, "The backup rewrites every store's copy"). Page size, auto_vacuum and user_version
 * are kept; `VACUUM INTO` writes a rollback-journal file, so the copy is put back in WAL mode, as the services keep it.
 */
function compactStore(from: string, to: string): void {
  const pages = new Database(from, { fileMustExist: true });
  try {
    pages.prepare('VACUUM INTO ?').run(to);
  } finally {
    pages.close();
  }
  for (const side of ['', '-wal', '-shm']) rmSync(`${from}${side}`, { force: true });
  const copy = new Database(to, { fileMustExist: true });
  try {
    copy.pragma('journal_mode = WAL');
  } finally {
    copy.close();
  }
}

/** How many flushes are under way at once (libuv's pool runs 4): the file system commits concurrent ones together. */
const FLUSHES_AT_ONCE = 8;

/**
 * Flushes every file under `dir` and every directory (its entries: names, renames) to stable storage, as `sync` would
 * for this tree only: SQLite's backup syncs the page copy, but `VACUUM INTO` does not sync what it writes (SQLite's
 * documentation says so), nor does copyFile, nor does anything the directory entries. Several at once: one after the
 * other, each fsync of a small file waits for its own journal commit (4,000 mails: 12 s here, 0.6 s 4 at once).
 */
async function syncTree(dir: string): Promise<void> {
  const files: string[] = [];
  const directories: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(at, entry.name));
      else files.push(join(at, entry.name));
    }
    directories.push(at);
  };
  walk(dir);
  for (const [paths, directory] of [[files, false], [directories, true]] as const) {
    let next = 0;
    await Promise.all(
      Array.from({ length: FLUSHES_AT_ONCE }, async () => {
        while (next < paths.length) await syncPath(paths[next++] as string, { directory });
      }),
    );
  }
}

/**
 * fsync of one file or directory (opened read-only, which fsync allows on Linux and macOS). A file system that cannot
 * fsync a directory at all (EINVAL, EBADF: some network and FUSE mounts) is let be for directories, as PostgreSQL does;
 * any failure to flush a file fails the backup.
 */
async function syncPath(path: string, { directory = false } = {}): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Named: the handle's error ('EIO: i/o error, fsync') does not say which file.
    if (!directory || (code !== 'EINVAL' && code !== 'EBADF')) throw Object.assign(new Error(`${path}: ${errorMessage(err)}`), { code });
  } finally {
    await handle.close();
  }
}

/** Pages copied per step of SQLite's backup (4 MB of 4 KB pages); between steps the process's event loop runs. */
const PAGES_PER_STEP = 1024;

/**
 * Copies the store as its connection's open read transaction sees it (SQLite's backup API reads through it: a page
 * copy, never torn, and the copy keeps the store's WAL mode) into `to`.
 */
async function copyStore(snapshot: Database.Database, to: string, underWay: () => void): Promise<void> {
  mkdirSync(join(to, '..'), { recursive: true, mode: 0o700 });
  let started = false;
  await snapshot.backup(to, {
    progress: () => {
      if (!started) {
        started = true;
        underWay();
      }
      return PAGES_PER_STEP;
    },
  });
}

/**
 * The data dir's SQLite stores and its other files (relative paths), without SQLite's side files, locks and
 * temporaries; a directory under it removed while it is listed is left out.
 */
function listDataDir(dataDir: string): { stores: string[]; others: string[] } {
  const stores: string[] = [];
  const others: string[] = [];
  const walk = (dir: string) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      // A directory removed between its parent's listing and its own holds nothing at the backup's moment.
      if (dir !== dataDir && (err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== '.tmp') walk(path);
      } else if (entry.isFile()) {
        const name = relative(dataDir, path);
        if (SQLITE_SIDE_FILE.test(entry.name) || LOCK_FILE.test(entry.name) || entry.name.endsWith('.tmp')) continue;
        (entry.name.endsWith('.db') ? stores : others).push(name);
      }
    }
  };
  walk(dataDir);
  return { stores: stores.sort(), others };
}

/** Copies the files not in the copy yet (one removed meanwhile is skipped); answers how many it copied. */
function copyOtherFiles(dataDir: string, copy: string, names: readonly string[]): number {
  let count = 0;
  for (const name of names) {
    const to = join(copy, name);
    if (existsSync(to)) continue;
    mkdirSync(join(to, '..'), { recursive: true, mode: 0o700 });
    try {
      copyFileSync(join(dataDir, name), to);
      // copyFile keeps the source's mode whatever the umask: a file an earlier release left 0644 is made private too.
      chmodSync(to, 0o600);
      count++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return count;
}
