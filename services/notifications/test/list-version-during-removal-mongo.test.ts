import { randomBytes, randomUUID } from 'node:crypto';
import type { Collection, Db, Document } from 'mongodb';
import { connectMongo, createLogger, type MongoConnection } from '@cards/platform';
import { MongoNotificationRepository } from '../src/adapters/mongo/mongo-notification-repository';
import { engineForSuite, describeOnEngine } from '../../../test/engines/suite';
import { startMongoSync } from '../../../test/engines/mongo';
import { aVerification } from './notification-repository.contract';

const logger = createLogger('notifications-version-test', process.env.LOG_LEVEL ?? 'fatal');
const external = process.env.TEST_MONGO_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('mongo-java-server', startMongoSync);

/** Runs `before` (once) ahead of the first call of `method` on the named collection that `when` picks. */
type Interleave = { collection: string; method: 'countDocuments' | 'deleteMany'; when: (filter: Document) => boolean; before: () => Promise<unknown> };

/** The connection as a repository sees it, with one step of another process run just before one of its own calls. */
function interleaved(connection: MongoConnection, step: Interleave): MongoConnection {
  let pending: Interleave | null = step;
  const db = new Proxy(connection.db, {
    get(target, property, receiver) {
      if (property !== 'collection') return Reflect.get(target, property, receiver);
      return (name: string) => {
        const collection = target.collection(name);
        if (name !== step.collection) return collection;
        return new Proxy(collection, {
          get(c, p, r) {
            const original = Reflect.get(c, p, r);
            if (p !== step.method || typeof original !== 'function') return typeof original === 'function' ? original.bind(c) : original;
            return async (filter: Document, ...rest: unknown[]) => {
              if (pending && pending.when(filter)) {
                const run = pending.before;
                pending = null;
                await run();
              }
              return (original as (...args: unknown[]) => unknown).call(c, filter, ...rest);
            };
          },
        }) as Collection;
      };
    },
  }) as Db;
  return { ...connection, db };
}

/**
 * The notification list's version (its ETag) read while a removal runs (a card deleted in another tab; the retention
 * sweep) on MongoDB, whose reads and removal are separate operations. The tag must never come back once the list has
 * changed, else a poll naming it gets 304 for a list with a notification its client never saw.
 */
describeOnEngine('the notification list version read during a removal, MongoDB', skipReason, () => {
  let connection: MongoConnection;
  let repository: MongoNotificationRepository;

  beforeEach(async () => {
    connection = await connectMongo({ url: engine!.url, database: `notifications_version_${randomBytes(4).toString('hex')}`, logger });
    repository = await MongoNotificationRepository.open(connection);
  });

  afterEach(async () => {
    await connection.db.dropDatabase().catch(() => undefined);
    await repository.close();
  });

  /** A user with five notifications, one of them about a card about to be deleted. */
  async function fiveNotifications() {
    const owner = randomUUID();
    const card = randomUUID();
    await repository.add(aVerification().of(owner).forCard(card).build());
    for (let i = 0; i < 4; i++) await repository.add(aVerification().of(owner).build());
    return { owner, card };
  }

  it('is not the version of a later list when the removal lands between its counts', async () => {
    const { owner, card } = await fiveNotifications();
    const reader = await MongoNotificationRepository.open(
      interleaved(connection, {
        collection: 'notifications',
        method: 'countDocuments',
        when: (filter) => filter.userRead === true,
        before: () => repository.removeAbout({ kind: 'card', cardId: card }, new Date()),
      }),
    );
    const tagDuringRemoval = await reader.listVersionForUser(owner);
    expect(await repository.listForUser(owner)).toHaveLength(4);

    await repository.add(aVerification().of(owner).build());

    expect(await repository.listVersionForUser(owner)).not.toBe(tagDuringRemoval);
  });

  it('is not the version of a later list when it is read between the removal counted and the documents deleted', async () => {
    const { owner, card } = await fiveNotifications();
    let tagDuringRemoval = '';
    const remover = await MongoNotificationRepository.open(
      interleaved(connection, {
        collection: 'notifications',
        method: 'deleteMany',
        when: () => true,
        before: async () => (tagDuringRemoval = await repository.listVersionForUser(owner)),
      }),
    );
    expect(await remover.removeAbout({ kind: 'card', cardId: card }, new Date())).toBe(1);
    expect(tagDuringRemoval).not.toBe('');

    await repository.add(aVerification().of(owner).build());

    expect(await repository.listVersionForUser(owner)).not.toBe(tagDuringRemoval);
  });
});
