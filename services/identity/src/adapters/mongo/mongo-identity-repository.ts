import { usernameCaseFold } from '@cards/card-rules';
import { AlreadyExistsError, isDuplicateKeyError, withOptionalTransaction, type MongoConnection } from '@cards/platform';
import type { ClientSession, Collection, Filter, UpdateFilter } from 'mongodb';
import type { Invitation, PasswordReset, ProfilePatch, Session, StoredProfileCondition, User } from '../../domain/model';
import { EXPIRED_RECORD_RETENTION_MS, emailLookupOrder } from '../../domain/model';
import type { IdentityRepository } from '../../domain/ports';
import { usernameKey, usernameKeyAsWritten } from '../../domain/username-key';

interface UserDocument {
  _id: string;
  email: string;
  username: string | null;
  /**
   * Present only when username is set: its usernameKey (case fold and confusable skeleton), unique under a sparse
   * index; a look-alike name kept from before that key holds its key, a space and its user id (rekeyUsernames) until
   * the holder of the key itself leaves it (updateProfile promotes the oldest).
   */
  usernameKey?: string;
  /**
   * Present only when username is set: its usernameKeyAsWritten (the skeleton of the name as written, case-folded:
   * "wiII" with capital i's is "will"), unique under a sparse index of its own, with the same rules for look-alikes
   * kept from before. Absent on documents of earlier versions until the repository opens (rekeyUsernames).
   */
  usernameKeyAsWritten?: string;
  /**
   * Every key the two fields above hold, once each ("key id" ones too), under a unique multikey index: unique across
   * documents, so no two users hold one key whichever field each holds it in. The fields' own indexes cannot refuse that
   * across them, and without transactions two renames at once ("WILL" taking "will" as its first key, "wiII" as its
   * second) both passed the checks before their writes; this index refuses the second write. Written in the same update
   * as the fields; absent without a username. Filled at start for the documents stored without it or changed since by
   * an earlier version during a rolling upgrade (fillNameKeys); one found stale by a write is mended then (mendNameKeys).
   */
  nameKeys?: string[];
  /** Earlier versions' key (the case fold only), rewritten as usernameKey when the repository opens. */
  usernameLower?: string;
  website: string | null;
  visibleEmail: boolean;
  passwordHash: string;
  /** Absent on users stored before password versions: 0. */
  passwordVersion?: number;
  createdAt: Date;
  updatedAt: Date;
}

interface InvitationDocument {
  _id: string;
  email: string;
  referralTokens: string[];
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  /** The user being registered with this invitation, while a registration without transactions is in progress. */
  claimedBy?: string;
}

interface SessionDocument {
  _id: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  revokedAt: Date | null;
  /** Absent on sessions stored before password versions. */
  passwordVersion?: number | null;
}

interface PasswordResetDocument {
  _id: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  /** Absent on links stored before password versions. */
  passwordVersion?: number | null;
}

function toUserDocument(u: User): UserDocument {
  const doc: UserDocument = {
    _id: u.id,
    email: u.email,
    username: u.username,
    website: u.website,
    visibleEmail: u.visibleEmail,
    passwordHash: u.passwordHash,
    passwordVersion: u.passwordVersion,
    createdAt: u.createdAt,
    updatedAt: u.updatedAt,
  };
  if (u.username !== null) {
    doc.usernameKey = usernameKey(u.username);
    doc.usernameKeyAsWritten = usernameKeyAsWritten(u.username);
    doc.nameKeys = nameKeysOf(doc);
  }
  return doc;
}

