import { usernameCaseFold } from '@cards/card-rules';
import { AlreadyExistsError, openSqlite, writesWaitBetweenTries, type Logger, type SqliteDatabase, type SqliteMigration } from '@cards/platform';
import type { Invitation, PasswordReset, ProfilePatch, Session, StoredProfileCondition, User } from '../../domain/model';
import { emailLookupOrder } from '../../domain/model';
import type { IdentityRepository } from '../../domain/ports';
import { usernameKey, usernameKeyAsWritten } from '../../domain/username-key';

/**
 * Gives every stored username its usernameKey again, oldest first (created_at, then id), under a unique index made
 * anew. A name whose key an older name already holds (two look-alikes taken before the key joined them) stays as its
 * holder wrote it, under its key, a space and its user id, which no other name's key can be: the older name keeps the
 * key itself. No one else can take a look-alike of either: a name is taken while anyone holds its key or "key id"
 * (updateProfile), and when the holder of the key itself leaves it, the oldest "key id" holder is given the key in
 * the same transaction. The younger holder keeps theirs, capitals changed too, until they take a name of another key.
 */
export function rekeyUsernames(db: SqliteDatabase): void {
  keyUsernames(db, USERNAME_KEYS[0]);
}

/**
 * Gives every stored username its usernameKeyAsWritten (migration 5), as rekeyUsernames does its usernameKey: oldest
 * first, a name whose key an older name already holds ("wiII" beside an older "will") under its key, a space and its
 * user id, promoted by the same rules.
 */
export function keyUsernamesAsWritten(db: SqliteDatabase): void {
  keyUsernames(db, USERNAME_KEYS[1]);
}

function keyUsernames(db: SqliteDatabase, { column, of, index }: UsernameKeyColumn): void {
  db.exec(`DROP INDEX IF EXISTS ${index}`);
  const rows = db.prepare('SELECT id, username FROM users WHERE username IS NOT NULL ORDER BY created_at, id').all() as Array<{ id: string; username: string }>;
  const setKey = db.prepare(`UPDATE users SET ${column} = ? WHERE id = ?`);
  const held = new Set<string>();
  for (const row of rows) {
    const key = of(row.username);
    setKey.run(held.has(key) ? `${key} ${row.id}` : key, row.id);
    held.add(key);
  }
  db.exec(`CREATE UNIQUE INDEX ${index} ON users(${column}) WHERE ${column} IS NOT NULL`);
}

/**
 * The two keys a username is unique under, each a column with its own unique index: a name is taken when another
 * user holds either of its keys. Each follows the same rules for look-alikes kept from before ("key id", promotion).
 */
interface UsernameKeyColumn {
  column: 'username_key' | 'username_key_as_written';
  of: (name: string) => string;
  index: string;
}
const USERNAME_KEYS: readonly [UsernameKeyColumn, UsernameKeyColumn] = [
  { column: 'username_key', of: usernameKey, index: 'users_username_key' },
  { column: 'username_key_as_written', of: usernameKeyAsWritten, index: 'users_username_key_as_written' },
];

/**
 * A look-alike kept from before holds its key, a space and its id. No name's own key has a space: names hold none, and
 * confusables.txt maps only spaces to one.
 */
const isLookAlikeKey = (key: string) => key.includes(' ');
/** The keys "key id", as a range of the index: from "key " up to "key!" (" " is U+0020, "!" the next code point). */
const lookAlikeKeyRange = (key: string): [string, string] => [`${key} `, `${key}!`];

/**
 * Gives the key itself to the oldest user holding it as "key id" in its column, when no one else holds the key itself
 * in either column: the rule of taking a name (refuseIfTaken). "will" changing to "WILL" leaves "will" as its second
 * key but still holds it as its first, so a look-alike "wiII" under "will id" is not given it.
 */
function promoteLookAlike(db: SqliteDatabase, { column }: UsernameKeyColumn, key: string): void {
  const [from, to] = lookAlikeKeyRange(key);
  const candidate = db.prepare(`SELECT id FROM users WHERE ${column} >= ? AND ${column} < ? ORDER BY created_at, id LIMIT 1`).get(from, to) as { id: string } | undefined;
  if (!candidate) return;
  if (USERNAME_KEYS.some((other) => db.prepare(`SELECT 1 FROM users WHERE ${other.column} = ? AND id != ?`).get(key, candidate.id))) return;
  db.prepare(`UPDATE users SET ${column} = ? WHERE id = ?`).run(key, candidate.id);
}

