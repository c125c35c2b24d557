import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { testTempDir } from '../../../test/support/cleanup';
import { orderWhileHeld } from '../../../test/support/sqlite-lock-holder';

// Another process holding files.db's write lock: a write of the files service waits for it between tries, so the
// service goes on answering (file listings, downloads' record reads) instead of standing still inside SQLite until the
// lock is let go or busy_timeout passes (writesWaitBetweenTries).

let dir: string;
let repository: SqliteFileRepository;
beforeEach(() => {
  dir = testTempDir('files-held-lock-');
  repository = new SqliteFileRepository(join(dir, 'files.db'));
});
afterEach(async () => {
  await repository.close();
  rmSync(dir, { recursive: true, force: true });
});

it("releasing a worker's ingestion claims while another process holds files.db lets a listing answer first, and is done once let go", async () => {
  const order = await orderWhileHeld(join(dir, 'files.db'), () => repository.releaseIngestionClaimsOf('worker-1'), async () => `listed ${(await repository.listByUser('u1')).length}`);
  expect(order).toEqual(['listed 0', 'written']);
}, 30_000);
