import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteNotificationRepository } from '../src/adapters/sqlite/sqlite-notification-repository';
import { testTempDir } from '../../../test/support/cleanup';
import { orderWhileHeld } from '../../../test/support/sqlite-lock-holder';

// Another process holding notifications.db's write lock: marking notifications read waits for it between tries, so the
// service goes on answering (listings) instead of standing still inside SQLite until the lock is let go or busy_timeout
// passes (writesWaitBetweenTries).

let dir: string;
let repository: SqliteNotificationRepository;
beforeEach(() => {
  dir = testTempDir('notifications-held-lock-');
  repository = new SqliteNotificationRepository(join(dir, 'notifications.db'));
});
afterEach(async () => {
  await repository.close();
  rmSync(dir, { recursive: true, force: true });
});

it('marking all read while another process holds notifications.db lets a listing answer first, and is done once let go', async () => {
  const order = await orderWhileHeld(join(dir, 'notifications.db'), () => repository.markAllRead('u1', new Date()), async () => `listed ${(await repository.listForUser('u1')).length}`);
  expect(order).toEqual(['listed 0', 'written']);
}, 30_000);
