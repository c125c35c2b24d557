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

// Reported as skipped, with the reason, rather than silently passed.
const MONGO_SKIP_REASON = 'no MongoFileRepository adapter exists yet for the files service; the embedded SQLite store is used';
console.warn(`SKIPPED FileRepository contract: MongoFileRepository: ${MONGO_SKIP_REASON}`);
it.skip(`FileRepository contract: MongoFileRepository (${MONGO_SKIP_REASON})`, () => undefined);