/** The identity_meta row holding when the second keys were last checked against the names (keyUsernamesChangedSince). */
const SECOND_KEYS_CHECKED_AT = 'username_key_as_written_checked_at';
/** Names changed this long before the last check are checked again: the clocks of the processes that wrote them may differ. */
const CHECK_CLOCK_MARGIN_MS = 60 * 60 * 1000;

/**
 * Gives the names changed since the last check their usernameKeyAsWritten again, at every start. The version before
 * the second key (a6c326c and earlier) neither writes nor clears it: a rename there sets username, username_key and
 * updated_at only, and a sign-up leaves it NULL. After a rollback to it and an upgrade again (migration 5 does not run
 * twice), such a name holds a stale second key: its owner's unchanged save is refused, another user is refused the
 * name left, and the new name lacks its look-alike rule. So the users updated since the last check (less a margin; all
 * of them when no check was recorded, as after an upgrade by an earlier build of this version) whose second key is not
 * their name's (nor its "key id") lose it, then are keyed oldest first: the key itself when no one else holds it in
 * either column, else "key id"; a key left is promoted by the usual rule. One IMMEDIATE transaction; the check time is
 * recorded. Returns how many users were keyed again.
 */
export function keyUsernamesChangedSince(db: SqliteDatabase, now: Date): number {
  const { column, of } = USERNAME_KEYS[1];
  return db.transaction(() => {
    const mark = db.prepare('SELECT value FROM identity_meta WHERE name = ?').get(SECOND_KEYS_CHECKED_AT) as { value: string } | undefined;
    const select = `SELECT id, username, ${column} AS key FROM users`;
    const rows = (
      mark ? db.prepare(`${select} WHERE updated_at >= ? ORDER BY created_at, id`).all(iso(new Date(Date.parse(mark.value) - CHECK_CLOCK_MARGIN_MS))) : db.prepare(`${select} ORDER BY created_at, id`).all()
    ) as Array<{ id: string; username: string | null; key: string | null }>;
    const stale = rows.filter(({ id, username, key }) => (username === null ? key !== null : key !== of(username) && key !== `${of(username)} ${id}`));
    const clear = db.prepare(`UPDATE users SET ${column} = NULL WHERE id = ?`);
    for (const row of stale) clear.run(row.id);
    const setKey = db.prepare(`UPDATE users SET ${column} = ? WHERE id = ?`);
    for (const { id, username } of stale) {
      if (username === null) continue;
      const key = of(username);
      const held = USERNAME_KEYS.some((other) => db.prepare(`SELECT 1 FROM users WHERE ${other.column} = ? AND id != ?`).get(key, id));
      setKey.run(held ? `${key} ${id}` : key, id);
    }
    for (const { key } of stale) {
      if (key !== null && !isLookAlikeKey(key)) for (const keyColumn of USERNAME_KEYS) promoteLookAlike(db, keyColumn, key);
    }
    db.prepare('INSERT INTO identity_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value').run(SECOND_KEYS_CHECKED_AT, iso(now));
    return stale.length;
  }).immediate();
}

/**
 * The unique index of the releases before username_key (b521ce9 and earlier: migrations 1-2 only), the only thing that
 * refuses a taken name there: their sign-up and rename write username alone, and a rename answers 409 on its unique
 * violation. Migration 3 dropped it; rolled back to such a release, two users could take one name (migration 8).
 */
const LOWER_USERNAME_INDEX = 'users_username';

