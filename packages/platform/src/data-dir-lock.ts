import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { checkServiceFilesUsable, explainDataDirAccess } from './data-dir-ownership';

/** What a lock file holds: the process that opened the service's embedded stores. */
export interface DataDirLockHolder {
  service: string;
  pid: number;
  host: string;
  startedAt: string;
  /**
   * Where /proc tells (Linux): the holder's process start time, field 22 of /proc/<pid>/stat (clock ticks since boot),
   * and the boot it ran in (/proc/sys/kernel/random/boot_id). A live pid whose start time or boot differs is another
   * process that took the dead holder's pid. Absent without /proc (macOS) and in locks of earlier releases.
   */
  startTicks?: string;
  bootId?: string;
}

/** A service's hold on its embedded stores in a data dir; release() at the service's stop. */
export interface DataDirLock {
  readonly path: string;
  release(): void;
}

/** Thrown when another live process (or one on another host) holds the service's lock in the data dir. */
export class DataDirLockedError extends Error {
  constructor(
    message: string,
    readonly path: string,
    readonly holder: DataDirLockHolder | undefined,
  ) {
    super(message);
    this.name = 'DataDirLockedError';
  }
}

/** The locks this process holds: path, the content it wrote, and how many starts hold it (the all-in-one, tests). */
const held = new Map<string, { content: string; count: number }>();
let exitHookInstalled = false;
let heartbeat: NodeJS.Timeout | undefined;

/** How often a holder touches its lock file (its modification time is the holder's heartbeat). */
export const LOCK_HEARTBEAT_MS = 10_000;
/**
 * A lock of another host whose heartbeat is older than this is stale: that host's process is gone (a pod replaced
 * after a node failure or a SIGKILL, on the same volume under a new host name) — otherwise the new pod could never
 * start without someone deleting the file by hand.
 */
export const LOCK_STALE_AFTER_MS = 60_000;

/**
 * One process per service on a data dir's embedded SQLite stores (docs/decisions.md, "One process per embedded
 * store"): takes `<DATA_DIR>/<service>.lock`, made with an exclusive create holding the pid, host and start time (and,
 * where /proc tells, the process's start time in ticks since boot and the boot id). A lock of a dead process on this
 * host (its pid gone, this very pid: a container restarted with the same pid, or a live pid that /proc shows started
 * at another time or in another boot: an unrelated process that took the dead holder's pid, or one /proc shows ended
 * and not yet reaped, a zombie), or of
 * another host whose holder has not touched it for LOCK_STALE_AFTER_MS (holders touch it every LOCK_HEARTBEAT_MS), is
 * stale and taken over; a lock of a live process, or of another host with a recent heartbeat, refuses the start with a DataDirLockedError naming the file and the holder. Within one process the lock is shared
 * (the all-in-one runs each service once; tests start a service again in one process): held until every holder
 * released it, or the process exits. The shared event log (events.db) takes no lock: several services open it.
 * A data dir, lock or store file of another user (a restore by `cp -r` as root) fails the start with a
 * DataDirNotUsableError naming the path, its owner, this process's uid and the chown (data-dir-ownership.ts).
 */
export function lockServiceDataDir(dataDir: string, service: string): DataDirLock {
  const directory = resolve(dataDir);
  const path = join(directory, `${service}.lock`);
  const own = held.get(path);
  if (own) {
    own.count++;
    return handle(path);
  }
  const content = `${JSON.stringify({ service, pid: process.pid, host: hostname(), startedAt: new Date().toISOString(), ...processStart(process.pid) } satisfies DataDirLockHolder)}\n`;
  try {
    mkdirSync(directory, { recursive: true });
    sweepLeftovers(directory, service);
    for (let round = 0; ; round++) {
      if (created(path, content)) break;
      const found = readHolder(path);
      if (found === 'gone') continue;
      const staleBecause = found.holder ? staleReason(found.holder, found.touchedAt) : undefined;
      if (staleBecause === undefined || round >= 5) throw lockedError(path, service, found);
      takeOverStale(path, found.text);
    }
  } catch (err) {
    throw explainDataDirAccess(err, directory);
  }
  try {
    checkServiceFilesUsable(directory, service);
  } catch (err) {
    removeIfOurs(path, content);
    throw err;
  }
  held.set(path, { content, count: 1 });
  heartbeat ??= setInterval(touchHeldLocks, LOCK_HEARTBEAT_MS).unref();
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const [lockPath, lock] of held) removeIfOurs(lockPath, lock.content);
    });
  }
  return handle(path);
}

