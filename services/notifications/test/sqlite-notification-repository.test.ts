import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteNotificationRepository } from '../src/adapters/sqlite/sqlite-notification-repository';
import { describeNotificationRepositoryContract } from './notification-repository.contract';

describeNotificationRepositoryContract('SqliteNotificationRepository', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'notifications-repo-'));
  return { repository: new SqliteNotificationRepository(join(dir, 'notifications.db')), cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
});

