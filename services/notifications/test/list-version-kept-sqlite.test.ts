import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '@cards/platform';
import { LIST_VERSION_SQL, MARK_ALL_READ_CHUNK, NOTIFICATIONS_MIGRATIONS, SqliteNotificationRepository } from '../src/adapters/sqlite/sqlite-notification-repository';
import { aCollectionCreated, aVerification } from './notification-repository.contract';
import { testTempDir } from '../../../test/support/cleanup';

/**
 * The list's version is read on every GET /api/notifications (a 304 poll included). It counted the user's
 * notifications and the read ones over their rows: for a user of 30,000 notifications every poll read 30,000 rows
 * (~7 ms, docs/benchmarks.md "Big accounts"). The counts are kept; the version's text is what it was, so a client's tag
 * from before the upgrade still names the same list.
 */
describe('SQLite keeps the counts behind the notification list version', () => {
  it('reads the version from kept counts only, not from the notifications', () => {
    const dir = testTempDir('notifications-version-');
    const repository = new SqliteNotificationRepository(join(dir, 'notifications.db'));
    const db = (repository as unknown as { db: { prepare(sql: string): { all(...args: unknown[]): { detail: string }[] } } }).db;
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${LIST_VERSION_SQL}`).all({ userId: randomUUID() }).map((r) => r.detail);
    // Before: 'SEARCH notifications USING INDEX notifications_user_newest (user_id=?)', reading each row for user_read.
    expect(plan.some((d) => d.includes('notifications '))).toBe(false);
    expect(plan.filter((d) => /^(SEARCH|SCAN) /.test(d) && d !== 'SCAN CONSTANT ROW')).toEqual([
      'SEARCH user_notification_counts USING PRIMARY KEY (user_id=?)',
      'SEARCH user_notification_counts USING PRIMARY KEY (user_id=?)',
      'SEARCH user_removals USING INDEX sqlite_autoindex_user_removals_1 (user_id=?)',
    ]);
    void repository.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a store made before gets the counts of what it holds: the same version as before the upgrade, kept through every change after', async () => {
    const dir = testTempDir('notifications-version-');
    try {
      const path = join(dir, 'notifications.db');
      const owner = randomUUID();
      const before = openSqlite(path, NOTIFICATIONS_MIGRATIONS.slice(0, NOTIFICATIONS_MIGRATIONS.findIndex((m) => m.includes('user_notification_counts'))));
      const add = before.prepare(
        `INSERT INTO notifications (id, user_id, kind, collection_id, user_read, created_at, updated_at, source_event_id, subject_key) VALUES (?, ?, 'collection_created', ?, ?, ?, ?, ?, ?)`,
      );
      for (let i = 0; i < 7; i++) {
        const id = randomUUID();
        const at = new Date(Date.now() - 60_000 + i).toISOString();
        add.run(randomUUID(), i === 6 ? randomUUID() : owner, id, i % 3 === 0 ? 1 : 0, at, at, randomUUID(), `collection:${id}`);
      }
      before.close();
      const repository = new SqliteNotificationRepository(path);
      // 6 of the owner's, 2 of them read (the 7th is another user's).
      expect(await repository.listVersionForUser(owner)).toBe('6.2');
      expect(await repository.listVersionForUser(randomUUID())).toBe('0.0');
      const added = aVerification().of(owner).build();
      await repository.add(added);
      await repository.add(aCollectionCreated().of(owner).build());
      expect(await repository.listVersionForUser(owner)).toBe('8.2');
      await repository.markRead(owner, added.id, new Date());
      expect(await repository.listVersionForUser(owner)).toBe('8.3');
      expect(await repository.markAllRead(owner, new Date())).toBe(5);
      expect(await repository.listVersionForUser(owner)).toBe('8.8');
      await repository.removeAbout({ kind: 'card', cardId: added.cardId }, new Date());
      expect(await repository.listVersionForUser(owner)).toBe('7.7.1');
      await repository.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('SQLite marks all of a big list read a chunk at a time', () => {
  it('other work runs between the chunks; every notification of the user is read at the end, no one else’s', async () => {
    const dir = testTempDir('notifications-all-read-');
    try {
      const repository = new SqliteNotificationRepository(join(dir, 'notifications.db'));
      const db = (repository as unknown as { db: { exec(sql: string): void; prepare(sql: string): { get(...args: unknown[]): unknown } } }).db;
      const owner = randomUUID();
      const other = randomUUID();
      db.exec('BEGIN');
      for (let i = 0; i < 2 * MARK_ALL_READ_CHUNK + 10; i++) await repository.add(aCollectionCreated().of(owner).build());
      await repository.add(aCollectionCreated().of(other).build());
      db.exec('COMMIT');
      const unread = () => (db.prepare('SELECT count(*) AS n FROM notifications WHERE user_id = ? AND user_read = 0').get(owner) as { n: number }).n;
      let settled = false;
      const marking = repository.markAllRead(owner, new Date()).then((n) => ((settled = true), n));
      const seenDuring: number[] = [];
      while (!settled) {
        await new Promise((resolve) => setImmediate(resolve));
        if (!settled) seenDuring.push(unread());
      }
      expect(await marking).toBe(2 * MARK_ALL_READ_CHUNK + 10);
      // Before: one UPDATE, done before any other work ran.
      expect(seenDuring.length).toBeGreaterThanOrEqual(1);
      expect(seenDuring[0]).toBeGreaterThan(0);
      expect(seenDuring[0]).toBeLessThan(2 * MARK_ALL_READ_CHUNK + 10);
      expect(unread()).toBe(0);
      expect(await repository.listVersionForUser(owner)).toBe(`${2 * MARK_ALL_READ_CHUNK + 10}.${2 * MARK_ALL_READ_CHUNK + 10}`);
      expect(await repository.listVersionForUser(other)).toBe('1.0');
      expect(await repository.markAllRead(owner, new Date())).toBe(0);
      await repository.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
