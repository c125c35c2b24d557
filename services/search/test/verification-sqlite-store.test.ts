import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteVerificationStore } from '../src/verification/adapters/sqlite/sqlite-verification-store';
import { describeVerificationStoreContract } from './verification-store.contract';

describeVerificationStoreContract('SqliteVerificationStore', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'verification-store-'));
  const store = new SqliteVerificationStore(join(dir, 'verification.db'));
  const outbox = store.outbox();
  return {
    store,
    pendingEvents: () => outbox.pending(100),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
