import { createLogger } from '@cards/platform';
import type { VerificationService } from '../src/verification/application/verification-service';
import type { VerificationStore } from '../src/verification/domain/ports';
import { VerificationRunner } from '../src/verification/worker';

const LEASE_MS = 10_000;

/** A queue with no job to claim that counts the runner's requeues of expired leases. */
function emptyQueue(): { store: VerificationStore; requeues: Date[] } {
  const requeues: Date[] = [];
  const store = {
    requeueExpired: async (now: Date) => {
      requeues.push(now);
      return 0;
    },
    claim: async () => [],
    queueDepth: async () => ({ pending: 0, running: 0 }),
  } as unknown as VerificationStore;
  return { store, requeues };
}

// The wall clock is not a stopwatch: NTP, a VM's resume or a clock fixed by hand may set it back an hour. The jobs of a
// runner that died must still be requeued about once a lease, not an hour later.
describe('VerificationRunner and a wall clock that steps', () => {
  beforeEach(() => jest.useFakeTimers({ now: new Date('2026-11-24T12:00:00Z'), doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] }));
  afterEach(() => jest.useRealTimers());

  it('keeps requeueing expired leases once a lease after the wall clock was set back an hour, at the new time', async () => {
    const { store, requeues } = emptyQueue();
    const logger = createLogger('verification-clock-test', 'warn', { write: () => undefined });
    const runner = new VerificationRunner(store, {} as VerificationService, 1, logger, () => undefined, LEASE_MS, 1, 500);
    runner.start();
    try {
      await jest.advanceTimersByTimeAsync(0);
      expect(requeues).toHaveLength(1);
      jest.setSystemTime(Date.now() - 3_600_000);
      await jest.advanceTimersByTimeAsync(LEASE_MS + 1_000);
      expect(requeues).toHaveLength(2);
      // Asked with the (stepped) wall-clock time: the stored leases are wall-clock times.
      expect(requeues[1]!.getTime()).toBeLessThan(Date.parse('2026-11-24T11:01:00Z'));
    } finally {
      await runner.stop();
    }
  });
});
