import { accessSync, constants, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** Thrown at start when a file of the data dir refuses this process (another user's, or a mode that shuts it out). */
export class DataDirNotUsableError extends Error {
  constructor(
    message: string,
    readonly path: string,
    readonly ownerUid: number,
    readonly processUid: number,
  ) {
    super(message);
    this.name = 'DataDirNotUsableError';
  }
}

/** How the owner of a path and the process's own uid are read; tests stand in for them (they run as root). */
export interface FileOwnership {
  stat(path: string): { uid: number; mode: number };
  processUid(): number | undefined;
}

const NODE_OWNERSHIP: FileOwnership = { stat: statSync, processUid: () => process.getuid?.() };

/**
 * The start failure for a permission error (EACCES, EPERM) on a path under `dataDir`, naming the path, its owner's uid,
 * the uid the service runs as and the command that mends it; any other error is given back as it is. A data dir
 * restored or copied by another user (`cp -r` as root for a service that runs as another user) keeps that user's
 * files, and the start failed with a bare EACCES on a lock file. A path the process could not make (a lock file in a
 * directory it may not write) is told by its directory's owner.
 */
export function explainDataDirAccess(err: unknown, dataDir: string, ownership: FileOwnership = NODE_OWNERSHIP): unknown {
  const { code, path } = (err ?? {}) as NodeJS.ErrnoException;
  if ((code !== 'EACCES' && code !== 'EPERM') || !path) return err;
  const processUid = ownership.processUid();
  if (processUid === undefined) return err;
  const owned = ownerOf(path, ownership);
  if (!owned) return err;
  const which = owned.path === path ? path : `${path} (its directory ${owned.path})`;
  const mode = `0${(owned.mode & 0o777).toString(8)}`;
  const message =
    owned.uid === processUid
      ? `cannot use ${which} (${code}): it belongs to uid ${processUid}, the uid this service runs as, but its mode ${mode} shuts that user out. Give the service's user access again (chmod -R u+rwX ${dataDir}) and start again`
      : `cannot use ${which} (${code}): it belongs to uid ${owned.uid}, and this service runs as uid ${processUid}. A data dir restored or copied as another user (cp -r as root) keeps that user's files: give them to the service's user (chown -R ${processUid} ${dataDir}) and start again`;
  return new DataDirNotUsableError(message, owned.path, owned.uid, processUid);
}

/** The path's owner, or its nearest existing parent's (the path was to be made there). */
function ownerOf(path: string, ownership: FileOwnership): { path: string; uid: number; mode: number } | undefined {
  for (let at = path; ; at = dirname(at)) {
    try {
      const { uid, mode } = ownership.stat(at);
      return { path: at, uid, mode };
    } catch {
      if (dirname(at) === at) return undefined;
    }
  }
}

/**
 * Checks that the service can read and write its own directory under the data dir and what lies directly in it (its
 * store, the store's journal), so that a restore by another user fails the start here, named, rather than where the
 * store opens with SQLite's bare "unable to open database file". Throws as explainDataDirAccess tells.
 */
export function checkServiceFilesUsable(dataDir: string, service: string): void {
  const directory = join(dataDir, service);
  try {
    for (const path of [dataDir, directory, ...entriesOf(directory)]) usable(path);
  } catch (err) {
    throw explainDataDirAccess(err, dataDir);
  }
}

function entriesOf(directory: string): string[] {
  try {
    return readdirSync(directory).map((name) => join(directory, name));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

function usable(path: string): void {
  try {
    accessSync(path, constants.R_OK | constants.W_OK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