function handle(path: string): DataDirLock {
  let released = false;
  return {
    path,
    release() {
      const lock = held.get(path);
      if (released || !lock) return;
      released = true;
      if (--lock.count > 0) return;
      held.delete(path);
      removeIfOurs(path, lock.content);
      if (held.size === 0 && heartbeat) {
        clearInterval(heartbeat);
        heartbeat = undefined;
      }
    },
  };
}

/** The lock file made with its whole content at once (written beside it, then linked: link fails when it exists). */
function created(path: string, content: string): boolean {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    writeFileSync(temporary, content, { mode: 0o644 });
  } catch (err) {
    // A full disk (ENOSPC) may leave the file made but empty or cut: removed, as the start fails.
    removeQuietly(temporary);
    throw err;
  }
  try {
    linkSync(temporary, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    unlinkSync(temporary);
  }
}

function touchHeldLocks(): void {
  const now = new Date();
  for (const path of held.keys()) {
    try {
      utimesSync(path, now, now);
    } catch {
      // removed by hand meanwhile: nothing to touch; the next start takes the store
    }
  }
}

function readHolder(path: string): { text: string; holder: DataDirLockHolder | undefined; touchedAt: number } | 'gone' {
  let text: string;
  let touchedAt: number;
  try {
    touchedAt = statSync(path).mtimeMs;
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<DataDirLockHolder>;
    if (typeof parsed.pid === 'number' && typeof parsed.host === 'string') return { text, holder: parsed as DataDirLockHolder, touchedAt };
  } catch {
    // not a lock this code wrote: refused below, naming the file
  }
  return { text, holder: undefined, touchedAt };
}

/** Why a holder is known dead, or undefined when it may be alive. */
function staleReason(holder: DataDirLockHolder, touchedAt: number): string | undefined {
  if (holder.host !== hostname()) {
    const silentMs = Date.now() - touchedAt;
    return silentMs > LOCK_STALE_AFTER_MS ? `no heartbeat from host ${holder.host} for ${Math.round(silentMs / 1000)} s` : undefined;
  }
  // Not held in this process (checked first): a former process that had this pid, e.g. a container's restart.
  if (holder.pid === process.pid) return 'this pid, not holding it';
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return 'no such process';
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  // A process that ended but that its parent has not reaped (a zombie) still answers signal 0: /proc tells it is dead.
  if (isDeadProcess(holder.pid)) return `pid ${holder.pid} has ended (a zombie its parent has not reaped)`;
  // The pid lives (or is another user's): the holder only if it is the process that wrote the lock. Unknown (no /proc,
  // a lock of an earlier release, /proc hiding other users' processes): may be alive, as before.
  if (holder.startTicks === undefined || holder.bootId === undefined) return undefined;
  const live = processStart(holder.pid);
  if (!live) return undefined;
  if (live.bootId !== holder.bootId) return `pid ${holder.pid} is another process (this host restarted since the lock was written)`;
  if (live.startTicks !== holder.startTicks) return `pid ${holder.pid} is another process (started at another time than the holder)`;
  return undefined;
}

/**
 * A process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot) and this host's boot id, or undefined
 * where /proc does not tell (macOS, a pid gone or hidden meanwhile).
 */