/**
 * Makes users_username again, unless stored names already break it. This version's keys imply it: lower() folds ASCII
 * letters only, so two names equal under it differ only in the case of ASCII letters, and usernameKey, a function of
 * usernameCaseFold, folds those (username-key.test.ts); one key has one holder here, a look-alike kept from before
 * holding "key id" only for another name up to case (refuseIfLookAlikeNamed). Names equal under lower() can only have been
 * stored while rolled back to a release without the index: they are left as they are (keyUsernamesChangedSince keeps
 * the younger under "key id", as rekeyUsernames does its look-alikes) and the index waits for them to differ; returns
 * how many lower() values more than one user holds (0: the index is there). The key indexes are made again after it:
 * SQLite checks a table's newest index first, and the releases from bf8c022 to 963a0ef answer 409 only on a
 * violation naming username_key (a name taken in other capitals breaks both there).
 */
export function restoreLowerUsernameIndex(db: SqliteDatabase): number {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?").get(LOWER_USERNAME_INDEX)) return 0;
  const shared = db.prepare('SELECT count(*) AS n FROM (SELECT 1 FROM users WHERE username IS NOT NULL GROUP BY lower(username) HAVING count(*) > 1)').get() as { n: number };
  if (shared.n > 0) return shared.n;
  db.exec(`CREATE UNIQUE INDEX ${LOWER_USERNAME_INDEX} ON users(lower(username)) WHERE username IS NOT NULL`);
  for (const { column, index } of USERNAME_KEYS) db.exec(`DROP INDEX ${index}; CREATE UNIQUE INDEX ${index} ON users(${column}) WHERE ${column} IS NOT NULL`);
  return 0;
}

/** refuseIfTaken's refusal; toPromote: keys held in a column only under "key id", each to be given to its oldest such holder. */
class UsernameTaken extends Error {
  constructor(readonly toPromote: ReadonlyArray<readonly [UsernameKeyColumn, string]>) {
    super('username: already taken');
  }
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
  // And under the skeleton of the name as written (usernameKeyAsWritten: "wiII" with capital i's and "will").
  (db) => {
    db.exec('ALTER TABLE users ADD COLUMN username_key_as_written TEXT');
    keyUsernamesAsWritten(db);
  },
  // When the names changed since were last given their second key (keyUsernamesChangedSince, at every start); the
  // version before the second key writes updated_at on every rename, which this index finds.
  `CREATE TABLE identity_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
   CREATE INDEX users_updated_at ON users(updated_at);`,
  // Expired sessions, invitations and reset links are deleted by expiry (deleteExpired).
  `CREATE INDEX sessions_expires_at ON sessions(expires_at);
   CREATE INDEX invitations_expires_at ON invitations(expires_at);
   CREATE INDEX password_resets_expires_at ON password_resets(expires_at);`,
  // Usernames unique under SQLite's lower() again, for a rollback to a release before username_key: an older release must
  // run on migrated data (docs/deploy.md). Skipped when stored names break it; every start tries again (the constructor).
  (db) => {
    restoreLowerUsernameIndex(db);
  },
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

