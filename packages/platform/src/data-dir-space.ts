import { statfs } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { Logger } from './logger';
import { ConfigError, keepsNothingUnderDataDir } from './config';
import { errorMessage } from './errors';
import { isStorageFullError } from './readiness';
import { monotonicNow, repeatedWarningLog } from './repeated-warning';
import { sampledGauge } from './service-metrics';

/**
 * Bytes free on the data dir's file system for this process (statfs: bavail × bsize, what an unprivileged writer may
 * still use), read at each scrape: the operator's alert before writes start failing "Storage is full" (docs/deploy.md).
 * Labelled with the watching process's role (`process`: all-in-one, or the service started on its own), so a process that
 * watches none (its stores all on MongoDB, Kafka...) has no sample at all rather than a label-less gauge's 0, which would
 * look like a full disk. Never the data dir's path: the all-in-one serves /metrics on its public port.
 */
export const dataDirFreeBytes = sampledGauge('cards_data_dir_free_bytes', "Bytes free on the data dir's file system (DATA_DIR), as this process may still use them", ['process']);

/** Default of DATA_DIR_FREE_WARNING_MB: below 100 MB free, a warning. */
export const DATA_DIR_FREE_WARNING_MB = 100;

/** How often the free space is checked against the floor. */
export const DATA_DIR_SPACE_CHECK_MS = 60_000;

/** How often the low-space warning repeats at most while the space stays below the floor. */
export const DATA_DIR_LOW_WARNING_EVERY_MS = 10 * 60_000;

/** The largest DATA_DIR_FREE_WARNING_MB: a billion megabytes (about a petabyte), past any disk's size. */
export const MAX_DATA_DIR_FREE_WARNING_MB = 1_000_000_000;

/** DATA_DIR_FREE_WARNING_MB: megabytes (a number, 0 turns the warning off); the floor in bytes. */
export function dataDirFreeWarningBytesOf(env: Record<string, string | undefined> = process.env): number {
  const raw = env.DATA_DIR_FREE_WARNING_MB;
  if (raw === undefined || raw.trim() === '') return DATA_DIR_FREE_WARNING_MB * 1024 * 1024;
  const mb = Number(raw);
  // At most a billion MB (a petabyte): 1e308 made a floor of Infinity bytes, a "low space" warning every 10 minutes on any disk.
  if (!Number.isFinite(mb) || mb < 0 || mb > MAX_DATA_DIR_FREE_WARNING_MB) throw new ConfigError([`DATA_DIR_FREE_WARNING_MB must be a number of megabytes from 0 (the warning off) to ${MAX_DATA_DIR_FREE_WARNING_MB}, got "${raw}"`]);
  return Math.round(mb * 1024 * 1024);
}

export type FreeBytesOf = (path: string) => Promise<number>;

const freeBytesOf: FreeBytesOf = async (path) => {
  const s = await statfs(path);
  return s.bavail * s.bsize;
};

export interface DataDirSpaceWatch {
  /** Checks once now (the timer does every DATA_DIR_SPACE_CHECK_MS); the free bytes, or undefined when statfs failed. */
  check(): Promise<number | undefined>;
  stop(): void;
}

/**
 * Watches the free space of the data dir's file system: the cards_data_dir_free_bytes gauge, and a warning (the first,
 * then one every DATA_DIR_LOW_WARNING_EVERY_MS at most) while it is below `floorBytes` (0: no warning). Liveness is
 * untouched: reads still work on a full disk, and writes answer 503 "Storage is full".
 */
