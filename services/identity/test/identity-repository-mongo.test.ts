import { randomBytes } from 'node:crypto';
import { usernameCaseFold } from '@cards/card-rules';
import { AlreadyExistsError, connectMongo, createLogger } from '@cards/platform';
import { MongoIdentityRepository } from '../src/adapters/mongo/mongo-identity-repository';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { describeIdentityRepositoryContract } from './identity-repository.contract';

const logger = createLogger('identity-repo-test', process.env.LOG_LEVEL ?? 'fatal');
// MONGO_URL points the suite at a real MongoDB (e.g. a replica set, to cover the transactional path);
// otherwise it starts the MongoDB wire-protocol test server from test/engines.
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

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

describeOnEngine('MongoIdentityRepository on a database of the version before the confusable skeleton key', skipReason, () => {
  it('keys the usernames stored there, oldest first, keeps both of two look-alikes, and drops the earlier index', async () => {
    const connection = await connectMongo({ url: engine!.url, database: `identity_test_${randomBytes(4).toString('hex')}`, logger });
    try {
      const users = connection.db.collection<{ _id: string }>('users');
      await users.createIndex({ usernameLower: 1 }, { unique: true, sparse: true, name: 'users_username_lower' });
      const user = (id: string, username: string | null, day: number) => ({
        _id: id,
        email: `${id}@example.com`,
        username,
        ...(username === null ? {} : { usernameLower: usernameCaseFold(username) }),
        website: null,
        visibleEmail: true,
        passwordHash: 'scrypt$x',
        createdAt: new Date(Date.UTC(2026, 0, day)),
        updatedAt: new Date(Date.UTC(2026, 0, day)),
      });
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
    } finally {
      await connection.db.dropDatabase().catch(() => undefined);
      await connection.close();
    }
  });
});