function processStart(pid: number): { startTicks: string; bootId: string } | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const startTicks = fields[22 - 3];
    const bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return startTicks && /^\d+$/.test(startTicks) && bootId ? { startTicks, bootId } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether /proc shows the pid as a process that has ended: state Z (a zombie: exited, not yet reaped by its parent) or
 * X (dead). False where /proc does not tell.
 */
function isDeadProcess(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state === 'Z' || state === 'X';
  } catch {
    return false;
  }
}

/** A pid of this host that names no live process: gone (ESRCH) or ended and not yet reaped. */
function deadOnThisHost(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
  return isDeadProcess(pid);
}

/**
 * Removes what a start of `service` that died midway left beside the lock: `<service>.lock.<pid>.<hex>.tmp` (the lock's
 * content being written: a full disk, a kill) and `.stale` (a stale lock being removed), of a pid of this host that is
 * dead. The data dir may be shared by hosts (a volume moved to a new pod): a file is another host's, which may be
 * writing it right now, unless its content names this host, or it is older than LOCK_STALE_AFTER_MS (a cut write names
 * no host).
 */
function sweepLeftovers(directory: string, service: string): void {
  let names: string[];
  try {
    names = readdirSync(directory);
  } catch {
    return;
  }
  const prefix = `${service}.lock.`;
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const parts = /^(\d+)\.[0-9a-f]{8}\.(?:tmp|stale)$/.exec(name.slice(prefix.length));
    if (!parts || !deadOnThisHost(Number(parts[1]))) continue;
    const path = join(directory, name);
    try {
      const old = Date.now() - statSync(path).mtimeMs > LOCK_STALE_AFTER_MS;
      if (old || (JSON.parse(readFileSync(path, 'utf8')) as Partial<DataDirLockHolder>).host === hostname()) removeQuietly(path);
    } catch {
      // gone meanwhile, or a cut write not yet old enough: left for a later start
    }
  }
}

function removeQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already: nothing to remove
  }
}

/**
 * Moves the stale lock aside and removes it. Two processes taking it over at once: only one rename finds it; one that
 * moved a lock written meanwhile (not the stale text it read) puts it back, and the next round refuses on it.
 */
function takeOverStale(path: string, staleText: string): void {
  const aside = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.stale`;
  try {
    renameSync(path, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    if (readFileSync(aside, 'utf8') !== staleText) {
      try {
        linkSync(aside, path);
      } catch {
        // another process made the lock again meanwhile: it holds it
      }
    }
  } finally {
    unlinkSync(aside);
  }
}

function removeIfOurs(path: string, content: string): void {
  try {
    if (readFileSync(path, 'utf8') === content) unlinkSync(path);
  } catch {
    // gone already, or unreadable: nothing of ours to remove
  }
}

function lockedError(path: string, service: string, found: { text: string; holder: DataDirLockHolder | undefined; touchedAt: number }): DataDirLockedError {
  const { holder } = found;
  if (!holder) {
    return new DataDirLockedError(
      `${path} exists but is not a lock this service reads (${JSON.stringify(found.text.slice(0, 200))}): another ${service} process may have this data dir's embedded store open. If none runs on it, delete the file and start again`,
      path,
      undefined,
    );
  }
  const where = holder.host === hostname() ? `pid ${holder.pid} on this host` : `pid ${holder.pid} on host ${holder.host}`;
  const ifGone = holder.host === hostname() ? 'stop that process first' : `wait: a lock whose holder stopped touching it is taken over ${LOCK_STALE_AFTER_MS / 1000} s after its last heartbeat (or, if that process is surely gone, delete ${path} and start again)`;
  return new DataDirLockedError(
    `another ${service} process (${where}, started ${holder.startedAt}) holds ${path}: one process opens a data dir's embedded ${service} store. Give each process its own DATA_DIR, use MongoDB for replicas, or ${ifGone}`,
    path,
    holder,
  );
}
