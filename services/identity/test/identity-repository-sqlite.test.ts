import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AlreadyExistsError, openSqlite } from '@cards/platform';
import { keyUsernamesAsWritten, MIGRATIONS, rekeyUsernames, SqliteIdentityRepository } from '../src/adapters/sqlite/sqlite-identity-repository';
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
        // The username keys the migrations give the names stored before them (the tests below run them on older files).
        db.transaction(() => {
          rekeyUsernames(db);
          keyUsernamesAsWritten(db);
        })();
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

describe('SqliteIdentityRepository on a file of the version before Unicode usernames', () => {
  it('gives the usernames stored there their key, so each still holds against its other casings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cards-identity-repo-'));
    const path = join(dir, 'identity.db');
    const at = new Date('2026-01-02T03:04:05.678Z').toISOString();
    // The schema before username_key: usernames unique under SQLite's ASCII lower().
    const old = openSqlite(path, MIGRATIONS.slice(0, 2));
    const insert = old.prepare('INSERT INTO users (id, email, username, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, NULL, 1, ?, ?, ?)');
    insert.run('u-old', 'old@example.com', 'CardFan', 'scrypt$x', at, at);
    insert.run('u-new', 'new@example.com', null, 'scrypt$x', at, at);
    old.close();
    const repository = new SqliteIdentityRepository(path);
    try {
      const later = new Date('2026-02-01T00:00:00.000Z');
      await expect(repository.updateProfile('u-new', { username: 'cardfan' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repository.updateProfile('u-new', { username: 'CARDFAN' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await repository.updateProfile('u-old', { username: 'cardFan' }, 'none', later)).toMatchObject({ username: 'cardFan' });
      expect(await repository.updateProfile('u-new', { username: 'Zo\u00eb' }, 'none', later)).toMatchObject({ username: 'Zo\u00eb' });
      await expect(repository.updateProfile('u-old', { username: 'ZO\u00cb' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
    } finally {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteIdentityRepository on a file of the version before the confusable skeleton key', () => {
  it('keys the usernames stored there again: look-alikes of them are taken, and two look-alikes both stored are both kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cards-identity-repo-'));
    const path = join(dir, 'identity.db');
    const at = (iso: string) => new Date(iso).toISOString();
    // The schema with username_key as the case fold only (migration 3).
    const old = openSqlite(path, MIGRATIONS.slice(0, 3));
    const insert = old.prepare('INSERT INTO users (id, email, username, username_key, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, 1, ?, ?, ?)');
    insert.run('u-paypal', 'paypal@example.com', 'PayPal', 'paypal', 'scrypt$x', at('2026-01-01T00:00:00.000Z'), at('2026-01-01T00:00:00.000Z'));
    insert.run('u-cyrillic', 'cyrillic@example.com', '\u0441\u043e\u0441\u043e', '\u0441\u043e\u0441\u043e', 'scrypt$x', at('2026-01-02T00:00:00.000Z'), at('2026-01-02T00:00:00.000Z'));
    insert.run('u-latin', 'latin@example.com', 'coco', 'coco', 'scrypt$x', at('2026-01-03T00:00:00.000Z'), at('2026-01-03T00:00:00.000Z'));
    insert.run('u-new', 'new@example.com', null, null, 'scrypt$x', at('2026-01-04T00:00:00.000Z'), at('2026-01-04T00:00:00.000Z'));
    old.close();
    const repository = new SqliteIdentityRepository(path);
    try {
      const later = new Date('2026-02-01T00:00:00.000Z');
      await expect(repository.updateProfile('u-new', { username: '\u0440\u0430\u0443\u0440\u0430l' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repository.updateProfile('u-new', { username: 'COCO' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repository.updateProfile('u-new', { username: '\u0441\u043e\u0441\u043e' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // Both look-alikes kept as written; the older holds the key itself.
      expect(await repository.findUserById('u-latin')).toMatchObject({ username: 'coco' });
      expect(await repository.updateProfile('u-latin', { username: 'coco', website: 'https://coco.example' }, 'none', later)).toMatchObject({ username: 'coco' });
      // The younger may change its capitals, keeping its key.
      expect(await repository.updateProfile('u-latin', { username: 'Coco' }, 'none', later)).toMatchObject({ username: 'Coco' });
      expect(await repository.updateProfile('u-cyrillic', { username: '\u0421\u041e\u0421\u041e' }, 'none', later)).toMatchObject({ username: '\u0421\u041e\u0421\u041e' });
      // Neither may take the other's name, in any capitals.
      await expect(repository.updateProfile('u-cyrillic', { username: 'COCO' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repository.updateProfile('u-latin', { username: '\u0441\u043e\u0441\u043e' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // The older one renames away: the younger is given the key itself, in the same transaction; the name stays taken.
      expect(await repository.updateProfile('u-cyrillic', { username: 'robert_x' }, 'none', later)).toMatchObject({ username: 'robert_x' });
      const db = openSqlite(path);
      try {
        expect(db.prepare("SELECT id, username_key FROM users WHERE username_key LIKE 'coco%'").all()).toEqual([{ id: 'u-latin', username_key: 'coco' }]);
      } finally {
        db.close();
      }
      for (const name of ['coco', 'c0c0', '\u0441\u043e\u0441\u043e']) {
        await expect(repository.updateProfile('u-new', { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      }
    } finally {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteIdentityRepository on a file keyed by migration 4 before look-alikes were promoted', () => {
  it('refuses a name whose look-alike is held only under "key id", and gives that holder the key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cards-identity-repo-'));
    const path = join(dir, 'identity.db');
    const at = new Date('2026-01-02T03:04:05.678Z').toISOString();
    // "bob" renamed away after the upgrade and no one was given the key: "b0b" still held "bob u-b0b" alone.
    const file = openSqlite(path, MIGRATIONS);
    const insert = file.prepare('INSERT INTO users (id, email, username, username_key, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, 1, ?, ?, ?)');
    insert.run('u-bob', 'bob@example.com', 'robert_x', 'robert_x', 'scrypt$x', at, at);
    insert.run('u-b0b', 'b0b@example.com', 'b0b', 'bob u-b0b', 'scrypt$x', at, at);
    insert.run('u-new', 'new@example.com', null, null, 'scrypt$x', at, at);
    file.close();
    const repository = new SqliteIdentityRepository(path);
    try {
      const later = new Date('2026-02-01T00:00:00.000Z');
      await expect(repository.updateProfile('u-new', { username: 'b0b' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repository.updateProfile('u-new', { username: 'bob' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      const db = openSqlite(path);
      try {
        expect(db.prepare("SELECT username_key FROM users WHERE id = 'u-b0b'").get()).toEqual({ username_key: 'bob' });
      } finally {
        db.close();
      }
      expect(await repository.updateProfile('u-b0b', { username: 'Bob' }, 'none', later)).toMatchObject({ username: 'Bob' });
    } finally {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteIdentityRepository on a file of the version before the second username key (migration 4)', () => {
  it('keeps "will" and "wiII" as two users with their names, keys them again, and no one else can take either', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cards-identity-repo-'));
    const path = join(dir, 'identity.db');
    const at = (iso: string) => new Date(iso).toISOString();
    // The file as that version wrote it: "will" and "wiII" (capital i's) had two keys then, "will" and "wiii".
    const old = openSqlite(path, MIGRATIONS.slice(0, 4));
    const insert = old.prepare('INSERT INTO users (id, email, username, username_key, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, 1, ?, ?, ?)');
    insert.run('u-will', 'will@example.com', 'will', 'will', 'scrypt$will', at('2026-01-01T00:00:00.000Z'), at('2026-01-01T00:00:00.000Z'));
    insert.run('u-wiii', 'wiii@example.com', 'wiII', 'wiii', 'scrypt$wiii', at('2026-01-02T00:00:00.000Z'), at('2026-01-02T00:00:00.000Z'));
    insert.run('u-new', 'new@example.com', null, null, 'scrypt$x', at('2026-01-03T00:00:00.000Z'), at('2026-01-03T00:00:00.000Z'));
    old.close();
    const repository = new SqliteIdentityRepository(path);
    try {
      // Both still found by their address (what a login reads), with their passwords and names.
      expect(await repository.findUserByEmail('will@example.com')).toMatchObject({ id: 'u-will', username: 'will', passwordHash: 'scrypt$will' });
      expect(await repository.findUserByEmail('wiii@example.com')).toMatchObject({ id: 'u-wiii', username: 'wiII', passwordHash: 'scrypt$wiii' });
      const db = openSqlite(path);
      try {
        // The older holds the second key itself, the younger its key, a space and its id.
        expect(db.prepare('SELECT id, username_key, username_key_as_written FROM users WHERE username IS NOT NULL ORDER BY id').all()).toEqual([
          { id: 'u-wiii', username_key: 'wiii', username_key_as_written: 'will u-wiii' },
          { id: 'u-will', username_key: 'will', username_key_as_written: 'will' },
        ]);
      } finally {
        db.close();
      }
      const later = new Date('2026-02-01T00:00:00.000Z');
      for (const name of ['will', 'Will', 'WILL', 'wiII', 'wi11']) {
        await expect(repository.updateProfile('u-new', { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      }
      // Each may send its name again.
      expect(await repository.updateProfile('u-wiii', { username: 'wiII', website: 'https://wiii.example' }, 'none', later)).toMatchObject({ username: 'wiII' });
      expect(await repository.updateProfile('u-will', { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
    } finally {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
