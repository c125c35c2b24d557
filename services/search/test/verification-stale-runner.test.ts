import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@cards/platform';
import { events } from '@cards/proto';
import { SqliteVerificationStore } from '../src/verification/adapters/sqlite/sqlite-verification-store';
import { InlineFuzzballScorer } from '../src/verification/adapters/fuzzball/fuzzball-scorer';
import { VerificationService } from '../src/verification/application/verification-service';
import type { PageFetchResult } from '../src/verification/domain/model';
import type { PageFetcher } from '../src/verification/domain/ports';
import { VerificationRunner } from '../src/verification/worker';

/** Every fetch waits until the test answers it, so a runner can be held mid-fetch for as long as the test likes. */
class HeldFetcher implements PageFetcher {
  private readonly waiting: ((result: PageFetchResult) => void)[] = [];
  get fetches(): number {
    return this.waiting.length;
  }
  fetchPage(): Promise<PageFetchResult> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  answer(fetch: number, result: PageFetchResult): void {
    this.waiting[fetch]!(result);
  }
  answerAll(result: PageFetchResult): void {
    for (const resolve of this.waiting) resolve(result);
  }
}

const LEASE_MS = 60_000;
const CONTENT = 'the moon pulls the tides of the sea twice a day';
const page = (text: string): PageFetchResult => ({ ok: true, html: `<p>${text}</p>`, finalUrl: 'https://example.org/tides' });

async function until(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

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
  let dir: string;
  let store: SqliteVerificationStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'verification-stale-'));
    store = new SqliteVerificationStore(join(dir, 'verification.db'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(staleEndings)('and then %s changes nothing: the runner holding the job announces its result, once', async (_how, staleEnds) => {
    const fetcher = new HeldFetcher();
    const lines: string[] = [];
    const logger = createLogger('verification-test', 'info', { write: (line: string) => void lines.push(line) });
    const newService = () => new VerificationService({ store, fetcher, scorer: new InlineFuzzballScorer(), logger, maxAttempts: 3, retryBaseMs: 60_000 });
    const newRunner = (service: VerificationService) => new VerificationRunner(store, service, 1, logger, () => undefined, LEASE_MS);
    const announced = async () => (await store.outbox().pending(100)).map((e) => events.CardVerified.decode(e.payload));

    const card = { id: randomUUID(), authorId: randomUUID(), content: CONTENT, tags: [], link: 'https://example.org/tides', private: false, collectionIds: [] };
    expect(await newService().onCardEvent({ eventId: randomUUID(), kind: { $case: 'created', value: { card } } })).toBe('enqueued');

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
      const warnings = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 40);
      expect(warnings).toEqual([expect.objectContaining({ cardId: card.id, msg: expect.stringMatching(/stale/) })]);
    } finally {
      stalledService.stop();
      fetcher.answerAll({ ok: false, failure: 'test over', transient: false });
      await Promise.all([stalled.stop(), holder.stop()]);
    }
  });
});
