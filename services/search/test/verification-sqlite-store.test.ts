import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteVerificationStore } from '../src/verification/adapters/sqlite/sqlite-verification-store';
import { describeVerificationStoreContract } from './verification-store.contract';
import { testTempDir } from '../../../test/support/cleanup';

describeVerificationStoreContract('SqliteVerificationStore', async () => {
  const dir = testTempDir('verification-store-');
  const store = new SqliteVerificationStore(join(dir, 'verification.db'));
  const outbox = store.outbox();
  return {
    store,
    pendingEvents: () => outbox.pending(100),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
});

describe('SqliteVerificationStore reopened after a crash', () => {
  it('runs the jobs its predecessor was running at once, not when their lease ends', async () => {
    const dir = testTempDir('verification-store-');
    try {
      const path = join(dir, 'verification.db');
      const now = new Date();
      const hourLater = new Date(now.getTime() + 3_600_000);
      const crashed = new SqliteVerificationStore(path);
      const job = { id: randomUUID(), sourceEventId: randomUUID(), cardId: randomUUID(), authorId: randomUUID(), link: 'https://example.com/', content: 'text', createdAt: now };
      expect(await crashed.enqueue(job)).toBe(true);
      expect((await crashed.claim(1, now, hourLater)).map((j) => j.id)).toEqual([job.id]);
      // The process dies here, its lease an hour away; the next one opens the same file.
      const next = new SqliteVerificationStore(path);
      expect((await next.claim(1, now, hourLater)).map((j) => j.id)).toEqual([job.id]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts each run its predecessor died in as an attempt', async () => {
    const dir = testTempDir('verification-store-');
    const opened: SqliteVerificationStore[] = [];
    try {
      const path = join(dir, 'verification.db');
      const now = new Date();
      const hourLater = new Date(now.getTime() + 3_600_000);
      const job = { id: randomUUID(), sourceEventId: randomUUID(), cardId: randomUUID(), authorId: randomUUID(), link: 'https://example.com/', content: 'text', createdAt: now };
      const open = (): SqliteVerificationStore => {
        const store = new SqliteVerificationStore(path);
        opened.push(store);
        return store;
      };
      expect(await open().enqueue(job)).toBe(true);
      for (const attempts of [0, 1, 2]) {
        // Each process claims the job and dies with it; the next one opens the same file.
        expect((await open().claim(1, now, hourLater))[0]).toMatchObject({ id: job.id, attempts });
      }
      expect((await open().find(job.id))?.attempts).toBe(3);
    } finally {
      for (const store of opened) await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
