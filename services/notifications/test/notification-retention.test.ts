import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, createLogger, loadConfig } from '@cards/platform';
import { SqliteNotificationRepository } from '../src/adapters/sqlite/sqlite-notification-repository';
import { NotificationService, RETENTION_BATCH } from '../src/application/notification-service';
import { notificationsConfigSchema } from '../src/config';
import { testTempDir } from '../../../test/support/cleanup';
import { aVerification } from './notification-repository.contract';

const DAY = 24 * 60 * 60 * 1000;

describe('notification retention (NOTIFICATIONS_RETENTION_DAYS)', () => {
  let dir: string;
  let repository: SqliteNotificationRepository;
  let now: number;
  let service: NotificationService;

  beforeEach(() => {
    dir = testTempDir('notifications-retention-');
    repository = new SqliteNotificationRepository(join(dir, 'notifications.db'));
    now = Date.parse('2026-01-01T00:00:00.000Z');
    service = new NotificationService(repository, createLogger('test', 'silent'), () => new Date(now));
  });
  afterEach(async () => {
    await repository.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const record = (authorId: string) => service.recordCollectionCreated({ eventId: randomUUID(), collectionId: randomUUID(), authorId });

  it('removes the notifications older than the retention, in batches, and keeps the younger ones', async () => {
    const author = randomUUID();
    for (let i = 0; i < RETENTION_BATCH + 1; i++) await record(author);
    now += 100 * DAY;
    await record(author);
    now += 81 * DAY;
    expect(await service.removeExpired(180)).toBe(RETENTION_BATCH + 1);
    expect(await repository.listForUser(author)).toHaveLength(1);
    expect(await service.removeExpired(180)).toBe(0);
  });

  it('forgets every deletion past the retention in one pass, also more than a batch and more than the notifications removed', async () => {
    const author = randomUUID();
    const deleted = Array.from({ length: 2 * RETENTION_BATCH + 1 }, () => randomUUID());
    for (const cardId of deleted) await service.recordDeleted({ kind: 'card', cardId });
    await record(author);
    now += 181 * DAY;
    expect(await service.removeExpired(180)).toBe(1);
    // Before, one pass an hour forgot at most RETENTION_BATCH of them: the last ones were still refused here.
    for (const cardId of deleted.slice(-3)) expect(await repository.add(aVerification().of(author).forCard(cardId).build())).toBe(true);
  });

  it('0 keeps them all', async () => {
    const author = randomUUID();
    await record(author);
    now += 10_000 * DAY;
    expect(await service.removeExpired(0)).toBe(0);
    expect(await repository.listForUser(author)).toHaveLength(1);
  });

  it('a retention longer than any date can reach back (999999999 days, written for "keep all") keeps them all, as 0 does, without failing', async () => {
    const author = randomUUID();
    await record(author);
    now += 10_000 * DAY;
    expect(await service.removeExpired(999_999_999)).toBe(0);
    expect(await repository.listForUser(author)).toHaveLength(1);
  });

  it('defaults to 180 days; a value that is not a whole number of days is a configuration error', () => {
    expect(loadConfig(notificationsConfigSchema, {}).NOTIFICATIONS_RETENTION_DAYS).toBe(180);
    expect(loadConfig(notificationsConfigSchema, { NOTIFICATIONS_RETENTION_DAYS: '30' }).NOTIFICATIONS_RETENTION_DAYS).toBe(30);
    expect(() => loadConfig(notificationsConfigSchema, { NOTIFICATIONS_RETENTION_DAYS: 'half a year' })).toThrow(ConfigError);
  });
});
