import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteOutboxStore } from '@cards/platform';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { describeFileRepositoryContract } from './file-repository.contract';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describeFileRepositoryContract('SqliteFileRepository', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'files-repo-'));
  dirs.push(dir);
  const repository = new SqliteFileRepository(join(dir, 'files.db'));
  const outbox = new SqliteOutboxStore(repository.db);
  return { repository, pendingEvents: () => outbox.pending(1000) };
});
