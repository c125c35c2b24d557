import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '@cards/platform';
import { events } from '@cards/proto';
import { SqliteVerificationStore } from '../src/verification/adapters/sqlite/sqlite-verification-store';
import { InlineFuzzballScorer } from '../src/verification/adapters/fuzzball/fuzzball-scorer';
import { VerificationService } from '../src/verification/application/verification-service';
import type { PageFetchResult } from '../src/verification/domain/model';
import type { PageFetcher } from '../src/verification/domain/ports';
import { VerificationRunner } from '../src/verification/worker';
import { testTempDir } from '../../../test/support/cleanup';

/**
 * Every fetch waits until the test answers it, so a runner can be held mid-fetch for as long as the test likes (a
 * page that never answers, a stalled or dying process). `fetches` counts every fetch asked for.
 */
export class HeldFetcher implements PageFetcher {
  private readonly waiting: ((result: PageFetchResult) => void)[] = [];
  /** The link of every fetch asked for, in order. */
  readonly links: string[] = [];
  get fetches(): number {
    return this.waiting.length;
  }
  fetchPage(link: string): Promise<PageFetchResult> {
    this.links.push(link);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
  answer(fetch: number, result: PageFetchResult): void {
    this.waiting[fetch]!(result);
  }
  answerAll(result: PageFetchResult): void {
    for (const resolve of this.waiting) resolve(result);
  }
}

export async function until(what: string, condition: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A SQLite verification store of its own for each test of the calling describe block, removed afterwards. */
export function storePerTest(): () => SqliteVerificationStore {
  let dir: string;
  let store: SqliteVerificationStore;
  beforeEach(() => {
    dir = testTempDir('verification-runner-');
    store = new SqliteVerificationStore(join(dir, 'verification.db'));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return () => store;
}

/**
 * Services and runners over one store and fetcher, as processes started one after another would have them, with the
 * log lines they wrote and the CardVerified events waiting in the store's outbox.
 */
export function runnerKit(store: SqliteVerificationStore, fetcher: PageFetcher, settings: { maxAttempts: number; retryBaseMs: number; leaseMs: number; clock?: () => Date }) {
  const lines: string[] = [];
  const logger = createLogger('verification-test', 'info', { write: (line: string) => void lines.push(line) });
  const newService = () => new VerificationService({ store, fetcher, scorer: new InlineFuzzballScorer(), logger, maxAttempts: settings.maxAttempts, retryBaseMs: settings.retryBaseMs, clock: settings.clock });
  return {
    newService,
    newRunner: (service: VerificationService, slots: { concurrency: number; maxPerAuthor?: number } = { concurrency: 1 }) =>
      new VerificationRunner(store, service, slots.concurrency, logger, () => undefined, settings.leaseMs, slots.maxPerAuthor),
    announced: async () => (await store.outbox().pending(100)).map((e) => events.CardVerified.decode(e.payload)),
    logged: (level: number) => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.level === level),
    /** Enqueues a check of a new card with `content` and `link` (by a new author unless one is given). */
    async enqueue(content: string, link: string, authorId: string = randomUUID()) {
      const card = { id: randomUUID(), authorId, content, tags: [], link, private: false, collectionIds: [] };
      expect(await newService().onCardEvent({ eventId: randomUUID(), kind: { $case: 'created', value: { card } } })).toBe('enqueued');
      return card;
    },
  };
}
