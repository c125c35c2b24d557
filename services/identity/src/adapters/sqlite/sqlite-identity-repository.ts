import { AlreadyExistsError, openSqlite, type SqliteDatabase, type SqliteMigration } from '@cards/platform';
import type { Invitation, PasswordReset, ProfilePatch, Session, StoredProfileCondition, User } from '../../domain/model';
import type { IdentityRepository } from '../../domain/ports';
import { usernameKey } from '../../domain/username-key';

/**
 * Gives every stored username its usernameKey again, oldest first (created_at, then id), under a unique index made
 * anew. A name whose key an older name already holds (two look-alikes taken before the key joined them) stays as its
 * holder wrote it, under its key, a space and its user id, which no other name's key can be: the older name keeps the
 * key itself, so no one else can take a look-alike of either; the younger holder keeps theirs until they rename.
 */
export function rekeyUsernames(db: SqliteDatabase): void {
  db.exec('DROP INDEX IF EXISTS users_username_key');
  const rows = db.prepare('SELECT id, username FROM users WHERE username IS NOT NULL ORDER BY created_at, id').all() as Array<{ id: string; username: string }>;
  const setKey = db.prepare('UPDATE users SET username_key = ? WHERE id = ?');
  const held = new Set<string>();
  for (const row of rows) {
    const key = usernameKey(row.username);
    setKey.run(held.has(key) ? `${key} ${row.id}` : key, row.id);
    held.add(key);
  }
  db.exec('CREATE UNIQUE INDEX users_username_key ON users(username_key) WHERE username_key IS NOT NULL');
}

export const MIGRATIONS: readonly SqliteMigration[] = [
  `CREATE TABLE users (
     id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, username TEXT, website TEXT, visible_email INTEGER NOT NULL,
     password_hash TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
   CREATE UNIQUE INDEX users_username ON users(lower(username)) WHERE username IS NOT NULL;
   CREATE TABLE invitations (id TEXT PRIMARY KEY, email TEXT NOT NULL, referral_tokens TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, used_at TEXT);
   CREATE TABLE sessions (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, revoked_at TEXT);
   CREATE INDEX sessions_user ON sessions(user_id);
   CREATE TABLE password_resets (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT NOT NULL, used_at TEXT);`,
  // Sessions and reset links stored before keep NULL: they are held to revocation and to the current version.
  `ALTER TABLE users ADD COLUMN password_version INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE sessions ADD COLUMN password_version INTEGER;
   ALTER TABLE password_resets ADD COLUMN password_version INTEGER;`,
  // Usernames unique under usernameKey (Unicode case folding of the NFC form), which SQLite's ASCII-only lower() cannot
  // compute: the adapter writes it beside the name. Names stored before were ASCII only, whose key is lower().
  `ALTER TABLE users ADD COLUMN username_key TEXT;
   UPDATE users SET username_key = lower(username) WHERE username IS NOT NULL;
   DROP INDEX IF EXISTS users_username;
   CREATE UNIQUE INDEX users_username_key ON users(username_key) WHERE username_key IS NOT NULL;`,
  // Usernames unique under the confusable skeleton too (usernameKey: "coco" and Cyrillic "сосо" are one name).
  rekeyUsernames,
];

interface UserRow {
  id: string;
  email: string;
  username: string | null;
  website: string | null;
  visible_email: number;
  password_hash: string;
  password_version: number;
  created_at: string;
  updated_at: string;
}

interface SessionRow {
  id: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
  password_version: number | null;
}

interface PasswordResetRow {
  id: string;
  user_id: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  password_version: number | null;
}

const date = (s: string) => new Date(s);
const maybeDate = (s: string | null) => (s ? new Date(s) : null);
const iso = (d: Date) => d.toISOString();
const maybeIso = (d: Date | null) => (d ? d.toISOString() : null);

