import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteIdentityRepository } from '../src/adapters/sqlite/sqlite-identity-repository';
import { describeIdentityRepositoryContract } from './identity-repository.contract';

describeIdentityRepositoryContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cards-identity-repo-'));
  const repository = new SqliteIdentityRepository(join(dir, 'identity.db'));
  return {
    repository,
    async close() {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
