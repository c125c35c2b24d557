import { createHash, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '@cards/platform';
import { events } from '@cards/proto';
import { SqliteVerificationStore } from '../src/verification/adapters/sqlite/sqlite-verification-store';
import { InlineFuzzballScorer } from '../src/verification/adapters/fuzzball/fuzzball-scorer';
import { VerificationService } from '../src/verification/application/verification-service';
import type { PageFetchResult } from '../src/verification/domain/model';
import type { PageFetcher, PageScorer } from '../src/verification/domain/ports';
import { testTempDir } from '../../../test/support/cleanup';

/** A fetcher answering from a script of results, recording the links asked for. */
class ScriptedFetcher implements PageFetcher {
  readonly asked: string[] = [];
  constructor(private readonly script: PageFetchResult[]) {}
  async fetchPage(link: string): Promise<PageFetchResult> {
    this.asked.push(link);
    return this.script.shift() ?? { ok: false, failure: 'script exhausted', transient: false };
  }
}

const html = (text: string): PageFetchResult => ({ ok: true, html: `<p>${text}</p>`, finalUrl: 'https://example.org/' });
const card = (link: string, content = 'the moon pulls the tides of the sea'): events.CardSnapshot => ({
  id: randomUUID(),
  authorId: randomUUID(),
  content,
  tags: [],
  link,
  private: false,
  collectionIds: [],
});
const created = (c: events.CardSnapshot): events.CardEvent => ({ eventId: randomUUID(), kind: { $case: 'created', value: { card: c } } });
const updated = (c: events.CardSnapshot, changes: { contentChanged?: boolean; linkChanged?: boolean; privacyChanged?: boolean }): events.CardEvent => ({
  eventId: randomUUID(),
  kind: { $case: 'updated', value: { card: c, contentChanged: false, linkChanged: false, privacyChanged: false, ...changes } },
});

describe('VerificationService', () => {
  let dir: string;
  let store: SqliteVerificationStore;
  let now: number;
  const later = () => new Date(now + 3_600_000);

  beforeEach(() => {
    dir = testTempDir('verification-service-');
    store = new SqliteVerificationStore(join(dir, 'v.db'));
    now = Date.parse('2026-01-01T00:00:00Z');
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function serviceWith(fetcher: PageFetcher, scorer: PageScorer = new InlineFuzzballScorer()) {
    return new VerificationService({ store, fetcher, scorer, logger: createLogger('test', 'silent'), maxAttempts: 3, retryBaseMs: 1000, clock: () => new Date(now) });
  }

  const claimOne = async () => (await store.claim(1, later(), new Date(later().getTime() + 60_000)))[0];
  const announced = async () => (await store.outbox().pending(100)).map((e) => events.CardVerified.decode(e.payload));

  it('asks for a verification on creation with a link and on link or content changes only', async () => {
    const service = serviceWith(new ScriptedFetcher([]));
    const c = card('https://example.org/a');
    expect(await service.onCardEvent(created(c))).toBe('enqueued');
    expect(await service.onCardEvent(updated(c, { privacyChanged: true }))).toBe('ignored');
    expect(await service.onCardEvent(updated(c, { linkChanged: true }))).toBe('enqueued');
    expect(await service.onCardEvent(updated(c, { contentChanged: true }))).toBe('enqueued');
    expect(await service.onCardEvent(created(card('')))).toBe('ignored');
    expect(await service.onCardEvent(created(card('   ')))).toBe('ignored');
    expect(await service.onCardEvent({ eventId: randomUUID() })).toBe('ignored');
  });

  it('a replayed event is recognised; a deleted card or a removed link cancels what waits', async () => {
    const service = serviceWith(new ScriptedFetcher([]));
    const c = card('https://example.org/a');
    const event = created(c);
    expect(await service.onCardEvent(event)).toBe('enqueued');
    expect(await service.onCardEvent(event)).toBe('replayed');
    expect(await service.onCardEvent({ eventId: randomUUID(), kind: { $case: 'deleted', value: { cardId: c.id, authorId: c.authorId } } })).toBe('cancelled');
    expect(await claimOne()).toBeUndefined();
    // Nothing of a deleted card's verifications is kept, its text least of all.
    expect(await store.latestLink(c.id)).toBeNull();

    const d = card('https://example.org/b');
    await service.onCardEvent(created(d));
    expect(await service.onCardEvent(updated({ ...d, link: '' }, { linkChanged: true }))).toBe('cancelled');
    expect(await claimOne()).toBeUndefined();
  });

  it('scores the page text and announces the result with the job id as verification id, naming the content compared', async () => {
    const fetcher = new ScriptedFetcher([html('Long ago the moon pulls the tides of the sea, sailors said.')]);
    const service = serviceWith(fetcher);
    const c = card('https://example.org/a');
    await service.onCardEvent(created(c));
    const job = (await claimOne())!;
    expect(await service.run(job)).toBe('done');
    expect(fetcher.asked).toEqual(['https://example.org/a']);
    const [verified] = await announced();
    expect(verified).toMatchObject({ verificationId: job.id, cardId: c.id, authorId: c.authorId, link: c.link, score: 100, failure: '' });
    // Cards keeps it only while the card holds that content.
    expect(verified!.contentSha256).toBe(createHash('sha256').update(c.content).digest('hex'));
    expect(await store.find(job.id)).toMatchObject({ status: 'done', score: 100 });
  });

  it('a result for a link the card changed while it was checked is recorded but not announced; the new link\'s is', async () => {
    const fetcher = new ScriptedFetcher([html('the moon pulls the tides of the sea'), html('nothing alike'), html('the moon pulls the tides of the sea')]);
    const service = serviceWith(fetcher);
    const c = card('https://example.org/old');
    await service.onCardEvent(created(c));
    const old = (await claimOne())!;
    const moved = { ...c, link: 'https://example.org/new' };
    expect(await service.onCardEvent(updated(moved, { linkChanged: true }))).toBe('enqueued');
    expect(await service.run(old)).toBe('done');
    expect(await store.find(old.id)).toMatchObject({ status: 'done', score: 100 });
    expect(await announced()).toEqual([]); // cards drops it, so the author is not told of it either
    const current = (await claimOne())!;
    expect(await service.run(current)).toBe('done');
    expect(await announced()).toEqual([expect.objectContaining({ verificationId: current.id, link: 'https://example.org/new' })]);
    // Only the content changed while the page was checked: the link is the card's, so that result is announced too.
    await service.onCardEvent(updated({ ...moved, content: 'the sea' }, { contentChanged: true }));
    const same = (await claimOne())!;
    await service.onCardEvent(updated({ ...moved, content: 'the moon pulls the tides of the sea' }, { contentChanged: true }));
    expect(await service.run(same)).toBe('done');
    expect(await announced()).toHaveLength(2);
  });

  it('retries transient failures with doubling delays, then scores 0 with the reason', async () => {
    const timeout: PageFetchResult = { ok: false, failure: 'timed out', transient: true };
    const service = serviceWith(new ScriptedFetcher([timeout, timeout, timeout]));
    await service.onCardEvent(created(card('https://example.org/slow')));
    const first = (await claimOne())!;
    expect(await service.run(first)).toBe('retry');
    expect((await store.find(first.id))!.dueAt.getTime() - now).toBe(1000);
    expect(await store.claim(1, new Date(now + 999), new Date(now + 60_000))).toEqual([]);
    const second = (await store.claim(1, new Date(now + 1000), new Date(now + 60_000)))[0]!;
    expect(await service.run(second)).toBe('retry');
    expect((await store.find(first.id))!.dueAt.getTime() - now).toBe(2000);
    const third = (await store.claim(1, new Date(now + 2000), new Date(now + 60_000)))[0]!;
    expect(await service.run(third)).toBe('done');
    expect(await announced()).toEqual([expect.objectContaining({ score: 0, failure: 'timed out' })]);
    expect(await store.find(first.id)).toMatchObject({ attempts: 3, score: 0 });
  });

  it("logs a link's host only: a private card's path and query string stay out of the log", async () => {
    const lines: Array<{ msg: string; linkHost?: string }> = [];
    const timeout: PageFetchResult = { ok: false, failure: 'timed out', transient: true };
    const service = new VerificationService({ store, fetcher: new ScriptedFetcher([timeout, timeout]), scorer: new InlineFuzzballScorer(), logger: createLogger('test', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) }), maxAttempts: 3, retryBaseMs: 1000, clock: () => new Date(now) });
    await service.onCardEvent(created(card('https://Example.org:8443/medical/jane-doe?token=SECRET-TOKEN')));
    expect(await service.run((await claimOne())!)).toBe('retry');
    expect(await service.run((await store.claim(1, new Date(now + 1000), later()))[0]!)).toBe('retry');
    // The third run dies mid-fetch: the next one gives up without fetching, and says so.
    await store.claim(1, new Date(now + 2000), later());
    await store.requeueExpired(new Date(later().getTime() + 1));
    expect(await service.run((await claimOne())!)).toBe('done');
    expect(lines.filter((line) => line.linkHost !== undefined).map(({ msg, linkHost }) => ({ msg, linkHost }))).toEqual([
      { msg: 'verification fetch failed; will retry', linkHost: 'example.org:8443' },
      { msg: 'verification fetch failed; will retry', linkHost: 'example.org:8443' },
      { msg: 'verification given up: its runs were cut off before finishing', linkHost: 'example.org:8443' },
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/jane-doe|SECRET-TOKEN|medical/);
  });

  it('runs cut off by an expired lease use up the same attempts as transient failures: no fetch beyond the last', async () => {
    const timeout: PageFetchResult = { ok: false, failure: 'timed out', transient: true };
    const fetcher = new ScriptedFetcher([timeout, timeout]);
    const service = serviceWith(fetcher);
    await service.onCardEvent(created(card('https://example.org/flaky')));
    const first = (await claimOne())!;
    expect(await service.run(first)).toBe('retry');
    expect(await service.run((await store.claim(1, new Date(now + 1000), later()))[0]!)).toBe('retry');
    // The third run's process dies mid-fetch and its lease runs out.
    await store.claim(1, new Date(now + 2000), later());
    expect(await store.requeueExpired(new Date(later().getTime() + 1))).toBe(1);
    expect(await service.run((await claimOne())!)).toBe('done');
    expect(fetcher.asked).toHaveLength(2); // and the dead process's third
    expect(await announced()).toEqual([expect.objectContaining({ score: 0, failure: expect.stringMatching(/stopped before it finished.*timed out/) })]);
    expect(await store.find(first.id)).toMatchObject({ status: 'done', attempts: 3 });
  });

  it('a final failure is not retried; a scoring failure scores 0 and says so', async () => {
    const service = serviceWith(new ScriptedFetcher([{ ok: false, failure: 'the page answered HTTP 404', transient: false }]));
    await service.onCardEvent(created(card('https://example.org/missing')));
    expect(await service.run((await claimOne())!)).toBe('done');
    expect(await announced()).toEqual([expect.objectContaining({ score: 0, failure: 'the page answered HTTP 404' })]);

    const broken: PageScorer = { score: async () => Promise.reject(new Error('scoring took longer than 60000 ms')), close: async () => undefined };
    const scoring = serviceWith(new ScriptedFetcher([html('a page')]), broken);
    await scoring.onCardEvent(created(card('https://example.org/huge')));
    expect(await scoring.run((await claimOne())!)).toBe('done');
    expect((await announced())[1]).toMatchObject({ score: 0, failure: 'could not score the page: scoring took longer than 60000 ms' });
  });

  it('after stop(), a job in flight records and announces nothing', async () => {
    let release!: (r: PageFetchResult) => void;
    const fetcher: PageFetcher = { fetchPage: () => new Promise((r) => (release = r)) };
    const service = serviceWith(fetcher);
    await service.onCardEvent(created(card('https://example.org/a')));
    const job = (await claimOne())!;
    const running = service.run(job);
    await new Promise((r) => setImmediate(r));
    service.stop();
    release(html('the moon pulls the tides of the sea'));
    expect(await running).toBe('interrupted');
    expect(await announced()).toEqual([]);
    expect((await store.find(job.id))!.status).toBe('running');
  });
});