  constructor(path: string, options: { logger?: Pick<Logger, 'warn'> } = {}) {
    this.db = openSqlite(path, MIGRATIONS);
    keyUsernamesChangedSince(this.db, new Date());
    // A start never fails on names stored equal under lower() while rolled back: the index waits, with a warning.
    const shared = this.db.transaction(() => restoreLowerUsernameIndex(this.db)).immediate();
    if (shared > 0) {
      options.logger?.warn(
        { names: shared, index: LOWER_USERNAME_INDEX },
        'usernames held by more than one user up to capitals (stored while rolled back to a release before username_key): users_username is not made again until they differ, so such a release would not refuse a taken name (docs/deploy.md)',
      );
    }
    // A write meeting another process's lock waits between tries, the service answering meanwhile (docs/decisions.md,
    // "Waiting for another process's lock on a SQLite store").
    writesWaitBetweenTries(this, this.db, ['createInvitation', 'registerFromInvitation', 'updateProfile', 'createSession', 'revokeSession', 'createPasswordReset', 'completePasswordReset', 'rehashPassword', 'deleteExpired']);
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
      .prepare('INSERT INTO users (id, email, username, username_key, username_key_as_written, website, visible_email, password_hash, password_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(u.id, u.email, u.username, u.username === null ? null : usernameKey(u.username), u.username === null ? null : usernameKeyAsWritten(u.username), u.website, u.visibleEmail ? 1 : 0, u.passwordHash, u.passwordVersion, iso(u.createdAt), iso(u.updatedAt));
  }

  async findUserById(id: string): Promise<User | null> {
    const r = this.db.prepare('SELECT * FROM users WHERE id = ?').get(id) as UserRow | undefined;
    return r ? userFromRow(r) : null;
  }

  async findUserByEmail(spellings: string | readonly string[]): Promise<User | null> {
    const order = emailLookupOrder(spellings);
    const rows = this.db.prepare(`SELECT * FROM users WHERE email IN (${order.map(() => '?').join(', ')})`).all(...order) as UserRow[];
    const r = rows.sort((a, b) => order.indexOf(a.email) - order.indexOf(b.email))[0];
    return r ? userFromRow(r) : null;
  }

  async findUsersByIds(ids: readonly string[]): Promise<User[]> {
    if (ids.length === 0) return [];
    const rows = this.db.prepare(`SELECT * FROM users WHERE id IN (SELECT value FROM json_each(?))`).all(JSON.stringify(ids)) as UserRow[];
    return rows.map(userFromRow);
  }

  async updateProfile(userId: string, patch: ProfilePatch, requires: StoredProfileCondition, updatedAt: Date): Promise<User | null> {
    const sets = ['updated_at = @updatedAt'];
    if (patch.username !== undefined) sets.push('username = @username', 'username_key = @username_key', 'username_key_as_written = @username_key_as_written');
    if (patch.website !== undefined) sets.push('website = @website');
    if (patch.visibleEmail !== undefined) sets.push('visible_email = @visibleEmail');
    try {
      // One IMMEDIATE transaction: the check of the look-alikes kept from before, the change and the promotion below.
      const row = this.db.transaction((): UserRow | undefined => {
        const current = this.db.prepare('SELECT username, username_key, username_key_as_written FROM users WHERE id = ?').get(userId) as
          | (Pick<UserRow, 'username'> & Record<UsernameKeyColumn['column'], string | null>)
          | undefined;
        if (!current) return undefined;
        const keys = { username_key: null as string | null, username_key_as_written: null as string | null };
        const left: Array<[UsernameKeyColumn, string]> = [];
        const wantedKeys = patch.username ? USERNAME_KEYS.map(({ of }) => of(patch.username!)) : [];
        for (const [slot, keyColumn] of USERNAME_KEYS.entries()) {
          const held = current.username === null ? null : current[keyColumn.column];
          let key: string | null = null;
          if (patch.username) {
            const wanted = wantedKeys[slot]!;
            if (held === wanted) {
              // Another spelling of the key one holds: not the name of a look-alike kept from before under "key id".
              this.refuseIfLookAlikeNamed(keyColumn, wanted, patch.username, userId);
              key = held;
            } else if (held !== null && held.startsWith(`${wanted} `) && usernameCaseFold(patch.username) === usernameCaseFold(current.username!)) {
              // A look-alike kept from before ("key id") may change its capitals or send its name again, keeping its key.
              key = held;
            } else if (USERNAME_KEYS.some(({ column }, other) => other !== slot && current.username !== null && current[column] === wanted && wantedKeys[other] === wanted)) {
              // The key itself, held in the other column and kept there: this user holds it in both ("WILL" back to "will"),
              // but a look-alike's own name. A look-alike given it in this column by the build before 6938ecd keeps it;
              // this user then holds it as "key id".
              this.refuseIfLookAlikeNamed(keyColumn, wanted, patch.username, userId);
              key = this.db.prepare(`SELECT 1 FROM users WHERE ${keyColumn.column} = ? AND id != ?`).get(wanted, userId) ? `${wanted} ${userId}` : wanted;
            } else {
              this.refuseIfTaken(wanted, userId);
              key = wanted;
            }
          }
          keys[keyColumn.column] = key;
          if (patch.username !== undefined && held !== null && key !== held && !isLookAlikeKey(held)) left.push([keyColumn, held]);
        }
        const changed = this.db.prepare(`UPDATE users SET ${sets.join(', ')} WHERE id = @id${STORED_PROFILE_SQL[requires]} RETURNING *`).get({
          id: userId,
          updatedAt: iso(updatedAt),
          username: patch.username ?? null,
          ...keys,
          website: patch.website ?? null,
          visibleEmail: patch.visibleEmail ? 1 : 0,
        }) as UserRow | undefined;
        // Leaving a key one held itself hands it to the oldest look-alike kept from before under "key id", in either
        // column, when no one holds it itself in either (promoteLookAlike).
        if (changed) for (const [, held] of left) for (const keyColumn of USERNAME_KEYS) this.promoteLookAlike(keyColumn, held);
        return changed;
      }).immediate();
      return row ? userFromRow(row) : null;
    } catch (err) {
      if (err instanceof UsernameTaken) {
        const { toPromote } = err;
        if (toPromote.length > 0) this.db.transaction(() => toPromote.forEach(([keyColumn, key]) => this.promoteLookAlike(keyColumn, key))).immediate();
        throw new AlreadyExistsError(err.message);
      }
      // username_key, username_key_as_written, or users_username (lower()) under a first key left stale by a release before
      // username_key, whose rename writes username alone.
      if (isUniqueViolation(err, 'username')) throw new AlreadyExistsError('username: already taken');
      throw err;
    }
  }

  /**
   * AlreadyExistsError when another user holds the key, itself or as a look-alike kept from before ("key id"), in
   * either key column: both keys are a case fold of a skeleton, and usernameKey(x) is usernameKeyAsWritten of x's case
   * fold, so one name's first key matching another's second is one name too ("WILL" is "will", which "wiII" reads as).
   * A look-alike without a holder of the key itself in its column (left by a version that did not promote it) is
   * promoted first.
   */
  private refuseIfTaken(key: string, userId: string): void {
    const [from, to] = lookAlikeKeyRange(key);
    let taken = false;
    const toPromote: Array<[UsernameKeyColumn, string]> = [];
    for (const keyColumn of USERNAME_KEYS) {
      const { column } = keyColumn;
      const holder = this.db
        .prepare(`SELECT ${column} AS key FROM users WHERE id != ? AND (${column} = ? OR (${column} >= ? AND ${column} < ?)) ORDER BY ${column} = ? DESC LIMIT 1`)
        .get(userId, key, from, to, key) as { key: string } | undefined;
      if (!holder) continue;
      taken = true;
      if (holder.key !== key) toPromote.push([keyColumn, key]);
    }
    // The refusal rolls the transaction back: the promotion runs in one of its own (updateProfile).
    if (taken) throw new UsernameTaken(toPromote);
  }

  /**
   * AlreadyExistsError when a look-alike kept from before under "key id" in the key's column has the name, up to case
   * (usernameCaseFold): the holder of the key itself may take any spelling of it but theirs.
   */
  private refuseIfLookAlikeNamed({ column }: UsernameKeyColumn, key: string, name: string, userId: string): void {
    const [from, to] = lookAlikeKeyRange(key);
    const lookAlikes = this.db.prepare(`SELECT username FROM users WHERE id != ? AND ${column} >= ? AND ${column} < ?`).all(userId, from, to) as Array<{ username: string }>;
    const folded = usernameCaseFold(name);
    if (lookAlikes.some((row) => usernameCaseFold(row.username) === folded)) throw new AlreadyExistsError('username: already taken');
  }

  private promoteLookAlike(keyColumn: UsernameKeyColumn, key: string): void {
    promoteLookAlike(this.db, keyColumn, key);
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

  async rehashPassword(userId: string, previousHash: string, passwordHash: string): Promise<boolean> {
    return this.db.prepare('UPDATE users SET password_hash = ? WHERE id = ? AND password_hash = ?').run(passwordHash, userId, previousHash).changes > 0;
  }

  async deleteExpired(before: Date, limit: number): Promise<number> {
    const cutoff = iso(before);
    return this.db.transaction(() =>
      ['sessions', 'invitations', 'password_resets'].reduce(
        (deleted, table) => deleted + this.db.prepare(`DELETE FROM ${table} WHERE id IN (SELECT id FROM ${table} WHERE expires_at <= ? LIMIT ?)`).run(cutoff, limit).changes,
        0,
      ),
    )();
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
