import { HeldFetcher, runnerKit, storePerTest, until } from './verification-runner-support';
import type { VerificationService } from '../src/verification/application/verification-service';

const MAX_ATTEMPTS = 3;
const LEASE_MS = 60_000;

describe('a verification whose runs keep being cut off', () => {
  const currentStore = storePerTest();

  it(`ends after ${MAX_ATTEMPTS} cut-off runs as failed, announced once, without fetching again`, async () => {
    const store = currentStore();
    // A page that never answers: every run of its job stays mid-fetch, where the process is taken down.
    const fetcher = new HeldFetcher();
    const { newService, newRunner, announced, logged, enqueue } = runnerKit(store, fetcher, { maxAttempts: MAX_ATTEMPTS, retryBaseMs: 1000, leaseMs: LEASE_MS });
    const card = await enqueue('the moon pulls the tides', 'https://example.org/crashes-the-verifier');

    const dead: { service: VerificationService; stopped: Promise<void> }[] = [];
    try {
      for (let run = 1; run <= MAX_ATTEMPTS; run++) {
        const service = newService();
        const runner = newRunner(service);
        runner.start();
        await until(`fetch number ${run}`, () => fetcher.fetches === run);
        // The process dies mid-fetch: its runner claims nothing more and never finishes or hands back the job...
        dead.push({ service, stopped: runner.stop() });
        // ...and the job's lease runs out.
        expect(await store.requeueExpired(new Date(Date.now() + LEASE_MS + 1))).toBe(1);
      }

      const last = newRunner(newService());
      last.start();
      await until('the verification to be announced', async () => (await announced()).length > 0);
      await last.stop();

      const [verified, ...more] = await announced();
      expect(more).toEqual([]);
      expect(verified).toMatchObject({ cardId: card.id, authorId: card.authorId, link: card.link, score: 0 });
      expect(verified!.failure).toMatch(/stopped before it finished 3 times/);
      expect(await store.find(verified!.verificationId)).toMatchObject({ status: 'done', score: 0, attempts: MAX_ATTEMPTS, failure: verified!.failure });
      expect(fetcher.fetches).toBe(MAX_ATTEMPTS);
      expect(logged(50)).toEqual([expect.objectContaining({ cardId: card.id, linkHost: new URL(card.link).host })]);

      // A later start finds nothing left to run.
      expect(await store.requeueExpired(new Date(Date.now() + LEASE_MS + 1))).toBe(0);
      const next = newRunner(newService());
      next.start();
      await next.stop();
      expect(fetcher.fetches).toBe(MAX_ATTEMPTS);
      expect(await announced()).toHaveLength(1);
    } finally {
      for (const { service } of dead) service.stop();
      fetcher.answerAll({ ok: false, failure: 'test over', transient: false });
      await Promise.all(dead.map((d) => d.stopped));
    }
  });
});
