import { randomBytes } from 'node:crypto';
import { usernameCaseFold } from '@cards/card-rules';
import { AlreadyExistsError, connectMongo, createLogger } from '@cards/platform';
import { MongoIdentityRepository, USERS_WITH_USERNAME_LOWER, USERS_WITHOUT_NAME_KEYS, USERS_WITHOUT_SECOND_KEY } from '../src/adapters/mongo/mongo-identity-repository';
import { usernameKey, usernameKeyAsWritten } from '../src/domain/username-key';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeIdentityRepositoryContract } from './identity-repository.contract';
import { expectNamesAfterReopen, RENAMES_WHILE_ROLLED_BACK, SECOND_KEYS_AFTER_REOPEN, SECOND_KEYS_BEFORE_REOPEN, USERS_BEFORE_ROLLBACK } from './rollback-upgrade-expectations';

const logger = createLogger('identity-repo-test', process.env.LOG_LEVEL ?? 'fatal');
// MONGO_URL points the suite at a real MongoDB (e.g. a replica set, to cover the transactional path);
// otherwise it starts the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

/** Runs `test` on a database of its own on the engine, dropped afterwards. */
async function withFreshDatabase(test: (connection: Awaited<ReturnType<typeof connectMongo>>) => Promise<void>): Promise<void> {
  const connection = await connectMongo({ url: engine!.url, database: `identity_test_${randomBytes(4).toString('hex')}`, logger });
  try {
    await test(connection);
  } finally {
    await connection.db.dropDatabase().catch(() => undefined);
    await connection.close();
  }
}

describeIdentityRepositoryContract(
  external ? 'mongodb (TEST_MONGO_URL)' : 'mongodb (mongo-java-server)',
  async () => {
    const connection = await connectMongo({ url: engine!.url, database: `identity_test_${randomBytes(4).toString('hex')}`, logger });
    const repository = await MongoIdentityRepository.open(connection);
    return {
      repository,
      async storeAsPreviousVersion({ users = [], sessions = [], resets = [] }) {
        // The documents the previous version wrote: no passwordVersion field.
        const { db } = connection;
        // The usernames with the key of the version before the confusable skeleton (the case fold only, in usernameLower).
        for (const { id, passwordVersion: _, ...u } of users) {
          await db.collection('users').insertOne({ _id: id as never, ...u, ...(u.username === null ? {} : { usernameLower: usernameCaseFold(u.username) }) });
        }
        for (const { id, passwordVersion: _, ...s } of sessions) await db.collection('sessions').insertOne({ _id: id as never, ...s });
        for (const { id, passwordVersion: _, ...r } of resets) await db.collection('password_resets').insertOne({ _id: id as never, ...r });
        // What the next start of the service does with them.
        if (users.length > 0) await MongoIdentityRepository.open(connection);
      },
      async close() {
        await connection.db.dropDatabase().catch(() => undefined);
        await repository.close();
      },
    };
  },
  skipReason,
);

/**
 * A user document as an earlier version stored it: `keys` are the username key fields that version wrote; created and
 * last updated on day `day` of January 2026; `password` the password fields (that version's hash and version).
 */
function storedUser(id: string, username: string | null, keys: Record<string, string>, day: number, password: Record<string, unknown> = { passwordHash: `scrypt$${id}`, passwordVersion: 0 }) {
  const at = new Date(Date.UTC(2026, 0, day));
  return { _id: id, email: `${id}@example.com`, username, ...keys, website: null, visibleEmail: true, ...password, createdAt: at, updatedAt: at };
}

/** Both key fields of this version for `username` (none for no name). */
function bothKeys(username: string | null): Record<string, string> {
  return username === null ? {} : { usernameKey: usernameKey(username), usernameKeyAsWritten: usernameKeyAsWritten(username) };
}

