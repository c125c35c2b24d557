import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '@cards/platform';
import { openCardsStore, sqliteCardsPath, type CardsStore } from '../src/cards-store';
import type { Collection } from '../src/domain/model';
import { testTempDir } from '../../../test/support/cleanup';

// Another process holding cards.db's write lock (an operator's sqlite3, a long checkpoint): a request's write waits
// for it between tries, so the service goes on answering its other requests (reads, writes of other stores) instead of
// standing still inside SQLite until the lock is let go or busy_timeout passes (writesWaitBetweenTries, cards-store.ts).

const BETTER_SQLITE3 = require.resolve('better-sqlite3');

/** Holds `path`'s write lock in another process until release(). */
function holdWriteLock(path: string): Promise<{ release(): Promise<void> }> {
  const script = `const D = require(${JSON.stringify(BETTER_SQLITE3)}); const db = new D(${JSON.stringify(path)});
    db.exec('BEGIN IMMEDIATE'); console.log('held'); process.stdin.on('data', () => { db.exec('ROLLBACK'); db.close(); process.exit(0); });`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve({ release: async () => void (child.stdin!.write('go\n'), await exited) }));
    child.on('error', reject);
  });
}

let dir: string;
let store: CardsStore;
beforeEach(async () => {
  dir = testTempDir('cards-held-lock-');
  store = await openCardsStore({ DATA_DIR: dir }, createLogger('cards-held-lock-test', 'silent'));
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const collection = (name: string): Collection => {
  const now = new Date();
  return { id: `c-${name}`, authorId: 'u1', name, description: '', isPublic: true, fileId: null, idempotencyKey: null, requestFingerprint: null, createdAt: now, updatedAt: now };
};

it("a collection created while another process holds cards.db waits with the service answering meanwhile, and is stored once let go", async () => {
  await store.collections.insert(collection('before'), []);
  const holder = await holdWriteLock(sqliteCardsPath(dir));
  const order: string[] = [];
  const created = store.collections.insert(collection('during'), []).then(
    () => order.push('created'),
    (err: unknown) => order.push(`failed: ${(err as Error).message}`),
  );
  await new Promise((resolve) => setImmediate(resolve));
  // A read of the same store is answered while the write waits.
  order.push(`read ${(await store.collections.findById('c-before'))?.name}`);
  await holder.release();
  await created;
  expect(order).toEqual(['read before', 'created']);
  expect((await store.collections.findById('c-during'))?.name).toBe('during');
}, 30_000);
