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

/** A page that never answers: every run of its job stays mid-fetch, where the process is taken down. */
class NeverAnsweringFetcher implements PageFetcher {
  fetches = 0;
  private readonly waiting: ((result: PageFetchResult) => void)[] = [];
  fetchPage(): Promise<PageFetchResult> {
    this.fetches++;
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  answerAll(result: PageFetchResult): void {
    for (const resolve of this.waiting.splice(0)) resolve(result);
  }
}

const MAX_ATTEMPTS = 3;
const LEASE_MS = 60_000;

async function until(what: string, condition: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('a verification whose runs keep being cut off', () => {
  let dir: string;
  let store: SqliteVerificationStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'verification-cut-off-'));
    store = new SqliteVerificationStore(join(dir, 'verification.db'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it(`ends after ${MAX_ATTEMPTS} cut-off runs as failed, announced once, without fetching again`, async () => {
    const fetcher = new NeverAnsweringFetcher();
    const lines: string[] = [];
    const logger = createLogger('verification-test', 'info', { write: (line: string) => void lines.push(line) });
    const newService = () => new VerificationService({ store, fetcher, scorer: new InlineFuzzballScorer(), logger, maxAttempts: MAX_ATTEMPTS, retryBaseMs: 1000 });
    const newRunner = (service: VerificationService) => new VerificationRunner(store, service, 1, logger, () => undefined, LEASE_MS);
    const announced = async () => (await store.outbox().pending(100)).map((e) => events.CardVerified.decode(e.payload));

    const card = { id: randomUUID(), authorId: randomUUID(), content: 'the moon pulls the tides', tags: [], link: 'https://example.org/crashes-the-verifier', private: false, collectionIds: [] };
    expect(await newService().onCardEvent({ eventId: randomUUID(), kind: { $case: 'created', value: { card } } })).toBe('enqueued');

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
      const errors = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === 50);
      expect(errors).toEqual([expect.objectContaining({ cardId: card.id, link: card.link })]);

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
