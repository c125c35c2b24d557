import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { NotFoundError } from '@cards/platform';
import type { ObjectStore, StoredObject } from '../../domain/ports';

const SAFE_KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;

/**
 * How old a temporary file in objects/.tmp must be for the sweep at start to delete it: a write takes seconds, so one
 * untouched for an hour was left by a crash (a process killed mid-write), never one being written by another replica.
 */
export const STALE_TEMP_MS = 60 * 60 * 1000;

/**
 * Objects as files in one directory. A write goes to a temporary file that is fsynced and then
 * renamed over the final name, so readers see the old object or the new one, never half of one.
 * A write that fails (a full disk) deletes its temporary file; at start, ones older than STALE_TEMP_MS are swept.
 */
export class DiskObjectStore implements ObjectStore {
  private readonly ready: Promise<void>;

  constructor(
    private readonly directory: string,
    { staleTempMs = STALE_TEMP_MS, now = Date.now }: { staleTempMs?: number; now?: () => number } = {},
  ) {
    this.ready = mkdir(join(directory, '.tmp'), { recursive: true }).then(() => this.sweepTemps(now() - staleTempMs));
  }

  /** Deletes the temporary files last written before `before` (a crash's leftovers); never fails the store's start. */
  private async sweepTemps(before: number): Promise<void> {
    const tmp = join(this.directory, '.tmp');
    const names = await readdir(tmp).catch(() => [] as string[]);
    for (const name of names) {
      const path = join(tmp, name);
      try {
        if ((await stat(path)).mtimeMs < before) await rm(path, { force: true });
      } catch {
        // Gone meanwhile, or unreadable: the next start tries again.
      }
    }
  }

  private pathOf(key: string): string {
    if (!SAFE_KEY.test(key)) throw new Error(`invalid object key ${JSON.stringify(key)}`);
    return join(this.directory, key);
  }

  async put(key: string, bytes: Buffer): Promise<void> {
    await this.ready;
    const target = this.pathOf(key);
    const temp = join(this.directory, '.tmp', `${key}.${randomUUID()}`);
    try {
      const handle = await open(temp, 'wx');
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temp, target);
    } catch (err) {
      // Whichever step failed (a write or an fsync refused by a full disk, the rename), the temporary file goes.
      await rm(temp, { force: true }).catch(() => undefined);
      throw err;
    }
  }

  async open(key: string, offset = 0, length?: number): Promise<Readable> {
    const path = this.pathOf(key);
    if (!(await this.stat(key))) throw new NotFoundError(`object ${key} not found`);
    if (length === 0) return Readable.from([]);
    // `end` is inclusive.
    return createReadStream(path, { start: offset, ...(length === undefined ? {} : { end: offset + length - 1 }) });
  }

  async read(key: string): Promise<Buffer> {
    try {
      return await readFile(this.pathOf(key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError(`object ${key} not found`);
      throw err;
    }
  }

  async stat(key: string): Promise<StoredObject | null> {
    try {
      const s = await stat(this.pathOf(key));
      return { size: s.size };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
  }

  async remove(key: string): Promise<void> {
    await rm(this.pathOf(key), { force: true });
  }

  async *list(prefix: string): AsyncIterable<{ key: string; writtenAt: Date }> {
    await this.ready;
    for (const name of await readdir(this.directory)) {
      if (!name.startsWith(prefix) || !SAFE_KEY.test(name)) continue;
      const written = await stat(join(this.directory, name)).catch(() => null); // removed meanwhile
      if (written?.isFile()) yield { key: name, writtenAt: written.mtime };
    }
  }

  /** Waits for the start's work (making objects/.tmp, the sweep) so nothing is written in the directory after it. */
  async close(): Promise<void> {
    await this.ready.catch(() => undefined);
  }
}