export function watchDataDirSpace({
  path,
  role,
  logger,
  floorBytes,
  intervalMs = DATA_DIR_SPACE_CHECK_MS,
  freeBytes = freeBytesOf,
  now = monotonicNow,
}: {
  path: string;
  /** The gauge's `process` label: what the process is (all-in-one, cards...), never a path. */
  role: string;
  logger: Logger;
  floorBytes: number;
  intervalMs?: number;
  freeBytes?: FreeBytesOf;
  now?: () => number;
}): DataDirSpaceWatch {
  const low = repeatedWarningLog(
    logger,
    "the data dir's file system is almost full: writes (cards, files, sign-ups) will be refused with 503 \"Storage is full\" once it is; free space or grow it (docs/deploy.md, a full disk)",
    { now, everyMs: DATA_DIR_LOW_WARNING_EVERY_MS, countField: 'checksSinceLastWarning' },
  );
  const removeSource = dataDirFreeBytes.addSource(async () => [{ labels: { process: role }, value: await freeBytes(path) }]);
  const check = async (): Promise<number | undefined> => {
    try {
      const free = await freeBytes(path);
      if (floorBytes > 0 && free < floorBytes) low({ dataDir: path, freeBytes: free, floorBytes });
      return free;
    } catch (err) {
      logger.debug({ dataDir: path, error: errorMessage(err) }, 'could not read the free space of the data dir');
      return undefined;
    }
  };
  void check();
  const timer = setInterval(() => void check(), intervalMs);
  timer.unref();
  return {
    check,
    stop() {
      clearInterval(timer);
      removeSource();
    },
  };
}

/** The process's watches, one per data dir: every service started in one process (the all-in-one) shares it. */
const sharedWatches = new Map<string, { watch: DataDirSpaceWatch; users: number }>();

/**
 * Watches the data dir's free space for a service that keeps something there: the cards_data_dir_free_bytes gauge and
 * the low-space warning below DATA_DIR_FREE_WARNING_MB (a ConfigError when that is not a number of megabytes), once per
 * process and data dir however many services of the process call it (the all-in-one runs them all; the gauge would add
 * up their samples). `engineVariables` are the service's, as for refuseEmbeddedStores: with every one of them set (MongoDB,
 * Kafka, ...) it keeps nothing under DATA_DIR and nothing is watched. `stop` (at the service's stop) lets go of this
 * service's share; the watch stops with the last one.
 */
export function watchServiceDataDirSpace({
  role,
  env,
  dataDir,
  engineVariables,
  logger,
  intervalMs,
  freeBytes,
}: {
  /** The gauge's `process` label: all-in-one, or the service started on its own. The all-in-one watches first, its services share its watch. */
  role: string;
  env: Record<string, string | undefined>;
  dataDir: string;
  engineVariables: readonly string[];
  logger: Logger;
  intervalMs?: number;
  freeBytes?: FreeBytesOf;
}): { stop(): void } {
  const floorBytes = dataDirFreeWarningBytesOf(env);
  if (keepsNothingUnderDataDir(env, engineVariables)) return { stop() {} };
  const path = resolve(dataDir);
  let shared = sharedWatches.get(path);
  if (!shared) {
    shared = { watch: watchDataDirSpace({ path, role, logger, floorBytes, intervalMs, freeBytes }), users: 0 };
    sharedWatches.set(path, shared);
  }
  shared.users++;
  let stopped = false;
  const held = shared;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      if (--held.users > 0) return;
      held.watch.stop();
      if (sharedWatches.get(path) === held) sharedWatches.delete(path);
    },
  };
}

/**
 * The line a process that could not start logs: when a write at start was refused because the data dir's file system is
 * full (SQLITE_FULL, ENOSPC from whichever store opened first), it says so and names the data dir, instead of a raw
 * "database or disk is full" with a stack.
 */
export function startFailureLog(
  err: unknown,
  { dataDir = resolve(process.env.DATA_DIR ?? './data'), otherwise = 'failed to start' }: { dataDir?: string; otherwise?: string } = {},
): { fields: Record<string, unknown>; msg: string } {
  if (isStorageFullError(err)) {
    return {
      fields: { dataDir, error: errorMessage(err).slice(0, 300), code: (err as { code?: unknown }).code },
      msg: `the data dir's filesystem is full (${dataDir}): nothing can be written there, so the service cannot start. Free space on it (or give it more room) and start again (docs/deploy.md, a full disk)`,
    };
  }
  return { fields: { err }, msg: otherwise };
}
