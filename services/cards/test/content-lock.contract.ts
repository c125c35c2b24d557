import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ContentLock } from '../src/domain/ports';

/** Two holders of one lock as two processes sharing the store would have them (one for a store one process owns). */
export interface ContentLockFixture {
  holders: [ContentLock, ContentLock];
  close(): Promise<void>;
}

export type ContentLockFactory = () => Promise<ContentLockFixture>;

/** The ContentLock contract; run it against every adapter. */
export function describeContentLockContract(name: string, factory: ContentLockFactory): void {
  describe(`ContentLock contract: ${name}`, () => {
    let lock: ContentLockFixture;
    beforeEach(async () => {
      lock = await factory();
    });
    afterEach(async () => {
      await lock.close();
    });

    it('runs the tasks of one key one at a time, whichever holder runs them, and answers what each returned', async () => {
      const key = randomUUID();
      let inside = 0;
      let mostInside = 0;
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          lock.holders[i % 2]!.run(key, async () => {
            mostInside = Math.max(mostInside, ++inside);
            // Room for another task to come in if the lock let it.
            await sleep(10);
            inside--;
            return i;
          }),
        ),
      );
      expect(results).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      expect(mostInside).toBe(1);
    });

    it('runs tasks of different keys side by side', async () => {
      let open: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const [waited, opened] = await Promise.all([
        lock.holders[0].run(randomUUID(), async () => {
          await gate;
          return 'waited';
        }),
        lock.holders[1].run(randomUUID(), async () => {
          open();
          return 'opened';
        }),
      ]);
      expect([waited, opened]).toEqual(['waited', 'opened']);
    });

    it('hands a failed task its error and lets the next task of the key in', async () => {
      const key = randomUUID();
      const failed = lock.holders[0].run(key, async () => {
        throw new Error('task failed');
      });
      const next = lock.holders[1].run(key, async () => 'next ran');
      await expect(failed).rejects.toThrow('task failed');
      await expect(next).resolves.toBe('next ran');
      await expect(lock.holders[0].run(key, async () => 'again')).resolves.toBe('again');
    });
  });
}