function fromUserDocument(d: UserDocument): User {
  return {
    id: d._id,
    email: d.email,
    username: d.username,
    website: d.website,
    visibleEmail: d.visibleEmail,
    passwordHash: d.passwordHash,
    passwordVersion: d.passwordVersion ?? 0,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

/** Matches a user whose passwordVersion is `version`; a user stored before versions has none, which is 0. */
const passwordVersionIs = (version: number): Filter<UserDocument> =>
  version === 0 ? { $or: [{ passwordVersion: 0 }, { passwordVersion: { $exists: false } }] } : { passwordVersion: version };

const STORED_PROFILE_FILTER: Record<StoredProfileCondition, Filter<UserDocument>> = {
  none: {},
  'has-username': { username: { $ne: null } },
  'email-visible': { visibleEmail: true },
};

/**
 * A look-alike kept from before holds its key, a space and its id. No name's own key has a space: names hold none, and
 * confusables.txt maps only spaces to one.
 */
const isLookAlikeKey = (key: string) => key.includes(' ');
/** The keys "key id", as a range of the index: from "key " up to "key!" (" " is U+0020, "!" the next code point). */
const lookAlikeKeyRange = (key: string): [string, string] => [`${key} `, `${key}!`];

/** The two keys a username is unique under, each a field with its own unique sparse index (see UserDocument). */
type UsernameKeyField = 'usernameKey' | 'usernameKeyAsWritten';
const USERNAME_KEYS: ReadonlyArray<{ field: UsernameKeyField; of: (name: string) => string }> = [
  { field: 'usernameKey', of: usernameKey },
  { field: 'usernameKeyAsWritten', of: usernameKeyAsWritten },
];
const isUsernameKeyDuplicate = (err: unknown) => isDuplicateKeyError(err, 'nameKeys') || USERNAME_KEYS.some(({ field }) => isDuplicateKeyError(err, field));

type KeyFields = Pick<UserDocument, UsernameKeyField>;
/** The nameKeys of a document holding these key fields: each key once, undefined when it holds none. */
function nameKeysOf(fields: KeyFields): string[] | undefined {
  const keys = [...new Set(USERNAME_KEYS.map(({ field }) => fields[field]).filter((key): key is string => typeof key === 'string'))];
  return keys.length > 0 ? keys : undefined;
}
/** Whether a document's nameKeys are the keys its fields hold. */
function nameKeysMatch(doc: KeyFields & Pick<UserDocument, 'nameKeys'>): boolean {
  const [stored, wanted] = [doc.nameKeys ?? [], nameKeysOf(doc) ?? []];
  return stored.length === wanted.length && wanted.every((key) => stored.includes(key));
}
/**
 * The update that writes the key fields and their nameKeys, with `set` besides; a field or nameKeys without a value is
 * removed. No empty operator (servers before MongoDB 5.0 refuse one).
 */
function keyFieldsUpdate(fields: KeyFields, set: Partial<UserDocument> = {}): UpdateFilter<UserDocument> {
  const $set: Partial<UserDocument> = { ...set };
  const $unset: Record<string, ''> = {};
  for (const { field } of USERNAME_KEYS) {
    if (fields[field] === undefined) $unset[field] = '';
    else $set[field] = fields[field];
  }
  const keys = nameKeysOf(fields);
  if (keys) $set.nameKeys = keys;
  else $unset.nameKeys = '';
  return Object.keys($set).length > 0 ? { $set, $unset } : { $unset };
}
/** Matches the document while its name and key fields are still the ones read. */
const keyFieldsAre = (doc: Pick<UserDocument, '_id' | 'username' | UsernameKeyField>): Filter<UserDocument> => ({
  _id: doc._id,
  username: doc.username,
  usernameKey: doc.usernameKey ?? { $exists: false },
  usernameKeyAsWritten: doc.usernameKeyAsWritten ?? { $exists: false },
});
const KEY_PROJECTION = { username: 1, usernameKey: 1, usernameKeyAsWritten: 1, nameKeys: 1 } as const;
/** The partial filter of the index users_name_keys_by_named: a query holding it may use that index. */
const HAS_USERNAME = { username: { $type: 'string' } } as const;
/** The users with a username and no nameKeys: written by a release before nameKeys, read through users_name_keys_by_named. */
export const USERS_WITHOUT_NAME_KEYS = { ...HAS_USERNAME, nameKeys: { $exists: false } } as const;
/**
 * The users with a username and no usernameKeyAsWritten: stored by a release before the second key (during a rolling
 * upgrade or after a rollback too), read at every start through users_key_as_written_by_named, not a collection scan.
 */
export const USERS_WITHOUT_SECOND_KEY = { ...HAS_USERNAME, usernameKeyAsWritten: { $exists: false } } as const;
/** The users a release before usernameKey gave usernameLower, read at every start through users_username_lower_left (its partial filter). */
export const USERS_WITH_USERNAME_LOWER = { usernameLower: { $exists: true } } as const;

/** The identity_meta document holding when the second keys were last checked against the names (keyUsernamesChangedSince). */
const SECOND_KEYS_CHECKED_AT = 'usernameKeyAsWrittenCheckedAt';
/** The identity_meta document holding when nameKeys were last checked against the key fields (fillNameKeys). */
const NAME_KEYS_CHECKED_AT = 'nameKeysCheckedAt';
/** Names changed this long before the last check are checked again: the clocks of the processes that wrote them may differ. */
const CHECK_CLOCK_MARGIN_MS = 60 * 60 * 1000;

const emailTaken = () => new AlreadyExistsError('An account with this email already exists');

/**
 * Identity data in the service's MongoDB database (collections users, invitations, sessions,
 * password_resets). Unique e-mail and username key (usernameKey) are unique indexes. Registration and
 * password reset run in a transaction on a replica set; on a standalone server they are ordered
 * single-document steps that claim first and compensate on failure (see docs/engines.md).
 */
export class MongoIdentityRepository implements IdentityRepository {
  private readonly users: Collection<UserDocument>;
  private readonly invitations: Collection<InvitationDocument>;
  private readonly sessions: Collection<SessionDocument>;
  private readonly resets: Collection<PasswordResetDocument>;

  private constructor(private readonly connection: MongoConnection) {
    const { db } = connection;
    this.users = db.collection('users');
    this.invitations = db.collection('invitations');
    this.sessions = db.collection('sessions');
    this.resets = db.collection('password_resets');
  }

  /** Opens the repository on a connection, creating its indexes (idempotent). */
  static async open(connection: MongoConnection): Promise<MongoIdentityRepository> {
    const repository = new MongoIdentityRepository(connection);
    await Promise.all([
      repository.users.createIndex({ email: 1 }, { unique: true, name: 'users_email' }),
      repository.users.createIndex({ usernameKey: 1 }, { unique: true, sparse: true, name: 'users_username_key' }),
      repository.users.createIndex({ usernameKeyAsWritten: 1 }, { unique: true, sparse: true, name: 'users_username_key_as_written' }),
      // Unique across documents: one document may hold a key in both fields, no two documents one key (see nameKeys).
      repository.users.createIndex({ nameKeys: 1 }, { unique: true, sparse: true, name: 'users_name_keys' }),
      // The users with a username and no nameKeys (an earlier release's, whenever written) are found at start through
      // this index, not a collection scan (fillNameKeys): not sparse, so a document without nameKeys is in it (as null);
      // _id beside nameKeys because servers before 5.0 refuse a second index on users_name_keys' key pattern.
      repository.users.createIndex({ nameKeys: 1, _id: 1 }, { partialFilterExpression: HAS_USERNAME, name: 'users_name_keys_by_named' }),
      // The second keys are checked at start for the users updated since the last check (keyUsernamesChangedSince).
      repository.users.createIndex({ updatedAt: 1 }, { name: 'users_updated_at' }),
      // The two queries of rekeyUsernames at every start, each one index range instead of a collection scan: the users
      // without a second key (not sparse, so a document without usernameKeyAsWritten is in it as null; _id in the key
      // as servers before 5.0 refuse a second index on users_username_key_as_written's pattern), and those holding
      // usernameLower (partial: only they are in it, none once keyed; not {usernameLower: 1}, the pattern of the
      // unique index of the releases before, dropped at start).
      repository.users.createIndex({ usernameKeyAsWritten: 1, _id: 1 }, { partialFilterExpression: HAS_USERNAME, name: 'users_key_as_written_by_named' }),
      repository.users.createIndex({ usernameLower: 1, _id: 1 }, { partialFilterExpression: USERS_WITH_USERNAME_LOWER, name: 'users_username_lower_left' }),
      repository.sessions.createIndex({ userId: 1 }, { name: 'sessions_user' }),
      repository.resets.createIndex({ userId: 1 }, { name: 'password_resets_user' }),
      // The server deletes a session, invitation or reset link EXPIRED_RECORD_RETENTION_MS after its expiresAt (a Date in
      // every document any version wrote); deleteExpired does the same on a server that does not (e.g. a test server).
      ...repository.expiring().map(([collection, name]) =>
        collection.createIndex({ expiresAt: 1 }, { name, expireAfterSeconds: EXPIRED_RECORD_RETENTION_MS / 1000 }),
      ),
    ]);
    const startedAt = new Date();
    await repository.rekeyUsernames();
    await repository.keyUsernamesChangedSince(startedAt);
    await repository.fillNameKeys(startedAt);
    return repository;
  }

  /**
   * Gives nameKeys to the documents whose nameKeys are not the keys their fields hold, oldest first: every document at
   * the first start of this version (none has them), then at each start those with a username and no nameKeys (written
   * by an earlier version) and those updated since the last check (less the clock margin), which covers a name changed
   * by an earlier version during a rolling upgrade or after a rollback (those write the fields, not nameKeys). Until
   * then such a document's fields are still read by every check before a write (refuseIfTaken); only the index's
   * guard against two writes at once waits for its nameKeys. One pass at start, as rekeyUsernames. A key itself that
   * another document's nameKeys already hold is a pair the fields' indexes let through across them (stored by an
   * earlier version, e.g. "WILL" and "wiII" keyed at start, or given by the build before 6938ecd): the younger document
   * holds it as "key id" in its field, the rule of rekeyUsernames. Idempotent; the check time is recorded in identity_meta.
   * Both parts of the later starts' query are indexed (users_updated_at, users_name_keys_by_named): no collection scan.
   * No "all filled" flag instead: a release before nameKeys neither reads nor clears one, and during a rolling upgrade or
   * after a rollback it keeps storing users without them, whatever its clock says (docs/decisions.md).
   */
  private async fillNameKeys(startedAt: Date): Promise<void> {
    const meta = this.connection.db.collection<{ _id: string; at: Date }>('identity_meta');
    const mark = await meta.findOne({ _id: NAME_KEYS_CHECKED_AT });
    const changed: Filter<UserDocument> = mark
      ? { $or: [{ updatedAt: { $gte: new Date(mark.at.getTime() - CHECK_CLOCK_MARGIN_MS) } }, USERS_WITHOUT_NAME_KEYS] }
      : {};
    for await (const doc of this.users.find(changed, { projection: KEY_PROJECTION }).sort({ createdAt: 1, _id: 1 })) {
      if (!nameKeysMatch(doc)) await this.mendNameKeys(doc);
    }
    await meta.updateOne({ _id: NAME_KEYS_CHECKED_AT }, { $max: { at: startedAt } }, { upsert: true });
  }

  /**
   * Writes the nameKeys of the document's key fields as read (nothing when they changed since). A key itself that
   * another document's nameKeys hold is written as "key id" in its field (see fillNameKeys). True when it wrote.
   */
  private async mendNameKeys(doc: Pick<UserDocument, '_id' | 'username' | UsernameKeyField>): Promise<boolean> {
    const fields: KeyFields = { usernameKey: doc.usernameKey, usernameKeyAsWritten: doc.usernameKeyAsWritten };
    for (let attempt = 0; attempt <= USERNAME_KEYS.length; attempt++) {
      try {
        return (await this.users.updateOne(keyFieldsAre(doc), keyFieldsUpdate(fields))).matchedCount > 0;
      } catch (err) {
        if (!isDuplicateKeyError(err, 'nameKeys')) throw err;
        for (const { field } of USERNAME_KEYS) {
          const key = fields[field];
          if (key !== undefined && !isLookAlikeKey(key) && (await this.users.findOne({ _id: { $ne: doc._id }, nameKeys: key }, { projection: { _id: 1 } }))) fields[field] = `${key} ${doc._id}`;
        }
      }
    }
    return false;
  }

  /**
   * Mends the nameKeys of other users holding any of `keys` there while their fields hold other keys (a name changed by
   * an earlier version during a rolling upgrade): true when one was mended, so a write refused by them may try again.
   */
  private async mendStaleNameKeys(keys: readonly string[], userId: string): Promise<boolean> {
    const holders = await this.users.find({ _id: { $ne: userId }, nameKeys: { $in: [...keys] } }, { projection: KEY_PROJECTION }).toArray();
    let mended = false;
    for (const holder of holders) if (!nameKeysMatch(holder) && (await this.mendNameKeys(holder))) mended = true;
    return mended;
  }

  /**
   * Gives the usernames of earlier versions, which hold usernameLower (their case fold), their usernameKey, oldest
   * first (createdAt, then id), and drops the earlier index once none is left. A name whose key an older name already
   * holds (two look-alikes taken before the key joined them) stays as its holder wrote it, under its key, a space and
   * its user id: the older name keeps the key itself. Idempotent, and safe for two instances opening at once.
   */
  private async rekeyUsernames(): Promise<void> {
    const earlier = this.users.find(USERS_WITH_USERNAME_LOWER, { projection: { _id: 1, username: 1 } }).sort({ createdAt: 1, _id: 1 });
    for await (const doc of earlier) {
      const unkeyed = { _id: doc._id, usernameLower: { $exists: true } };
      if (doc.username === null) {
        await this.users.updateOne(unkeyed, { $unset: { usernameLower: '' } });
        continue;
      }
      const key = usernameKey(doc.username);
      try {
        await this.users.updateOne(unkeyed, { $set: { usernameKey: key }, $unset: { usernameLower: '' } });
      } catch (err) {
        if (!isDuplicateKeyError(err, 'usernameKey')) throw err;
        await this.users.updateOne(unkeyed, { $set: { usernameKey: `${key} ${doc._id}` }, $unset: { usernameLower: '' } });
      }
    }
    await this.users.dropIndex('users_username_lower').catch((err: unknown) => {
      // Absent: a database created by this version, or another instance dropped it first.
      if ((err as { codeName?: string; code?: number }).codeName !== 'IndexNotFound' && (err as { code?: number }).code !== 27) throw err;
    });
    // The second key, for names stored by versions before it (or by one of them during a rolling upgrade), the same way.
    const unkeyed = this.users.find(USERS_WITHOUT_SECOND_KEY, { projection: { _id: 1, username: 1 } }).sort({ createdAt: 1, _id: 1 });
    for await (const doc of unkeyed) {
      const key = usernameKeyAsWritten(doc.username!);
      const unchanged = { _id: doc._id, username: doc.username, usernameKeyAsWritten: { $exists: false } };
      try {
        await this.users.updateOne(unchanged, { $set: { usernameKeyAsWritten: key } });
      } catch (err) {
        if (!isDuplicateKeyError(err, 'usernameKeyAsWritten')) throw err;
        await this.users.updateOne(unchanged, { $set: { usernameKeyAsWritten: `${key} ${doc._id}` } });
      }
    }
  }

  /**
   * Gives the names changed since the last check their usernameKeyAsWritten again, at every start. The version before
   * the second key (a6c326c and earlier) neither writes nor clears it: a rename there sets username, usernameKey and
   * updatedAt only (a name given up unsets usernameKey only). After a rollback to it and an upgrade again, such a name
   * holds a stale second key (rekeyUsernames keys only the documents without one): its owner's unchanged save is
   * refused, another user is refused the name left, and the new name lacks its look-alike rule. So the users updated
   * since the last check (less a margin for the clocks of other processes; all of them when no check was recorded, as
   * after an upgrade by an earlier build of this version) whose second key is not their name's (nor its "key id") lose
   * it, each write conditional on the name and key read; then are keyed oldest first: the key itself when no one else
   * holds it in either field, else "key id" (also when the index refuses it); a key left is promoted by the usual
   * rule. The check time is recorded in identity_meta ($max: of two instances starting at once the later stays).
   */
  private async keyUsernamesChangedSince(startedAt: Date): Promise<void> {
    const meta = this.connection.db.collection<{ _id: string; at: Date }>('identity_meta');
    const mark = await meta.findOne({ _id: SECOND_KEYS_CHECKED_AT });
    const changed: Filter<UserDocument> = mark ? { updatedAt: { $gte: new Date(mark.at.getTime() - CHECK_CLOCK_MARGIN_MS) } } : {};
    const cleared: Array<{ _id: string; username: string | null }> = [];
    const left: string[] = [];
    const candidates = this.users.find(changed, { projection: { _id: 1, username: 1, usernameKeyAsWritten: 1 } }).sort({ createdAt: 1, _id: 1 });
    for await (const { _id, username, usernameKeyAsWritten: stored } of candidates) {
      if (username === null ? stored === undefined : stored === usernameKeyAsWritten(username) || stored === `${usernameKeyAsWritten(username)} ${_id}`) continue;
      const unchanged = await this.users.updateOne({ _id, username, usernameKeyAsWritten: stored ?? { $exists: false } }, { $unset: { usernameKeyAsWritten: '' } });
      if (unchanged.matchedCount === 0) continue;
      cleared.push({ _id, username });
      if (stored !== undefined && !isLookAlikeKey(stored)) left.push(stored);
    }
    for (const { _id, username } of cleared) {
      if (username === null) continue;
      const key = usernameKeyAsWritten(username);
      const unkeyed = { _id, username, usernameKeyAsWritten: { $exists: false } };
      const held = await this.users.findOne({ _id: { $ne: _id }, $or: [{ usernameKey: key }, { usernameKeyAsWritten: key }] }, { projection: { _id: 1 } });
      try {
        await this.users.updateOne(unkeyed, { $set: { usernameKeyAsWritten: held ? `${key} ${_id}` : key } });
      } catch (err) {
        if (!isDuplicateKeyError(err, 'usernameKeyAsWritten')) throw err;
        await this.users.updateOne(unkeyed, { $set: { usernameKeyAsWritten: `${key} ${_id}` } });
      }
    }
    for (const key of left) for (const { field } of USERNAME_KEYS) await this.promoteLookAlike(field, key);
    await meta.updateOne({ _id: SECOND_KEYS_CHECKED_AT }, { $max: { at: startedAt } }, { upsert: true });
  }

  async createInvitation(i: Invitation): Promise<void> {
    await this.invitations.insertOne({ _id: i.id, email: i.email, referralTokens: [...i.referralTokens], createdAt: i.createdAt, expiresAt: i.expiresAt, usedAt: i.usedAt });
  }

  async findInvitation(id: string): Promise<Invitation | null> {
    const d = await this.invitations.findOne({ _id: id });
    return d ? { id: d._id, email: d.email, referralTokens: d.referralTokens, createdAt: d.createdAt, expiresAt: d.expiresAt, usedAt: d.usedAt } : null;
  }

  async registerFromInvitation(invitationId: string, user: User, usedAt: Date): Promise<boolean> {
    try {
      return await withOptionalTransaction(this.connection, async (session) => {
        // Claim first: of two concurrent registrations only one can flip usedAt from null.
        const claimed = await this.invitations.updateOne({ _id: invitationId, usedAt: null }, { $set: { usedAt, claimedBy: user.id } }, { session });
        if (claimed.modifiedCount === 0) return false;
        try {
          await this.users.insertOne(toUserDocument(user), { session });
        } catch (err) {
          // Without a transaction, give the invitation back so it can still be used with another e-mail.
          if (!session) await this.invitations.updateOne({ _id: invitationId, claimedBy: user.id }, { $set: { usedAt: null }, $unset: { claimedBy: '' } });
          throw err;
        }
        return true;
      });
    } catch (err) {
      if (isDuplicateKeyError(err, 'email')) throw emailTaken();
      throw err;
    }
  }

  async findUserById(id: string): Promise<User | null> {
    const d = await this.users.findOne({ _id: id });
    return d ? fromUserDocument(d) : null;
  }

  async findUserByEmail(spellings: string | readonly string[]): Promise<User | null> {
    const order = emailLookupOrder(spellings);
    const docs = await this.users.find({ email: { $in: order } }).toArray();
    const d = docs.sort((a, b) => order.indexOf(a.email) - order.indexOf(b.email))[0];
    return d ? fromUserDocument(d) : null;
  }

  async findUsersByIds(ids: readonly string[]): Promise<User[]> {
    if (ids.length === 0) return [];
    const docs = await this.users.find({ _id: { $in: [...new Set(ids)] } }).toArray();
    return docs.map(fromUserDocument);
  }

  async updateProfile(userId: string, patch: ProfilePatch, requires: StoredProfileCondition, updatedAt: Date): Promise<User | null> {
    const set: Partial<UserDocument> = { updatedAt };
    if (patch.website !== undefined) set.website = patch.website;
    if (patch.visibleEmail !== undefined) set.visibleEmail = patch.visibleEmail;
    const update = (filter: Filter<UserDocument>, change: UpdateFilter<UserDocument>) =>
      this.users.findOneAndUpdate({ $and: [{ _id: userId }, STORED_PROFILE_FILTER[requires], filter] }, change, { returnDocument: 'after' });
    try {
      if (patch.username === undefined) {
        const stored = await update({}, { $set: set });
        return stored ? fromUserDocument(stored) : null;
      }
      // The name and keys read below are the condition of the write: a concurrent change of them (another request of the
      // same user, or a look-alike's promotion) is read again.
      const projection = KEY_PROJECTION;
      for (let attempt = 0; attempt < 20; attempt++) {
        const current = await this.users.findOne({ _id: userId }, { projection });
        if (!current) return null;
        const keys: Partial<Record<UsernameKeyField, string>> = {};
        const left: Array<[UsernameKeyField, string]> = [];
        const wantedKeys = patch.username === null ? [] : USERNAME_KEYS.map(({ of }) => of(patch.username!));
        for (const [slot, { field }] of USERNAME_KEYS.entries()) {
          const held = current.username === null ? undefined : current[field];
          let key: string | undefined;
          if (patch.username !== null) {
            const wanted = wantedKeys[slot]!;
            if (held === wanted) {
              // Another spelling of the key one holds: not the name of a look-alike kept from before under "key id".
              await this.refuseIfLookAlikeNamed(field, wanted, patch.username, userId);
              key = held;
            } else if (held !== undefined && held.startsWith(`${wanted} `) && usernameCaseFold(patch.username) === usernameCaseFold(current.username!)) {
              // A look-alike kept from before ("key id") may change its capitals or send its name again, keeping its key.
              key = held;
            } else if (USERNAME_KEYS.some((other, i) => i !== slot && current.username !== null && current[other.field] === wanted && wantedKeys[i] === wanted)) {
              // The key itself, held in the other field and kept there: this user holds it in both ("WILL" back to "will"),
              // but a look-alike's own name. A look-alike holding it itself in this field (given by the build before
              // 6938ecd) keeps it; this user then holds it as "key id". Once nameKeys are filled none does (fillNameKeys).
              await this.refuseIfLookAlikeNamed(field, wanted, patch.username, userId);
              key = (await this.users.findOne({ _id: { $ne: userId }, [field]: wanted } as Filter<UserDocument>, { projection: { _id: 1 } })) ? `${wanted} ${userId}` : wanted;
            } else {
              await this.refuseIfTaken(wanted, userId);
              key = wanted;
            }
          }
          if (key !== undefined) keys[field] = key;
          if (held !== undefined && key !== held && !isLookAlikeKey(held)) left.push([field, held]);
        }
        let stored: UserDocument | null;
        try {
          // nameKeys hold the keys of both fields under one unique index: of two users taking one key at once, in either
          // field each, the second write is refused.
          stored = await update(keyFieldsAre(current), keyFieldsUpdate(keys, { ...set, username: patch.username }));
        } catch (err) {
          if (isDuplicateKeyError(err, 'nameKeys') && (await this.mendStaleNameKeys(nameKeysOf(keys) ?? [], userId))) continue;
          throw err;
        }
        if (stored) {
          // Leaving a key one held itself hands it to the oldest look-alike kept from before under "key id", in either
          // field, when no one holds it itself in either (promoteLookAlike).
          for (const [, held] of left) for (const { field } of USERNAME_KEYS) await this.promoteLookAlike(field, held);
          return fromUserDocument(stored);
        }
        const now = await this.users.findOne({ _id: userId }, { projection });
        // Unchanged: the stored profile condition is not met.
        if (!now || (now.username === current.username && now.usernameKey === current.usernameKey && now.usernameKeyAsWritten === current.usernameKeyAsWritten)) return null;
      }
      throw new Error(`username of user ${userId} changed concurrently on every attempt`);
    } catch (err) {
      if (isUsernameKeyDuplicate(err)) throw new AlreadyExistsError('username: already taken');
      throw err;
    }
  }

  /**
   * AlreadyExistsError when another user holds the key, itself or as a look-alike kept from before ("key id"), in
   * either key field: both keys are a case fold of a skeleton, and usernameKey(x) is usernameKeyAsWritten of x's case
   * fold, so one name's first key matching another's second is one name too ("WILL" is "will", which "wiII" reads as).
   * A look-alike without a holder of the key itself in its field (its holder left it and the promotion did not run,
   * the process having stopped between the two writes, or a version that did not promote) is promoted first.
   *
   * With each key's unique index this keeps one holder per key and field: "key id" keys are only made by
   * rekeyUsernames, for a name whose key another document holds at that moment, and only ever become the key itself;
   * so between this check and the write, a key found free can only be taken as the key itself, which the index
   * refuses to a second writer. Across the two fields too: two writers at once, one taking a key as its first and the
   * other as its second, both write it into nameKeys, whose unique index refuses the second.
   */
  private async refuseIfTaken(key: string, userId: string): Promise<void> {
    const [from, to] = lookAlikeKeyRange(key);
    let taken = false;
    for (const { field } of USERNAME_KEYS) {
      const holders = await this.users
        .find({ _id: { $ne: userId }, $or: [{ [field]: key }, { [field]: { $gte: from, $lt: to } }] } as Filter<UserDocument>, { projection: { [field]: 1 } })
        .limit(2)
        .toArray();
      if (holders.length === 0) continue;
      taken = true;
      if (!holders.some((holder) => holder[field] === key)) await this.promoteLookAlike(field, key);
    }
    if (taken) throw new AlreadyExistsError('username: already taken');
  }

  /**
   * AlreadyExistsError when a look-alike kept from before under "key id" in the key's field has the name, up to case
   * (usernameCaseFold): the holder of the key itself may take any spelling of it but theirs. Their names cannot move
   * meanwhile to this one: under "key id" a name changes only its capitals.
   */
  private async refuseIfLookAlikeNamed(field: UsernameKeyField, key: string, name: string, userId: string): Promise<void> {
    const [from, to] = lookAlikeKeyRange(key);
    const lookAlikes = await this.users.find({ _id: { $ne: userId }, [field]: { $gte: from, $lt: to } } as Filter<UserDocument>, { projection: { username: 1 } }).toArray();
    const folded = usernameCaseFold(name);
    if (lookAlikes.some((doc) => doc.username !== null && usernameCaseFold(doc.username) === folded)) throw new AlreadyExistsError('username: already taken');
  }

  /**
   * Gives the key itself to the oldest user holding it as "key id" in its field (createdAt, then id), when no one else
   * holds the key itself in either field: the rule of taking a name (refuseIfTaken). "will" changing to "WILL" leaves
   * "will" as its second key but still holds it as its first, so a look-alike "wiII" under "will id" is not given it.
   * The write is conditional on the holder's "key id"; when someone holds the key itself in its field already, the
   * unique index refuses it and nothing changes.
   */
  private async promoteLookAlike(field: UsernameKeyField, key: string): Promise<void> {
    const [from, to] = lookAlikeKeyRange(key);
    const candidate = await this.users.findOne({ [field]: { $gte: from, $lt: to } } as Filter<UserDocument>, { sort: { createdAt: 1, _id: 1 }, projection: KEY_PROJECTION });
    if (!candidate) return;
    for (const other of USERNAME_KEYS) {
      if (await this.users.findOne({ _id: { $ne: candidate._id }, [other.field]: key } as Filter<UserDocument>, { projection: { _id: 1 } })) return;
    }
    await this.users.updateOne(keyFieldsAre(candidate), keyFieldsUpdate({ ...candidate, [field]: key })).catch((err: unknown) => {
      if (!isUsernameKeyDuplicate(err)) throw err;
    });
  }

  async createSession(s: Session): Promise<void> {
    await this.sessions.insertOne({ _id: s.id, userId: s.userId, createdAt: s.createdAt, expiresAt: s.expiresAt, revokedAt: s.revokedAt, passwordVersion: s.passwordVersion });
  }

  async findSession(id: string): Promise<Session | null> {
    const d = await this.sessions.findOne({ _id: id });
    return d ? { id: d._id, userId: d.userId, createdAt: d.createdAt, expiresAt: d.expiresAt, revokedAt: d.revokedAt, passwordVersion: d.passwordVersion ?? null } : null;
  }

  async revokeSession(id: string, at: Date): Promise<void> {
    await this.sessions.updateOne({ _id: id, revokedAt: null }, { $set: { revokedAt: at } });
  }

  async createPasswordReset(p: PasswordReset): Promise<void> {
    await this.resets.insertOne({ _id: p.id, userId: p.userId, createdAt: p.createdAt, expiresAt: p.expiresAt, usedAt: p.usedAt, passwordVersion: p.passwordVersion });
  }

  async findPasswordReset(id: string): Promise<PasswordReset | null> {
    const d = await this.resets.findOne({ _id: id });
    return d ? { id: d._id, userId: d.userId, createdAt: d.createdAt, expiresAt: d.expiresAt, usedAt: d.usedAt, passwordVersion: d.passwordVersion ?? null } : null;
  }

  async completePasswordReset(reset: PasswordReset, passwordHash: string, at: Date): Promise<boolean> {
    const { userId } = reset;
    return withOptionalTransaction(this.connection, async (session) => {
      const claimed = await this.resets.updateOne({ _id: reset.id, usedAt: null }, { $set: { usedAt: at } }, { session });
      if (claimed.modifiedCount === 0) return false;
      const version = reset.passwordVersion ?? (await this.users.findOne({ _id: userId }, { session, projection: { passwordVersion: 1 } }))?.passwordVersion ?? 0;
      // A link sent under a password replaced since is refused before the sessions are touched, as on SQLite: the
      // sessions opened with the new password (after the reset that replaced it) stay.
      if (reset.passwordVersion !== null && !(await this.users.findOne({ _id: userId, ...passwordVersionIs(version) }, { session, projection: { _id: 1 } }))) return false;
      // Without a transaction the order keeps a crash safe: sessions die before the password changes,
      // and again after it, so no session opened with the old password survives the new one (sessions that
      // record a password version die with it anyway; these two writes also end those stored before versions).
      await this.revokeSessionsOf(userId, at, session);
      // The user document decides between links used at once (each claimed its own link): the first replaces the
      // password and moves the version on, and the others find the version moved.
      const replaced = await this.users.updateOne(
        { _id: userId, ...passwordVersionIs(version) },
        { $set: { passwordHash, updatedAt: at }, $inc: { passwordVersion: 1 } },
        { session },
      );
      if (replaced.matchedCount === 0) return false;
      if (!session) await this.revokeSessionsOf(userId, at, session);
      // Other outstanding reset links die with this one.
      await this.resets.updateMany({ userId, usedAt: null }, { $set: { usedAt: at } }, { session });
      return true;
    });
  }

  private async revokeSessionsOf(userId: string, at: Date, session: ClientSession | undefined): Promise<void> {
    await this.sessions.updateMany({ userId, revokedAt: null }, { $set: { revokedAt: at } }, { session });
  }

  async rehashPassword(userId: string, previousHash: string, passwordHash: string): Promise<boolean> {
    return (await this.users.updateOne({ _id: userId, passwordHash: previousHash }, { $set: { passwordHash } })).modifiedCount > 0;
  }

  private expiring(): Array<[Collection<SessionDocument> | Collection<InvitationDocument> | Collection<PasswordResetDocument>, string]> {
    return [
      [this.sessions, 'sessions_expiry_ttl'],
      [this.invitations, 'invitations_expiry_ttl'],
      [this.resets, 'password_resets_expiry_ttl'],
    ];
  }

  async deleteExpired(before: Date, limit: number): Promise<number> {
    let deleted = 0;
    for (const [collection] of this.expiring()) {
      const expired = collection as unknown as Collection<{ _id: string; expiresAt: Date }>;
      const ids = (await expired.find({ expiresAt: { $lte: before } }, { projection: { _id: 1 }, limit }).toArray()).map((d) => d._id);
      if (ids.length > 0) deleted += (await expired.deleteMany({ _id: { $in: ids }, expiresAt: { $lte: before } })).deletedCount;
    }
    return deleted;
  }

  async close(): Promise<void> {
    await this.connection.close();
  }
}
