import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteNotificationRepository } from '../src/adapters/sqlite/sqlite-notification-repository';
import { describeNotificationRepositoryContract } from './notification-repository.contract';

describeNotificationRepositoryContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-repo-'));
  const repository = new SqliteNotificationRepository(join(dir, 'notifications.db'));
  return {
    repository,
    async close() {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
