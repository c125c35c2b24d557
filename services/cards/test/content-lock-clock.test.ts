import { UnavailableError } from '@cards/platform';
import type { Collection } from 'mongodb';
import { MongoContentLock, type ContentLockDocument } from '../src/adapters/mongo/mongo-content-lock';

/** A lock collection whose every key is held by another process (each take is refused on _id), and never let go. */
const heldByAnother = {
  updateOne: async () => Promise.reject(Object.assign(new Error('E11000 duplicate key error'), { code: 11000 })),
  deleteOne: async () => ({ deletedCount: 0 }),
} as unknown as Collection<ContentLockDocument>;

// The wall clock is not a stopwatch: NTP, a VM's resume or a clock fixed by hand may set it back an hour. A create
// waiting for a key another process holds must give up after maxWaitMs of its own time, not an hour later.
describe('MongoContentLock and a wall clock that steps', () => {
  beforeEach(() => jest.useFakeTimers({ now: new Date('2026-11-24T12:00:00Z'), doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('gives up waiting for a held key after maxWaitMs even when the wall clock was set back an hour meanwhile', async () => {
    const lock = new MongoContentLock(heldByAnother, { maxWaitMs: 5_000 });
    const outcome = lock.run('same-text', async () => 'created').catch((err: unknown) => err);
    await jest.advanceTimersByTimeAsync(10); // waiting: the key was found held
    jest.setSystemTime(Date.now() - 3_600_000);
    await jest.advanceTimersByTimeAsync(6_000);
    const err = await outcome;
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as Error).message).toBe('A card with the same text is being created; try again');
  });
});
