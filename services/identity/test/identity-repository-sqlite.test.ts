import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqlite } from '@cards/platform';
import { SqliteIdentityRepository } from '../src/adapters/sqlite/sqlite-identity-repository';
import { describeIdentityRepositoryContract } from './identity-repository.contract';

describeIdentityRepositoryContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cards-identity-repo-'));
  const path = join(dir, 'identity.db');
  const repository = new SqliteIdentityRepository(path);
  return {
    repository,
    async storeAsPreviousVersion({ users = [], sessions = [], resets = [] }) {
      // The columns the previous version wrote; the migration left the others at their defaults.
      const db = openSqlite(path);
      try {
        for (const u of users) {
          db.prepare('INSERT INTO users (id, email, username, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
            .run(u.id, u.email, u.username, u.website, u.visibleEmail ? 1 : 0, u.passwordHash, u.createdAt.toISOString(), u.updatedAt.toISOString());
        }
        for (const s of sessions) {
          db.prepare('INSERT INTO sessions (id, user_id, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?)')
            .run(s.id, s.userId, s.createdAt.toISOString(), s.expiresAt.toISOString(), s.revokedAt?.toISOString() ?? null);
        }
        for (const r of resets) {
          db.prepare('INSERT INTO password_resets (id, user_id, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?)')
            .run(r.id, r.userId, r.createdAt.toISOString(), r.expiresAt.toISOString(), r.usedAt?.toISOString() ?? null);
        }
      } finally {
        db.close();
      }
    },
    async close() {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
