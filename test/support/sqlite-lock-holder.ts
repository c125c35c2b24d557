import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';

const BETTER_SQLITE3 = require.resolve('better-sqlite3');

/**
 * Another process holding a SQLite store's write lock (BEGIN IMMEDIATE), as an operator's sqlite3, a long checkpoint or
 * the backup command's begin does: resolves once it holds it. It lets go when told (release()), or by itself after
 * `holdMs` when given; release() resolves once the process is gone.
 */
export function holdSqliteWriteLock(path: string, holdMs?: number): Promise<{ release(): Promise<void> }> {
  const script = `const D = require(${JSON.stringify(BETTER_SQLITE3)}); const db = new D(${JSON.stringify(path)});
    db.exec('BEGIN IMMEDIATE'); console.log('held');
    const letGo = () => { db.exec('ROLLBACK'); db.close(); process.exit(0); };
    ${holdMs === undefined ? '' : `setTimeout(letGo, ${holdMs});`}
    process.stdin.on('data', letGo);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  // A holder that let go by itself may be gone when told to (EPIPE): nothing to do then.
  child.stdin!.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (!chunk.toString().includes('held')) return;
      resolve({
        release: async () => {
          child.stdin!.write('release\n');
          await exited;
        },
      });
    });
    child.on('error', reject);
  });
}

/**
 * Starts `write` while another process holds the store at `path`, lets the event loop turn once and runs `meanwhile`
 * (work of the same process: a read), then lets the lock go: the order in which the write and that work ended. A write
 * waiting inside SQLite ends first ('failed: database is locked' after busy_timeout); one waiting between tries lets
 * the work run first, then is written once let go.
 */
export async function orderWhileHeld(path: string, write: () => Promise<unknown>, meanwhile: () => Promise<string> | string): Promise<string[]> {
  const holder = await holdSqliteWriteLock(path);
  const order: string[] = [];
  const written = write().then(
    () => order.push('written'),
    (err: unknown) => order.push(`failed: ${(err as Error).message}`),
  );
  await new Promise((resolve) => setImmediate(resolve));
  order.push(await meanwhile());
  await holder.release();
  await written;
  return order;
}

/** A connection of this process holding the write lock (BEGIN IMMEDIATE) of the store at `path` until `release()`. */
export function holdWriteLockHere(path: string): { release(): void } {
  const db = new Database(path, { fileMustExist: true });
  db.exec('BEGIN IMMEDIATE');
  return {
    release() {
      db.exec('ROLLBACK');
      db.close();
    },
  };
}
