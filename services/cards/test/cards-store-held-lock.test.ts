import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '@cards/platform';
import { openCardsStore, sqliteCardsPath, type CardsStore } from '../src/cards-store';
import type { Collection } from '../src/domain/model';
import { testTempDir } from '../../../test/support/cleanup';
import { orderWhileHeld } from '../../../test/support/sqlite-lock-holder';

// Another process holding cards.db's write lock (an operator's sqlite3, a long checkpoint): a request's write waits
// for it between tries, so the service goes on answering its other requests (reads, writes of other stores) instead of
// standing still inside SQLite until the lock is let go or busy_timeout passes (writesWaitBetweenTries, cards-store.ts).

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
  // A read of the same store is answered while the write waits.
  const order = await orderWhileHeld(sqliteCardsPath(dir), () => store.collections.insert(collection('during'), []), async () => `read ${(await store.collections.findById('c-before'))?.name}`);
  expect(order).toEqual(['read before', 'written']);
  expect((await store.collections.findById('c-during'))?.name).toBe('during');
}, 30_000);
