import Database from 'better-sqlite3';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

/** The embedded event log, relative to DATA_DIR: copied after every other store (see backUpDataDir). */
export const EVENT_LOG_FILE = join('events', 'events.db');

/** Steps of a backup a test can act between (what another process does while a backup runs). */
export interface DataDirBackupHooks {
  /** After the consumer positions were read, before any store is copied. */
  afterPositionsRead?(): Promise<void> | void;
  /** After every service store was copied, before the event log is. */
  afterStoresCopied?(): Promise<void> | void;
}

export interface DataDirBackupResult {
  /** The SQLite stores copied, relative to DATA_DIR, the event log last. */
  stores: string[];
  /** Other files copied (file bytes, the session secret, mail). */
  files: number;
  /** Consumer positions in the copy set back to where they were when the backup began. */
  positionsSetBack: number;
}

/** Thrown when a backup cannot be made as asked (no data dir, a target that already exists). */
export class DataDirBackupError extends Error {}

const SQLITE_SIDE_FILE = /\.db-(wal|shm|journal)$/;
const LOCK_FILE = /\.lock($|\.)/;

/**
 * Copies an embedded DATA_DIR while its services run, into `target` (which must not exist), so that the copy restores
 * like a copy made with the services stopped: put it in place of DATA_DIR and start.
 *
 * Each SQLite store is copied with `VACUUM INTO` (one read transaction: the store as it was at one moment, never torn
 * like a file copy of a database and its -wal). The stores are copied at different moments, so the order keeps them
 * consistent with each other: a service's outbox marks an event published only after the event log holds it, so every
 * service store is copied before the log (what a copied outbox calls published is in the copied log; what it still
 * holds may be published again: consumers are idempotent by event id). A consumer applies an event to its store before
 * it commits its position in the log, so the positions in the copied log are set back to where they were before any
 * store was copied: a consumer that applied an event after its store was copied receives it again after the restore
 * instead of never. Other files (file bytes, the session secret, mail) are copied before the stores and again after
 * them, so a file record in the copy has its bytes whether they were written during the backup or removed.
 * The copy is made in `<target>.partial` and renamed at the end: a backup cut short is never taken for one.
 */
export async function backUpDataDir(dataDir: string, target: string, hooks: DataDirBackupHooks = {}): Promise<DataDirBackupResult> {
  if (!existsSync(dataDir) || !lstatSync(dataDir).isDirectory()) throw new DataDirBackupError(`no data dir at ${dataDir}`);
  if (existsSync(target)) throw new DataDirBackupError(`${target} exists already: give the backup a new directory`);
  const inside = relative(resolve(dataDir), resolve(target));
  // The copy would copy itself, and the next backup (or a restore) would take it for stores of the data dir.
  if (inside !== '..' && !inside.startsWith(`..${sep}`) && !isAbsolute(inside)) throw new DataDirBackupError(`${target} is inside the data dir ${dataDir}: put the backup outside it`);
  const partial = `${target}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true, mode: 0o700 });

  const logPath = join(dataDir, EVENT_LOG_FILE);
  const positionsAtStart = existsSync(logPath) ? readPositions(logPath) : [];
  await hooks.afterPositionsRead?.();

  const { stores, others } = listDataDir(dataDir);
  let files = copyOtherFiles(dataDir, partial, others);
  const copied: string[] = [];
  for (const store of stores.filter((s) => s !== EVENT_LOG_FILE)) {
    copyStore(join(dataDir, store), join(partial, store));
    copied.push(store);
  }
  files += copyOtherFiles(dataDir, partial, listDataDir(dataDir).others);
  await hooks.afterStoresCopied?.();

  let positionsSetBack = 0;
  if (existsSync(logPath)) {
    copyStore(logPath, join(partial, EVENT_LOG_FILE));
    copied.push(EVENT_LOG_FILE);
    positionsSetBack = setPositionsBack(join(partial, EVENT_LOG_FILE), positionsAtStart);
  }
  renameSync(partial, target);
  return { stores: copied, files, positionsSetBack };
}

interface Position {
  group_id: string;
  topic: string;
  seq: number;
}

function readPositions(logPath: string): Position[] {
  const db = new Database(logPath, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    return db.prepare('SELECT group_id, topic, seq FROM consumer_offsets').all() as Position[];
  } finally {
    db.close();
  }
}

/** Every group in the copied log back to its position at the start; a group that had none then reads from the start. */
function setPositionsBack(copiedLog: string, atStart: readonly Position[]): number {
  const db = new Database(copiedLog, { fileMustExist: true });
  try {
    const before = new Map(atStart.map((p) => [`${p.group_id}\u0000${p.topic}`, p.seq]));
    const now = db.prepare('SELECT group_id, topic, seq FROM consumer_offsets').all() as Position[];
    const set = db.prepare('UPDATE consumer_offsets SET seq = ? WHERE group_id = ? AND topic = ?');
    let changed = 0;
    db.transaction(() => {
      for (const p of now) {
        const seq = Math.min(p.seq, before.get(`${p.group_id}\u0000${p.topic}`) ?? 0);
        if (seq !== p.seq) changed += set.run(seq, p.group_id, p.topic).changes;
      }
    })();
    return changed;
  } finally {
    db.close();
  }
}

function copyStore(from: string, to: string): void {
  mkdirSync(join(to, '..'), { recursive: true, mode: 0o700 });
  const db = new Database(from, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    db.prepare('VACUUM INTO ?').run(to);
  } finally {
    db.close();
  }
}

/** The data dir's SQLite stores and its other files (relative paths), without SQLite's side files, locks and temporaries. */
function listDataDir(dataDir: string): { stores: string[]; others: string[] } {
  const stores: string[] = [];
  const others: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
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
      count++;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return count;
}
