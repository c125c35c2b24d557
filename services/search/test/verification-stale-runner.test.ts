import type { PageFetchResult } from '../src/verification/domain/model';
import type { VerificationService } from '../src/verification/application/verification-service';
import { HeldFetcher, runnerKit, storePerTest, until } from './verification-runner-support';

const LEASE_MS = 60_000;
const CONTENT = 'the moon pulls the tides of the sea twice a day';
const page = (text: string): PageFetchResult => ({ ok: true, html: `<p>${text}</p>`, finalUrl: 'https://example.org/tides' });

/** How the stalled runner's run ends once it wakes up, its job long since taken over. */
const staleEndings: [string, (fetcher: HeldFetcher, service: VerificationService) => void][] = [
  ['finishes with its own result', (fetcher) => fetcher.answer(0, page('the city council voted on parking fees for three hours'))],
  ['fails transiently and asks to run again later', (fetcher) => fetcher.answer(0, { ok: false, failure: 'the page answered HTTP 503', transient: true })],
  [
    'is interrupted by its shutdown and hands the job back',
    (fetcher, service) => {
      service.stop();
      fetcher.answer(0, page(CONTENT));
    },
  ],
];

describe('a verification runner that outlived its lease', () => {
  const currentStore = storePerTest();

  it.each(staleEndings)('and then %s changes nothing: the runner holding the job announces its result, once', async (_how, staleEnds) => {
    const store = currentStore();
    const fetcher = new HeldFetcher();
    const { newService, newRunner, announced, logged, enqueue } = runnerKit(store, fetcher, { maxAttempts: 3, retryBaseMs: 60_000, leaseMs: LEASE_MS });
    const card = await enqueue(CONTENT, 'https://example.org/tides');

    const stalledService = newService();
    const stalled = newRunner(stalledService);
    const holder = newRunner(newService());
    try {
      stalled.start();
      await until('the first runner to fetch', () => fetcher.fetches === 1);
      // Its process stalls mid-fetch past the lease: the job is requeued and another runner takes it.
      expect(await store.requeueExpired(new Date(Date.now() + LEASE_MS + 1))).toBe(1);
      holder.start();
      await until('the second runner to fetch', () => fetcher.fetches === 2);

      // No more claims by either runner from here; each finishes the run it has in hand.
      const stalledDone = stalled.stop();
      const holderDone = holder.stop();
      staleEnds(fetcher, stalledService);
      await stalledDone;
      fetcher.answer(1, page(CONTENT));
      await holderDone;

      const [verified, ...more] = await announced();
      expect(more).toEqual([]);
      expect(verified).toMatchObject({ cardId: card.id, score: 100, failure: '' });
      expect(await store.find(verified!.verificationId)).toMatchObject({ status: 'done', score: 100 });
      expect(fetcher.fetches).toBe(2);
      expect(logged(40)).toEqual([expect.objectContaining({ cardId: card.id, msg: expect.stringMatching(/stale/) })]);
    } finally {
      stalledService.stop();
      fetcher.answerAll({ ok: false, failure: 'test over', transient: false });
      await Promise.all([stalled.stop(), holder.stop()]);
    }
  });
});
