import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { AlreadyExistsError, openSqlite } from '@cards/platform';
import { keyUsernamesAsWritten, MIGRATIONS, rekeyUsernames, SqliteIdentityRepository } from '../src/adapters/sqlite/sqlite-identity-repository';
import { usernameKey, usernameKeyAsWritten } from '../src/domain/username-key';
import { describeIdentityRepositoryContract } from './identity-repository.contract';
import { expectNamesAfterReopen, RENAMES_WHILE_ROLLED_BACK, SECOND_KEYS_AFTER_REOPEN, SECOND_KEYS_BEFORE_REOPEN, USERS_BEFORE_ROLLBACK } from './rollback-upgrade-expectations';
import { testTempDir } from '../../../test/support/cleanup';

describeIdentityRepositoryContract('sqlite', async () => {
  const dir = testTempDir('cards-identity-repo-');
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
    const dir = testTempDir('cards-identity-repo-');
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
    const dir = testTempDir('cards-identity-repo-');
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
    const dir = testTempDir('cards-identity-repo-');
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
    const dir = testTempDir('cards-identity-repo-');
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

describe('SqliteIdentityRepository after a rollback to the version before the second username key and an upgrade again', () => {
  const day = (n: number) => new Date(Date.UTC(2026, 0, n)).toISOString();
  /** A user as this version writes one: both keys. */
  const insertNow = (db: ReturnType<typeof openSqlite>, id: string, username: string | null, createdDay: number) =>
    db
      .prepare('INSERT INTO users (id, email, username, username_key, username_key_as_written, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, NULL, 1, ?, ?, ?)')
      .run(id, `${id}@example.com`, username, username === null ? null : usernameKey(username), username === null ? null : usernameKeyAsWritten(username), 'scrypt$x', day(createdDay), day(createdDay));
  /** A rename as the version before writes it: username, the first key and updated_at (its clock), no second key. */
  const renameAsBefore = (db: ReturnType<typeof openSqlite>, id: string, username: string | null) =>
    db.prepare('UPDATE users SET username = ?, username_key = ?, updated_at = ? WHERE id = ?').run(username, username === null ? null : usernameKey(username), new Date().toISOString(), id);
  const secondKeys = (path: string) => {
    const db = openSqlite(path);
    try {
      return Object.fromEntries((db.prepare('SELECT id, username_key_as_written FROM users ORDER BY id').all() as Array<{ id: string; username_key_as_written: string | null }>).map((r) => [r.id, r.username_key_as_written]));
    } finally {
      db.close();
    }
  };

  it('keys the names changed while rolled back again at start: an unchanged save is accepted, a name left is free, a look-alike of a new name is taken', async () => {
    const dir = testTempDir('cards-identity-repo-');
    const path = join(dir, 'identity.db');
    try {
      const file = openSqlite(path, MIGRATIONS);
      for (const [id, username, createdDay] of USERS_BEFORE_ROLLBACK) insertNow(file, id, username, createdDay);
      file.close();
      // This version starts once (the check time is recorded), then the previous version runs on the file.
      await new SqliteIdentityRepository(path).close();
      const rolledBack = openSqlite(path);
      for (const [id, username] of RENAMES_WHILE_ROLLED_BACK) renameAsBefore(rolledBack, id, username);
      rolledBack.close();
      expect(secondKeys(path)).toMatchObject(SECOND_KEYS_BEFORE_REOPEN);
      const repository = new SqliteIdentityRepository(path);
      try {
        expect(secondKeys(path)).toEqual(SECOND_KEYS_AFTER_REOPEN);
        await expectNamesAfterReopen(repository);
      } finally {
        await repository.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('checks every name once on a file keyed by migration 5 without a recorded check, and only the names changed since afterwards', async () => {
    const dir = testTempDir('cards-identity-repo-');
    const path = join(dir, 'identity.db');
    try {
      // Upgraded by a build before the check (migration 5 only), then renamed while rolled back, long ago by its clock.
      const file = openSqlite(path, MIGRATIONS.slice(0, 5));
      insertNow(file, 'u-a', 'Neuer', 1);
      insertNow(file, 'u-b', 'xyz', 2);
      file.prepare("UPDATE users SET username = 'Bob', username_key = 'bob', updated_at = ? WHERE id = 'u-a'").run(day(3));
      file.close();
      await new SqliteIdentityRepository(path).close();
      expect(secondKeys(path)).toEqual({ 'u-a': 'bob', 'u-b': 'xyz' });
      // After the check, a name not changed since is not read again (here a stale key written behind the service's back).
      const behind = openSqlite(path);
      behind.prepare("UPDATE users SET username_key_as_written = 'stale' WHERE id = 'u-b'").run();
      behind.close();
      await new SqliteIdentityRepository(path).close();
      expect(secondKeys(path)).toEqual({ 'u-a': 'bob', 'u-b': 'stale' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteIdentityRepository on a file where the build before 6938ecd gave a look-alike the key its holder kept', () => {
  it('lets "WILL" go back to "will" (its second key then "will <id>"), the look-alike keeps "wiII", and no one else takes either', async () => {
    const dir = testTempDir('cards-identity-repo-');
    const path = join(dir, 'identity.db');
    const at = (day: number) => new Date(Date.UTC(2026, 0, day)).toISOString();
    // will renamed "WILL" ("will" left as its second key only) and "wiII" was given "will" as its second key.
    const file = openSqlite(path, MIGRATIONS);
    const insert = file.prepare('INSERT INTO users (id, email, username, username_key, username_key_as_written, website, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, ?, ?, ?, NULL, 1, ?, ?, ?)');
    insert.run('u-will', 'will@example.com', 'WILL', 'will', 'wlll', 'scrypt$x', at(1), at(1));
    insert.run('u-wiii', 'wiii@example.com', 'wiII', 'wiii', 'will', 'scrypt$x', at(2), at(2));
    insert.run('u-new', 'new@example.com', null, null, null, 'scrypt$x', at(3), at(3));
    file.close();
    const repository = new SqliteIdentityRepository(path);
    try {
      const later = new Date('2026-02-01T00:00:00.000Z');
      expect(await repository.updateProfile('u-will', { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
      expect(await repository.updateProfile('u-will', { username: 'will', website: 'https://will.example' }, 'none', later)).toMatchObject({ username: 'will' });
      expect(await repository.updateProfile('u-will', { username: 'Will' }, 'none', later)).toMatchObject({ username: 'Will' });
      expect(await repository.updateProfile('u-wiii', { username: 'wiII' }, 'none', later)).toMatchObject({ username: 'wiII' });
      await expect(repository.updateProfile('u-wiii', { username: 'will' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      for (const name of ['will', 'WILL', 'wiII']) await expect(repository.updateProfile('u-new', { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      const db = openSqlite(path);
      try {
        expect(db.prepare("SELECT username_key, username_key_as_written FROM users WHERE id = 'u-will'").get()).toEqual({ username_key: 'will', username_key_as_written: 'will u-will' });
      } finally {
        db.close();
      }
    } finally {
      await repository.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SqliteIdentityRepository after a rollback to a release before username_key (b521ce9)', () => {
  const day = (n: number) => new Date(Date.UTC(2026, 0, n));
  // The old release's SQL, copied from b521ce9's adapter as a fixture: its sign-up and rename write username alone, and
  // only users_username (lower(username)) refuses a taken name there (its rename maps a violation naming "username" to
  // 409 'username: already taken').
  const OLD_INSERT = 'INSERT INTO users (id, email, username, website, visible_email, password_hash, password_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)';
  const OLD_RENAME = 'UPDATE users SET updated_at = @updatedAt, username = @username WHERE id = @id RETURNING *';
  const oldInsert = (db: ReturnType<typeof openSqlite>, id: string, username: string | null, createdDay: number) =>
    db.prepare(OLD_INSERT).run(id, `${id}@example.com`, username, null, 1, 'scrypt$x', 0, day(createdDay).toISOString(), day(createdDay).toISOString());
  const oldRename = (db: ReturnType<typeof openSqlite>, id: string, username: string | null) =>
    db.prepare(OLD_RENAME).get({ id, username, updatedAt: new Date().toISOString() });
  const user = (id: string, username: string | null, createdDay: number) => ({
    id,
    email: `${id}@example.com`,
    username,
    website: null,
    visibleEmail: false,
    passwordHash: 'scrypt$x',
    passwordVersion: 0,
    createdAt: day(createdDay),
    updatedAt: day(createdDay),
  });
  const register = async (repository: SqliteIdentityRepository, u: ReturnType<typeof user>) => {
    await repository.createInvitation({ id: `inv-${u.id}`, email: u.email, referralTokens: [], createdAt: u.createdAt, expiresAt: day(40), usedAt: null });
    expect(await repository.registerFromInvitation(`inv-${u.id}`, u, u.createdAt)).toBe(true);
  };
  const indexes = (path: string) => {
    const db = openSqlite(path);
    try {
      return (db.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'users' AND name LIKE 'users_username%' ORDER BY name").all() as Array<{ name: string }>).map((r) => r.name);
    } finally {
      db.close();
    }
  };
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = testTempDir('cards-identity-repo-');
    path = join(dir, 'identity.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses the old release a name another user holds in other ASCII capitals (users_username made again)', async () => {
    const repository = new SqliteIdentityRepository(path);
    await register(repository, user('u-fan', null, 1));
    await register(repository, user('u-other', null, 2));
    expect(await repository.updateProfile('u-fan', { username: 'CardFan' }, 'none', day(3))).toMatchObject({ username: 'CardFan' });
    await repository.close();
    expect(indexes(path)).toEqual(['users_username', 'users_username_key', 'users_username_key_as_written']);
    // Rolled back: the old release opens the file as it is (its two migrations are applied) and writes as it did.
    const rolledBack = openSqlite(path);
    try {
      expect(() => oldInsert(rolledBack, 'u-new', 'cardfan', 4)).toThrow(/UNIQUE constraint failed: index 'users_username'/);
      expect(() => oldRename(rolledBack, 'u-other', 'CARDFAN')).toThrow(/UNIQUE constraint failed: index 'users_username'/);
      expect(() => oldRename(rolledBack, 'u-other', 'CardFan')).toThrow(/username/);
      expect(oldRename(rolledBack, 'u-other', 'fan_two')).toMatchObject({ username: 'fan_two' });
    } finally {
      rolledBack.close();
    }
  });

  it('keeps the releases from bf8c022 on answering 409 for a name taken in other capitals: their key index is checked first', async () => {
    const repository = new SqliteIdentityRepository(path);
    await register(repository, user('u-fan', 'CardFan', 1));
    await register(repository, user('u-other', null, 2));
    await repository.close();
    // bf8c022's rename (copied as a fixture): username and username_key, 409 only on a violation naming username_key.
    const rolledBack = openSqlite(path);
    try {
      const bf8c022Rename = rolledBack.prepare('UPDATE users SET updated_at = @updatedAt, username = @username, username_key = @usernameKey WHERE id = @id RETURNING *');
      expect(() => bf8c022Rename.get({ id: 'u-other', username: 'cardfan', usernameKey: 'cardfan', updatedAt: day(3).toISOString() })).toThrow(/UNIQUE constraint failed: users\.username_key/);
    } finally {
      rolledBack.close();
    }
  });

  it('answers 409 when only users_username refuses a name: a first key left stale by the old release\'s rename', async () => {
    const repository = new SqliteIdentityRepository(path);
    await register(repository, user('u-will', 'alice', 1));
    await register(repository, user('u-other', null, 2));
    await repository.close();
    const rolledBack = openSqlite(path);
    oldRename(rolledBack, 'u-will', 'WILL'); // username_key stays "alice"; the next start gives "wlll" as its second key
    rolledBack.close();
    const upgraded = new SqliteIdentityRepository(path);
    try {
      // Neither key of "will" is held ("alice", "wlll"): only lower() sees "WILL".
      await expect(upgraded.updateProfile('u-other', { username: 'will' }, 'none', day(5))).rejects.toThrow(new AlreadyExistsError('username: already taken'));
      expect(await upgraded.findUserById('u-other')).toMatchObject({ username: null });
    } finally {
      await upgraded.close();
    }
  });

  it('starts on names stored equal under lower() while rolled back, warns, and makes the index once they differ', async () => {
    // A file upgraded by the build before migration 8 (no users_username), then written by the old release.
    const file = openSqlite(path, MIGRATIONS.slice(0, 7));
    file.close();
    const rolledBack = openSqlite(path);
    oldInsert(rolledBack, 'u-bob', 'bob', 1);
    oldInsert(rolledBack, 'u-bob2', 'Bob', 2);
    oldInsert(rolledBack, 'u-other', 'other', 3);
    rolledBack.close();
    const warnings: unknown[][] = [];
    const logger = { warn: (...args: unknown[]) => void warnings.push(args) };
    const upgraded = new SqliteIdentityRepository(path, { logger });
    try {
      expect(warnings).toEqual([[{ names: 1, index: 'users_username' }, expect.stringContaining('users_username is not made again')]]);
      expect(indexes(path)).toEqual(['users_username_key', 'users_username_key_as_written']);
      // Both keep their names (the younger under "key id"); no one else takes either; the younger renames away.
      expect(await upgraded.findUserById('u-bob2')).toMatchObject({ username: 'Bob' });
      await expect(upgraded.updateProfile('u-other', { username: 'BOB' }, 'none', day(4))).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await upgraded.updateProfile('u-bob2', { username: 'robert' }, 'none', day(4))).toMatchObject({ username: 'robert' });
    } finally {
      await upgraded.close();
    }
    await new SqliteIdentityRepository(path, { logger }).close();
    expect(warnings).toHaveLength(1);
    expect(indexes(path)).toEqual(['users_username', 'users_username_key', 'users_username_key_as_written']);
  });
});
