import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { newId, openSqlite, SqliteOutboxStore } from '@cards/platform';
import { FILES_MIGRATIONS, SqliteFileRepository } from '../src/adapters/sqlite/sqlite-file-repository';
import { aFile } from './builders';
import { describeFileRepositoryContract } from './file-repository.contract';
import { testTempDir } from '../../../test/support/cleanup';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describeFileRepositoryContract('SqliteFileRepository', async (options) => {
  const dir = testTempDir('files-repo-');
  dirs.push(dir);
  const repository = new SqliteFileRepository(join(dir, 'files.db'), options?.keyExpiry);
  const outbox = new SqliteOutboxStore(repository.db);
  return { repository, pendingEvents: () => outbox.pending(1000) };
});

describe('SQLite files store migration', () => {
  it('reads the files stored before idempotency keys as uploaded without one', async () => {
    const dir = testTempDir('files-migration-');
    dirs.push(dir);
    const path = join(dir, 'files.db');
    const old = openSqlite(path, FILES_MIGRATIONS.slice(0, FILES_MIGRATIONS.findIndex((m) => m.includes('files_idempotency'))));
    const [id, owner] = [newId(), newId()];
    old.prepare(`INSERT INTO files (id, user_id, file_name, mime_type, format, private, size, tags, ingestion_status, created_at, updated_at)
                 VALUES (?, ?, 'a.docx', 'application/msword', 'docx', 0, 10, '[]', 'done', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`).run(id, owner);
    old.close();
    const repository = new SqliteFileRepository(path);
    expect((await repository.get(id))?.idempotencyKey).toBeNull();
    expect(await repository.delete(id, [])).toBe(true);
    const keyed = aFile().ownedBy(owner).withIdempotencyKey('http:k').build();
    await repository.create(keyed, []);
    expect(await repository.findByIdempotencyKey(owner, 'http:k')).toEqual(keyed);
    await repository.close();
  });

  it('keeps the uploads pending before the ingestion queue existed: they are claimed, in turns, after the upgrade', async () => {
    const dir = testTempDir('files-migration-');
    dirs.push(dir);
    const path = join(dir, 'files.db');
    const old = openSqlite(path, FILES_MIGRATIONS.slice(0, FILES_MIGRATIONS.findIndex((m) => m.includes('ingestion_turns'))));
    const [a1, a2, b1, done] = [newId(), newId(), newId(), newId()];
    const [alice, bob] = [newId(), newId()];
    const insert = old.prepare(`INSERT INTO files (id, user_id, file_name, mime_type, format, private, size, tags, ingestion_status, created_at, updated_at)
                                VALUES (?, ?, 'a.docx', 'application/msword', 'docx', 0, 10, '[]', ?, ?, ?)`);
    for (const [id, owner, status, at] of [[a1, alice, 'pending', '2026-01-01'], [a2, alice, 'pending', '2026-01-02'], [b1, bob, 'pending', '2026-01-03'], [done, bob, 'done', '2025-01-01']]) {
      insert.run(id, owner, status, `${at}T00:00:00.000Z`, `${at}T00:00:00.000Z`);
    }
    old.close();
    const repository = new SqliteFileRepository(path);
    const claimed: (string | undefined)[] = [];
    for (let i = 0; i < 4; i++) claimed.push((await repository.claimNextIngestion('embedded', new Date(Date.UTC(2026, 2, 1, 0, 0, i)), 60_000))?.file.id);
    expect(claimed).toEqual([a1, b1, a2, undefined]);
    await repository.close();
  });
});