describeOnEngine('MongoIdentityRepository on a database of the version before the confusable skeleton key', skipReason, () => {
  it('keys the usernames stored there, oldest first, keeps both of two look-alikes, and drops the earlier index', async () => {
    await withFreshDatabase(async (connection) => {
      const users = connection.db.collection<{ _id: string }>('users');
      await users.createIndex({ usernameLower: 1 }, { unique: true, sparse: true, name: 'users_username_lower' });
      const user = (id: string, username: string | null, day: number) =>
        storedUser(id, username, username === null ? {} : { usernameLower: usernameCaseFold(username) }, day, { passwordHash: 'scrypt$x' });
      await users.insertMany([user('u-latin', 'coco', 3), user('u-paypal', 'PayPal', 1), user('u-cyrillic', '\u0441\u043e\u0441\u043e', 2), user('u-new', null, 4)]);
      const repository = await MongoIdentityRepository.open(connection);
      const later = new Date('2026-02-01T00:00:00.000Z');
      await expect(repository.updateProfile('u-new', { username: '\u0440\u0430\u0443\u0440\u0430l' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repository.updateProfile('u-new', { username: 'COCO' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      // The older of the two look-alikes holds the key itself.
      expect(await users.findOne({ _id: 'u-cyrillic' })).toMatchObject({ username: '\u0441\u043e\u0441\u043e', usernameKey: 'coco' });
      expect(await users.findOne({ _id: 'u-latin' })).toMatchObject({ username: 'coco', usernameKey: 'coco u-latin' });
      expect(await users.countDocuments({ usernameLower: { $exists: true } })).toBe(0);
      expect((await users.indexes()).map((index) => index.name)).not.toContain('users_username_lower');
      // Opening again changes nothing.
      await MongoIdentityRepository.open(connection);
      expect(await users.findOne({ _id: 'u-latin' })).toMatchObject({ usernameKey: 'coco u-latin' });
      // The younger may change its capitals, keeping its key.
      expect(await repository.updateProfile('u-latin', { username: 'Coco' }, 'none', later)).toMatchObject({ username: 'Coco' });
      expect(await users.findOne({ _id: 'u-latin' })).toMatchObject({ usernameKey: 'coco u-latin' });
      // The older one renames away: the younger is given the key itself; the name stays taken.
      expect(await repository.updateProfile('u-cyrillic', { username: 'robert_x' }, 'none', later)).toMatchObject({ username: 'robert_x' });
      expect(await users.find({ usernameKey: { $regex: '^coco' } }).project({ usernameKey: 1 }).toArray()).toEqual([{ _id: 'u-latin', usernameKey: 'coco' }]);
      for (const name of ['coco', 'c0c0', '\u0441\u043e\u0441\u043e']) {
        await expect(repository.updateProfile('u-new', { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      }
    });
  });
});

describeOnEngine('MongoIdentityRepository on a database keyed before look-alikes were promoted', skipReason, () => {
  it('refuses a name whose look-alike is held only under "key id", and gives that holder the key', async () => {
    await withFreshDatabase(async (connection) => {
      const repository = await MongoIdentityRepository.open(connection);
      const users = connection.db.collection<{ _id: string }>('users');
      const user = (id: string, username: string | null, key: string | null) =>
        storedUser(id, username, key === null ? {} : { usernameKey: key }, 2, { passwordHash: 'scrypt$x' });
      // "bob" renamed away and no one was given the key: "b0b" still held "bob u-b0b" alone.
      await users.insertMany([user('u-bob', 'robert_x', 'robert_x'), user('u-b0b', 'b0b', 'bob u-b0b'), user('u-new', null, null)]);
      const later = new Date('2026-02-01T00:00:00.000Z');
      await expect(repository.updateProfile('u-new', { username: 'b0b' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(repository.updateProfile('u-new', { username: 'bob' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await users.findOne({ _id: 'u-b0b' })).toMatchObject({ usernameKey: 'bob' });
      expect(await repository.updateProfile('u-b0b', { username: 'Bob' }, 'none', later)).toMatchObject({ username: 'Bob' });
    });
  });
});

describeOnEngine('MongoIdentityRepository on a database of the version before the second username key', skipReason, () => {
  it('keeps "will" and "wiII" as two users with their names, keys them at start, oldest first, and no one else can take either', async () => {
    await withFreshDatabase(async (connection) => {
      const users = connection.db.collection<{ _id: string }>('users');
      // The documents as that version wrote them: "will" and "wiII" (capital i's) had two keys then, "will" and "wiii".
      await users.createIndex({ usernameKey: 1 }, { unique: true, sparse: true, name: 'users_username_key' });
      const user = (id: string, username: string | null, key: string | null, day: number) => storedUser(id, username, key === null ? {} : { usernameKey: key }, day);
      await users.insertMany([user('u-wiii', 'wiII', 'wiii', 2), user('u-will', 'will', 'will', 1), user('u-new', null, null, 3)]);
      const repository = await MongoIdentityRepository.open(connection);
      // Both still found by their address (what a login reads), with their passwords and names.
      expect(await repository.findUserByEmail('u-will@example.com')).toMatchObject({ id: 'u-will', username: 'will', passwordHash: 'scrypt$u-will' });
      expect(await repository.findUserByEmail('u-wiii@example.com')).toMatchObject({ id: 'u-wiii', username: 'wiII', passwordHash: 'scrypt$u-wiii' });
      expect(await users.findOne({ _id: 'u-will' })).toMatchObject({ usernameKey: 'will', usernameKeyAsWritten: 'will' });
      expect(await users.findOne({ _id: 'u-wiii' })).toMatchObject({ usernameKey: 'wiii', usernameKeyAsWritten: 'will u-wiii' });
      expect(await users.findOne({ _id: 'u-new' })).not.toHaveProperty('usernameKeyAsWritten');
      // Opening again changes nothing.
      await MongoIdentityRepository.open(connection);
      expect(await users.findOne({ _id: 'u-wiii' })).toMatchObject({ usernameKeyAsWritten: 'will u-wiii' });
      const later = new Date('2026-02-01T00:00:00.000Z');
      for (const name of ['will', 'Will', 'WILL', 'wiII', 'wi11']) {
        await expect(repository.updateProfile('u-new', { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      }
      expect(await repository.updateProfile('u-wiii', { username: 'wiII', website: 'https://wiii.example' }, 'none', later)).toMatchObject({ username: 'wiII' });
      // The older one renames away: the younger is given the second key itself; the name stays taken.
      expect(await repository.updateProfile('u-will', { username: 'robert_x' }, 'none', later)).toMatchObject({ username: 'robert_x' });
      expect(await users.findOne({ _id: 'u-wiii' })).toMatchObject({ usernameKey: 'wiii', usernameKeyAsWritten: 'will' });
      await expect(repository.updateProfile('u-new', { username: 'will' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
    });
  });
});

describeOnEngine('MongoIdentityRepository after a rollback to the version before the second username key and an upgrade again', skipReason, () => {
  it('keys the names changed while rolled back again at start: an unchanged save is accepted, a name left is free, a look-alike of a new name is taken', async () => {
    await withFreshDatabase(async (connection) => {
      const users = connection.db.collection<{ _id: string }>('users');
      // Documents as this version writes them: both keys.
      const user = (id: string, username: string | null, createdDay: number) => storedUser(id, username, bothKeys(username), createdDay);
      await users.insertMany(USERS_BEFORE_ROLLBACK.map(([id, username, createdDay]) => user(id, username, createdDay)));
      // This version starts once (the check time is recorded), then the previous version renames: username, usernameKey
      // and updatedAt (its clock) only; a name given up unsets usernameKey only.
      await MongoIdentityRepository.open(connection);
      const renameAsBefore = (id: string, username: string | null) =>
        users.updateOne({ _id: id }, username === null ? { $set: { username: null, updatedAt: new Date() }, $unset: { usernameKey: '' } } : { $set: { username, usernameKey: usernameKey(username), updatedAt: new Date() } });
      for (const [id, username] of RENAMES_WHILE_ROLLED_BACK) await renameAsBefore(id, username);
      const secondKeys = async () => Object.fromEntries((await users.find({}, { sort: { _id: 1 } }).toArray()).map((d) => [d._id, (d as { usernameKeyAsWritten?: string }).usernameKeyAsWritten ?? null]));
      expect(await secondKeys()).toMatchObject(SECOND_KEYS_BEFORE_REOPEN);
      const repository = await MongoIdentityRepository.open(connection);
      expect(await secondKeys()).toEqual(SECOND_KEYS_AFTER_REOPEN);
      await expectNamesAfterReopen(repository);
    });
  });
});

describeOnEngine('MongoIdentityRepository on a database where the build before 6938ecd gave a look-alike the key its holder kept', skipReason, () => {
  it('keeps the key with the older at start (the look-alike holds "will <id>"), lets "WILL" go back to "will", the look-alike keeps "wiII", and no one else takes either', async () => {
    await withFreshDatabase(async (connection) => {
      const users = connection.db.collection<{ _id: string }>('users');
      const user = (id: string, username: string | null, keys: [string, string] | null, day: number) =>
        storedUser(id, username, keys === null ? {} : { usernameKey: keys[0], usernameKeyAsWritten: keys[1] }, day);
      // will renamed "WILL" ("will" left as its second key only) and "wiII" was given "will" as its second key.
      await users.insertMany([user('u-will', 'WILL', ['will', 'wlll'], 1), user('u-wiii', 'wiII', ['wiii', 'will'], 2), user('u-new', null, null, 3)]);
      const repository = await MongoIdentityRepository.open(connection);
      // One key, one holder (nameKeys): the older user, as rekeyUsernames keeps it; the younger holds "key id".
      expect(await users.findOne({ _id: 'u-will' })).toMatchObject({ usernameKey: 'will', usernameKeyAsWritten: 'wlll', nameKeys: ['will', 'wlll'] });
      expect(await users.findOne({ _id: 'u-wiii' })).toMatchObject({ usernameKey: 'wiii', usernameKeyAsWritten: 'will u-wiii', nameKeys: ['wiii', 'will u-wiii'] });
      const later = new Date('2026-02-01T00:00:00.000Z');
      expect(await repository.updateProfile('u-will', { username: 'will' }, 'none', later)).toMatchObject({ username: 'will' });
      expect(await repository.updateProfile('u-will', { username: 'will', website: 'https://will.example' }, 'none', later)).toMatchObject({ username: 'will' });
      expect(await repository.updateProfile('u-will', { username: 'Will' }, 'none', later)).toMatchObject({ username: 'Will' });
      expect(await repository.updateProfile('u-wiii', { username: 'wiII' }, 'none', later)).toMatchObject({ username: 'wiII' });
      await expect(repository.updateProfile('u-wiii', { username: 'will' }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      for (const name of ['will', 'WILL', 'wiII']) await expect(repository.updateProfile('u-new', { username: name }, 'none', later)).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await users.findOne({ _id: 'u-will' })).toMatchObject({ usernameKey: 'will', usernameKeyAsWritten: 'will', nameKeys: ['will'] });
    });
  });
});

describeOnEngine('MongoIdentityRepository with documents written without nameKeys by the version before them', skipReason, () => {
  it('fills nameKeys at start, and a write refused only by stale nameKeys mends them and goes through', async () => {
    await withFreshDatabase(async (connection) => {
      const repository = await MongoIdentityRepository.open(connection);
      const users = connection.db.collection<{ _id: string }>('users');
      // Documents as the version before nameKeys writes them: both key fields, no nameKeys.
      const user = (id: string, username: string | null, day: number) => storedUser(id, username, bothKeys(username), day);
      await users.insertMany([user('u-old', 'Oldie', 1), user('u-b', null, 2)]);
      // A user of this version renamed by that version during a rolling upgrade: its fields moved, its nameKeys did not.
      expect(await repository.updateProfile('u-b', { username: 'Neuer' }, 'none', new Date())).toMatchObject({ username: 'Neuer' });
      expect(await users.findOne({ _id: 'u-b' })).toMatchObject({ nameKeys: ['neuer'] });
      await users.updateOne({ _id: 'u-b' }, { $set: { username: 'Bob', usernameKey: 'bob', usernameKeyAsWritten: 'bob', updatedAt: new Date() } });
      await users.insertOne(user('u-c', null, 3));
      // The name left is free: the stale nameKeys are mended by the write they refuse.
      expect(await repository.updateProfile('u-c', { username: 'neuer' }, 'none', new Date())).toMatchObject({ username: 'neuer' });
      expect(await users.findOne({ _id: 'u-b' })).toMatchObject({ username: 'Bob', nameKeys: ['bob'] });
      // The document without nameKeys is still refused its name's look-alikes (its fields are read), and keyed at start.
      await expect(repository.updateProfile('u-c', { username: 'OLDIE' }, 'none', new Date())).rejects.toBeInstanceOf(AlreadyExistsError);
      await MongoIdentityRepository.open(connection);
      expect(await users.findOne({ _id: 'u-old' })).toMatchObject({ nameKeys: ['oldie'] });
      await MongoIdentityRepository.open(connection);
      expect(await users.findOne({ _id: 'u-old' })).toMatchObject({ usernameKey: 'oldie', usernameKeyAsWritten: 'oldie', nameKeys: ['oldie'] });
      expect(await users.findOne({ _id: 'u-c' })).toMatchObject({ nameKeys: ['neuer'] });
    });
  });
});

describeOnEngine('MongoIdentityRepository: users without nameKeys at a later start (a rollback, then an upgrade again)', skipReason, () => {
  it('finds them through an index of the named users, not a collection scan, however old the clock that wrote them', async () => {
    await withFreshDatabase(async (connection) => {
      await MongoIdentityRepository.open(connection);
      const users = connection.db.collection<{ _id: string }>('users');
      // The partial index the start's query for them uses (its filter holds the index's): not sparse, so a document
      // without nameKeys is in it; users without a name are not.
      const indexes = await users.listIndexes().toArray();
      expect(indexes.find((index) => index.name === 'users_name_keys_by_named')).toMatchObject({ key: { nameKeys: 1, _id: 1 }, partialFilterExpression: { username: { $type: 'string' } } });
      expect(indexes.find((index) => index.name === 'users_name_keys_by_named')?.sparse).toBeFalsy();
      expect(USERS_WITHOUT_NAME_KEYS).toMatchObject({ username: { $type: 'string' } });
      // Rolled back after that start: the release before nameKeys stores users without them, its clock a day behind
      // (older than the last check less its margin: only the query for users without nameKeys finds them).
      const dayBehind = Date.now() - 24 * 60 * 60 * 1000;
      const oldRelease = (id: string, username: string | null) => ({ ...storedUser(id, username, bothKeys(username), 1), createdAt: new Date(dayBehind), updatedAt: new Date(dayBehind) });
      await users.insertMany([oldRelease('u-rolled-back', 'Zurück'), oldRelease('u-nameless', null)]);
      expect((await users.find(USERS_WITHOUT_NAME_KEYS).hint('users_name_keys_by_named').toArray()).map((d) => d._id)).toEqual(['u-rolled-back']);
      // Upgraded again: keyed at start, and the next start finds none left.
      await MongoIdentityRepository.open(connection);
      expect(await users.findOne({ _id: 'u-rolled-back' })).toMatchObject({ nameKeys: [usernameKey('Zurück')] });
      expect(await users.findOne({ _id: 'u-nameless' })).not.toHaveProperty('nameKeys');
      expect(await users.countDocuments(USERS_WITHOUT_NAME_KEYS)).toBe(0);
    });
  });
});

describeOnEngine('MongoIdentityRepository: users without a second key, or with usernameLower, at every start', skipReason, () => {
  it('finds them through partial indexes (one range each, none once keyed), not two scans of the whole collection', async () => {
    await withFreshDatabase(async (connection) => {
      await MongoIdentityRepository.open(connection);
      const users = connection.db.collection<{ _id: string }>('users');
      const indexes = await users.listIndexes().toArray();
      // Not sparse, so a document without usernameKeyAsWritten is in it (as null); users without a name are not.
      expect(indexes.find((index) => index.name === 'users_key_as_written_by_named')).toMatchObject({ key: { usernameKeyAsWritten: 1, _id: 1 }, partialFilterExpression: { username: { $type: 'string' } } });
      expect(indexes.find((index) => index.name === 'users_key_as_written_by_named')?.sparse).toBeFalsy();
      expect(indexes.find((index) => index.name === 'users_username_lower_left')).toMatchObject({ key: { usernameLower: 1, _id: 1 }, partialFilterExpression: { usernameLower: { $exists: true } } });
      // The start's queries hold the indexes' filters, so the server may answer them from the indexes.
      expect(USERS_WITHOUT_SECOND_KEY).toMatchObject({ username: { $type: 'string' }, usernameKeyAsWritten: { $exists: false } });
      expect(USERS_WITH_USERNAME_LOWER).toEqual({ usernameLower: { $exists: true } });
      // Users of releases before the keys, stored after that start (a rollback): found through the indexes, keyed at the next start.
      await users.insertMany([
        storedUser('u-before-second-key', 'Zweiter', { usernameKey: usernameKey('Zweiter') }, 1),
        storedUser('u-before-keys', 'Erster', { usernameLower: 'erster' }, 2),
        storedUser('u-nameless', null, {}, 3),
      ]);
      expect((await users.find(USERS_WITHOUT_SECOND_KEY).hint('users_key_as_written_by_named').toArray()).map((d) => d._id)).toEqual(['u-before-second-key', 'u-before-keys']);
      expect((await users.find(USERS_WITH_USERNAME_LOWER).hint('users_username_lower_left').toArray()).map((d) => d._id)).toEqual(['u-before-keys']);
      await MongoIdentityRepository.open(connection);
      expect(await users.findOne({ _id: 'u-before-second-key' })).toMatchObject({ usernameKeyAsWritten: usernameKeyAsWritten('Zweiter') });
      expect(await users.findOne({ _id: 'u-before-keys' })).toMatchObject({ usernameKey: usernameKey('Erster'), usernameKeyAsWritten: usernameKeyAsWritten('Erster') });
      expect(await users.findOne({ _id: 'u-before-keys' })).not.toHaveProperty('usernameLower');
      expect(await users.countDocuments(USERS_WITHOUT_SECOND_KEY)).toBe(0);
      expect(await users.countDocuments(USERS_WITH_USERNAME_LOWER)).toBe(0);
      if (external) {
        // A real server's plans: each query one index range, no collection scan.
        for (const [query, index] of [[USERS_WITHOUT_SECOND_KEY, 'users_key_as_written_by_named'], [USERS_WITH_USERNAME_LOWER, 'users_username_lower_left']] as const) {
          const plan = JSON.stringify((await users.find(query as never).sort({ createdAt: 1, _id: 1 }).explain()).queryPlanner.winningPlan);
          expect(plan).toContain(index);
          expect(plan).not.toContain('COLLSCAN');
        }
      }
    });
  });
});

describeOnEngine('MongoIdentityRepository: expired sessions, invitations and reset links', skipReason, () => {
  it('are deleted by the server: a TTL index on expiresAt, a day after it, in each collection; the documents of earlier versions hold expiresAt as a Date', async () => {
    await withFreshDatabase(async (connection) => {
      // A session stored by the version before password versions, in a database opened again (a rolling upgrade).
      await connection.db.collection('sessions').insertOne({ _id: 'old' as never, userId: 'u', createdAt: new Date(), expiresAt: new Date(), revokedAt: null });
      await MongoIdentityRepository.open(connection);
      for (const [collection, name] of [['sessions', 'sessions_expiry_ttl'], ['invitations', 'invitations_expiry_ttl'], ['password_resets', 'password_resets_expiry_ttl']] as const) {
        const index = (await connection.db.collection(collection).indexes()).find((i) => i.name === name);
        expect(index).toMatchObject({ key: { expiresAt: 1 }, expireAfterSeconds: 24 * 60 * 60 });
      }
      expect(await connection.db.collection('sessions').countDocuments({ _id: 'old' as never, expiresAt: { $type: 'date' } })).toBe(1);
    });
  });
});

describeOnEngine('MongoIdentityRepository and a rollback to a release before 7f59661 (usernameLower, b521ce9)', skipReason, () => {
  it('lets the older release take a stored name again unless the names are given usernameLower first (docs/deploy.md), which the next start undoes', async () => {
    await withFreshDatabase(async (connection) => {
      const users = connection.db.collection<{ _id: string; username?: string | null; usernameLower?: string }>('users');
      await users.insertMany([storedUser('u-fan', null, {}, 1), storedUser('u-other', null, {}, 2)] as never);
      const repository = await MongoIdentityRepository.open(connection);
      expect(await repository.updateProfile('u-fan', { username: 'CardFan' }, 'none', new Date(Date.UTC(2026, 0, 3)))).toMatchObject({ username: 'CardFan' });
      // The older release as b521ce9 writes (copied as a fixture): its index made at its start, usernameLower beside the name.
      const olderReleaseOpens = () => users.createIndex({ usernameLower: 1 }, { unique: true, sparse: true, name: 'users_username_lower' });
      const olderInsert = (id: string, username: string) => users.insertOne({ ...storedUser(id, username, {}, 4), usernameLower: username.toLowerCase() } as never);
      const olderRename = (id: string, username: string) => users.findOneAndUpdate({ _id: id }, { $set: { updatedAt: new Date(), username, usernameLower: username.toLowerCase() } }, { returnDocument: 'after' });
      // The limit: this release's documents hold no usernameLower, so the older release's index does not see their names.
      await olderReleaseOpens();
      await olderInsert('u-taken-again', 'cardfan');
      await users.deleteOne({ _id: 'u-taken-again' });
      // The operator's step before the rollback (deploy.md's mongosh lines, through the driver).
      await users.createIndex({ usernameLower: 1 }, { unique: true, sparse: true, name: 'users_username_lower' });
      const printed: string[] = [];
      for (const u of await users.find({ username: { $type: 'string' }, usernameLower: { $exists: false } }).toArray()) {
        try {
          await users.updateOne({ _id: u._id }, { $set: { usernameLower: u.username!.toLowerCase() } });
        } catch {
          printed.push(u._id);
        }
      }
      expect(printed).toEqual([]);
      await olderReleaseOpens();
      await expect(olderInsert('u-new', 'cardfan')).rejects.toMatchObject({ code: 11000 });
      await expect(olderRename('u-other', 'CARDFAN')).rejects.toMatchObject({ code: 11000 });
      expect(await olderRename('u-other', 'fan_two')).toMatchObject({ username: 'fan_two' });
      // Upgraded again: the names are keyed from themselves, usernameLower and its index go, the names stay taken.
      const upgraded = await MongoIdentityRepository.open(connection);
      expect(await users.find({}, { projection: { username: 1, usernameKey: 1 } }).sort({ _id: 1 }).toArray()).toEqual([
        { _id: 'u-fan', username: 'CardFan', usernameKey: 'cardfan' },
        { _id: 'u-other', username: 'fan_two', usernameKey: 'fan_two' },
      ]);
      expect(await users.countDocuments({ usernameLower: { $exists: true } })).toBe(0);
      expect((await users.indexes()).map((index) => index.name)).not.toContain('users_username_lower');
      await expect(upgraded.updateProfile('u-other', { username: 'CARDFAN' }, 'none', new Date())).rejects.toBeInstanceOf(AlreadyExistsError);
      await expect(upgraded.updateProfile('u-fan', { username: 'FAN_TWO' }, 'none', new Date())).rejects.toBeInstanceOf(AlreadyExistsError);
    });
  });
});
