import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { keepsNothingUnderDataDir } from './config';
import { errorMessage } from './errors';
import type { Logger } from './logger';

/** What the process masks off every file and directory it makes once it keeps a data dir: nothing for group or others. */
export const DATA_DIR_UMASK = 0o077;

/** The data dirs this process has made private (or tried to): each is checked, and logged about, once per process. */
const checked = new Set<string>();
let umaskSet = false;

/**
 * Keeps a data dir private to the service's user (docs/security.md, "The data dir is private"): its e-mail (.eml files
 * with live reset links), the identity store (sessions, password hashes), the cards and files stores and objects. Call
 * it at the start of a process that keeps something under DATA_DIR, before any store opens:
 * - the process's umask gains 077, so every directory and file made from then on is 0700 / 0600 (SQLite's own
 *   journal and WAL files included). Once per process; what needs other users' reading sets its mode itself (the word
 *   vector cache in the shared tmpdir);
 * - the data dir is made (0700) when missing, and one an earlier release left readable by others (0755) is chmod-ed to
 *   0700, which alone closes everything under it; logged once. A data dir this process does not own (a Kubernetes
 *   volume's root belongs to root with the pod's fsGroup) cannot be chmod-ed: a warning, never a failed start.
 * `engineVariables` are the service's, as for watchServiceDataDirSpace: with every one of them set it keeps nothing
 * under DATA_DIR and nothing is done (no data dir is made). Never throws: a data dir it cannot make fails the start where
 * the store opens, with that store's error, as before.
 */
export function keepDataDirPrivate({
  env,
  dataDir,
  engineVariables,
  logger,
  chmod = chmodSync,
}: {
  env: Record<string, string | undefined>;
  dataDir: string;
  engineVariables: readonly string[];
  logger: Logger;
  /** Tests: a chmod that fails like one on a directory the process does not own. */
  chmod?: (path: string, mode: number) => void;
}): void {
  if (keepsNothingUnderDataDir(env, engineVariables)) return;
  restrictUmask(logger);
  const path = resolve(dataDir);
  if (checked.has(path)) return;
  checked.add(path);
  if (process.platform === 'win32') return;
  try {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    const { mode, uid } = statSync(path);
    if ((mode & 0o077) === 0) return;
    const was = octal(mode);
    try {
      chmod(path, 0o700);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // In a Kubernetes pod the volume's root is root's with the pod's fsGroup and only this pod mounts it: expected at
      // every start there, so not a warning an operator would learn to ignore.
      const log = env.KUBERNETES_SERVICE_HOST && code === 'EPERM' ? logger.info.bind(logger) : logger.warn.bind(logger);
      log(
        { dataDir: path, mode: was, owner: uid, processUid: process.getuid?.(), code, error: errorMessage(err) },
        `the data dir is open to other users (mode ${was}) and this process cannot make it private${code === 'EPERM' ? ' (it does not own the directory)' : ''}: what the service makes in it is 0700/0600, but make the directory itself 0700 (chmod 700, as its owner) unless only this service can reach it (a Kubernetes volume mounted only into this pod, whose root belongs to root with the pod's fsGroup)`,
      );
      return;
    }
    logger.warn({ dataDir: path, was, now: '0700' }, `made the data dir private: it was open to other users (mode ${was}, left by an earlier release), now 0700 (only this user can reach the stores, mail and files under it)`);
  } catch (err) {
    logger.warn({ dataDir: path, error: errorMessage(err) }, 'could not check that the data dir is private to this user');
  }
}

function restrictUmask(logger: Logger): void {
  if (umaskSet) return;
  umaskSet = true;
  try {
    const before = process.umask(DATA_DIR_UMASK);
    process.umask(before | DATA_DIR_UMASK);
  } catch (err) {
    // A worker thread cannot change the process's umask: the data dir's own mode (0700) still closes what is under it.
    logger.warn({ error: errorMessage(err) }, 'could not set the umask to 077: files made under the data dir take the umask the process has');
  }
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}
