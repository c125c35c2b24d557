import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { connectMongo, createLogger } from '@cards/platform';
import { MongoNotificationRepository } from '../../services/notifications/src/adapters/mongo/mongo-notification-repository';
import { SqliteNotificationRepository } from '../../services/notifications/src/adapters/sqlite/sqlite-notification-repository';
import type { NotificationRepository } from '../../services/notifications/src/domain/ports';
import { Mailbox } from '../support/mailbox';
import { sharedEngineNamespace, startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';

/**
 * A user with more notifications than one gRPC message holds (8 MiB; ~175 bytes each), with every
 * service in its own process as the Helm chart runs them. Creating that many cards or collections
 * over HTTP would take minutes, so they are stored through the notifications service's own
 * repository on its store (the embedded SQLite file, or its MongoDB database when the suite runs with
 * MONGO_URL) while it runs, as its event consumer would store them.
 */
const COUNT = 55_000;

async function openNotificationStoreOf(running: RunningSystem): Promise<NotificationRepository> {
  if (!process.env.MONGO_URL) return new SqliteNotificationRepository(join(running.dataDir, 'notifications', 'notifications.db'));
  const { MONGO_DATABASE_PREFIX } = sharedEngineNamespace(running.dataDir);
  const connection = await connectMongo({ url: process.env.MONGO_URL, database: 'notifications', databasePrefix: MONGO_DATABASE_PREFIX, logger: createLogger('e2e', 'silent') });
  return MongoNotificationRepository.open(connection);
}

let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let seeded: string[];

beforeAll(async () => {
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: 'distributed' } });
  alice = await signUp(system.baseUrl, mailbox, 'many-notifications');
  const repository = await openNotificationStoreOf(system);
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  seeded = [];
  for (let i = 0; i < COUNT; i++) {
    // Pairs share a creation time: those list in insertion order.
    const at = new Date(start + Math.floor(i / 2) * 1000);
    const id = randomUUID();
    await repository.add({ kind: 'verification', id, userId: alice.id, cardId: randomUUID(), verificationId: randomUUID(), similarityScore: i % 101, read: false, createdAt: at, updatedAt: at, sourceEventId: randomUUID() });
    seeded.push(id);
  }
  await repository.close();
}, 300_000);

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

describe('a user with more notifications than one gRPC message holds (services in separate processes)', () => {
  it('GET /api/notifications answers all of them, newest first, and mark-all-read reaches every one', async () => {
    const res = await alice.client.get('/api/notifications');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(res.json.map((n: { id: string }) => n.id)).toEqual([...seeded].reverse());
    expect(res.json[0]).toMatchObject({ type: 'verification', user_uuid: alice.id, similarity_score: (COUNT - 1) % 101, user_read: false });

    expect((await alice.client.put('/api/notifications/all')).status).toBe(204);
    const after = await alice.client.get('/api/notifications');
    expect(after.status).toBe(200);
    expect(after.json).toHaveLength(COUNT);
    expect(after.json.every((n: { user_read: boolean }) => n.user_read)).toBe(true);
  }, 120_000);
});
