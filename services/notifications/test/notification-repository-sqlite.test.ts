import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteNotificationRepository } from '../src/adapters/sqlite/sqlite-notification-repository';
import { describeNotificationRepositoryContract } from './notification-repository.contract';
import { testTempDir } from '../../../test/support/cleanup';

describeNotificationRepositoryContract('sqlite', async () => {
  const dir = testTempDir('notifications-repo-');
  const repository = new SqliteNotificationRepository(join(dir, 'notifications.db'));
  return {
    repository,
    async close() {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