function userFromRow(r: UserRow): User {
  return {
    id: r.id,
    email: r.email,
    username: r.username,
    website: r.website,
    visibleEmail: r.visible_email === 1,
    passwordHash: r.password_hash,
    passwordVersion: r.password_version,
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

const STORED_PROFILE_SQL: Record<StoredProfileCondition, string> = {
  none: '',
  'has-username': ' AND username IS NOT NULL',
  'email-visible': ' AND visible_email = 1',
};

function isUniqueViolation(err: unknown, column: string): boolean {
  // Not `instanceof Error`: better-sqlite3's native addon is shared by every vm context (jest runs
  // each test file in one), so its errors can come from another realm's Error.
  const message = (err as { message?: unknown } | null)?.message;
  return typeof message === 'string' && /UNIQUE constraint failed/.test(message) && message.includes(column);
}

/** Identity data in the service's own SQLite file. */
export class SqliteIdentityRepository implements IdentityRepository {
  private readonly db: SqliteDatabase;

  constructor(path: string) {
    this.db = openSqlite(path, MIGRATIONS);
  }

  async createInvitation(i: Invitation): Promise<void> {
    this.db
      .prepare('INSERT INTO invitations (id, email, referral_tokens, created_at, expires_at, used_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(i.id, i.email, JSON.stringify(i.referralTokens), iso(i.createdAt), iso(i.expiresAt), maybeIso(i.usedAt));
  }

  async findInvitation(id: string): Promise<Invitation | null> {
    const r = this.db.prepare('SELECT * FROM invitations WHERE id = ?').get(id) as
      | { id: string; email: string; referral_tokens: string; created_at: string; expires_at: string; used_at: string | null }
      | undefined;
    if (!r) return null;
    return { id: r.id, email: r.email, referralTokens: JSON.parse(r.referral_tokens) as string[], createdAt: date(r.created_at), expiresAt: date(r.expires_at), usedAt: maybeDate(r.used_at) };
  }

  async registerFromInvitation(invitationId: string, u: User, usedAt: Date): Promise<boolean> {
    try {
      return this.db.transaction(() => {
        const marked = this.db.prepare('UPDATE invitations SET used_at = ? WHERE id = ? AND used_at IS NULL').run(iso(usedAt), invitationId);
        if (marked.changes === 0) return false;
        this.insertUser(u);
        return true;
      })();
    } catch (err) {
      if (isUniqueViolation(err, 'email')) throw new AlreadyExistsError('An account with this email already exists');
      throw err;
    }
  }

  private insertUser(u: User): void {
    this.db
      .prepare('INSERT INTO users (id, email, username, username_key, website, visible_email, password_hash, password_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(u.id, u.email, u.username, u.username === null ? null : usernameKey(u.username), u.website, u.visibleEmail ? 1 : 0, u.passwordHash, u.passwordVersion, iso(u.createdAt), iso(u.updatedAt));
  }

  async findUserById(id: string): Promise<User | null> {
    const r = this.db.prepare('SELECT * FROM users WHERE id = ?').get(id) as UserRow | undefined;
    return r ? userFromRow(r) : null;
  }

  async findUserByEmail(email: string): Promise<User | null> {
    const r = this.db.prepare('SELECT * FROM users WHERE email IN (?, ?) ORDER BY email = ? DESC LIMIT 1').get(email, email.normalize('NFD'), email) as UserRow | undefined;
    return r ? userFromRow(r) : null;
  }

  async findUsersByIds(ids: readonly string[]): Promise<User[]> {
    if (ids.length === 0) return [];
    const rows = this.db.prepare(`SELECT * FROM users WHERE id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as UserRow[];
    return rows.map(userFromRow);
  }

  async updateProfile(userId: string, patch: ProfilePatch, requires: StoredProfileCondition, updatedAt: Date): Promise<User | null> {
    const sets = ['updated_at = @updatedAt'];
    // Sending one's own name again as stored keeps its key: a look-alike kept from before the key holds one of its own.
    if (patch.username !== undefined) sets.push('username_key = CASE WHEN username IS @username THEN username_key ELSE @usernameKey END', 'username = @username');
    if (patch.website !== undefined) sets.push('website = @website');
    if (patch.visibleEmail !== undefined) sets.push('visible_email = @visibleEmail');
    try {
      const row = this.db.prepare(`UPDATE users SET ${sets.join(', ')} WHERE id = @id${STORED_PROFILE_SQL[requires]} RETURNING *`).get({
        id: userId,
        updatedAt: iso(updatedAt),
        username: patch.username ?? null,
        usernameKey: patch.username ? usernameKey(patch.username) : null,
        website: patch.website ?? null,
        visibleEmail: patch.visibleEmail ? 1 : 0,
      }) as UserRow | undefined;
      return row ? userFromRow(row) : null;
    } catch (err) {
      if (isUniqueViolation(err, 'username_key')) throw new AlreadyExistsError('username: already taken');
      throw err;
    }
  }

  async createSession(s: Session): Promise<void> {
    this.db
      .prepare('INSERT INTO sessions (id, user_id, created_at, expires_at, revoked_at, password_version) VALUES (?, ?, ?, ?, ?, ?)')
      .run(s.id, s.userId, iso(s.createdAt), iso(s.expiresAt), maybeIso(s.revokedAt), s.passwordVersion);
  }

  async findSession(id: string): Promise<Session | null> {
    const r = this.db.prepare('SELECT * FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
    return r
      ? { id: r.id, userId: r.user_id, createdAt: date(r.created_at), expiresAt: date(r.expires_at), revokedAt: maybeDate(r.revoked_at), passwordVersion: r.password_version }
      : null;
  }

  async revokeSession(id: string, at: Date): Promise<void> {
    this.db.prepare('UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(iso(at), id);
  }

  async createPasswordReset(p: PasswordReset): Promise<void> {
    this.db
      .prepare('INSERT INTO password_resets (id, user_id, created_at, expires_at, used_at, password_version) VALUES (?, ?, ?, ?, ?, ?)')
      .run(p.id, p.userId, iso(p.createdAt), iso(p.expiresAt), maybeIso(p.usedAt), p.passwordVersion);
  }

  async findPasswordReset(id: string): Promise<PasswordReset | null> {
    const r = this.db.prepare('SELECT * FROM password_resets WHERE id = ?').get(id) as PasswordResetRow | undefined;
    return r
      ? { id: r.id, userId: r.user_id, createdAt: date(r.created_at), expiresAt: date(r.expires_at), usedAt: maybeDate(r.used_at), passwordVersion: r.password_version }
      : null;
  }

  async completePasswordReset(reset: PasswordReset, passwordHash: string, at: Date): Promise<boolean> {
    const userId = reset.userId;
    return this.db.transaction(() => {
      const marked = this.db.prepare('UPDATE password_resets SET used_at = ? WHERE id = ? AND used_at IS NULL').run(iso(at), reset.id);
      if (marked.changes === 0) return false;
      const replaced = this.db
        .prepare('UPDATE users SET password_hash = ?, password_version = password_version + 1, updated_at = ? WHERE id = ? AND password_version = coalesce(?, password_version)')
        .run(passwordHash, iso(at), userId, reset.passwordVersion);
      if (replaced.changes === 0) return false;
      this.db.prepare('UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL').run(iso(at), userId);
      // Other outstanding reset links die with this one.
      this.db.prepare('UPDATE password_resets SET used_at = ? WHERE user_id = ? AND used_at IS NULL').run(iso(at), userId);
      return true;
    })();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
