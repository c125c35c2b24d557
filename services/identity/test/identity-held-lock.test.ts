import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteIdentityRepository } from '../src/adapters/sqlite/sqlite-identity-repository';
import { testTempDir } from '../../../test/support/cleanup';
import { orderWhileHeld } from '../../../test/support/sqlite-lock-holder';

// Another process holding identity.db's write lock (an operator's sqlite3, a long checkpoint): a login's session write
// waits for it between tries, so the service goes on answering (the session checks of every other request) instead of
// standing still inside SQLite until the lock is let go or busy_timeout passes (writesWaitBetweenTries).

let dir: string;
let repository: SqliteIdentityRepository;
beforeEach(() => {
  dir = testTempDir('identity-held-lock-');
  repository = new SqliteIdentityRepository(join(dir, 'identity.db'));
});
afterEach(async () => {
  await repository.close();
  rmSync(dir, { recursive: true, force: true });
});

const session = (id: string) => ({ id, userId: 'u1', createdAt: new Date(), expiresAt: new Date(Date.now() + 3_600_000), revokedAt: null, passwordVersion: 0 });

it('a session stored while another process holds identity.db lets a session check answer first, and is stored once let go', async () => {
  await repository.createSession(session('before'));
  const order = await orderWhileHeld(join(dir, 'identity.db'), () => repository.createSession(session('during')), async () => `checked ${(await repository.findSession('before'))?.id}`);
  expect(order).toEqual(['checked before', 'written']);
  expect((await repository.findSession('during'))?.userId).toBe('u1');
}, 30_000);
