import type { PageFetchResult } from '../src/verification/domain/model';
import { HeldFetcher, runnerKit, storePerTest, until } from './verification-runner-support';

const CONTENT = 'the moon pulls the tides of the sea twice a day';
const page: PageFetchResult = { ok: true, html: `<p>${CONTENT}</p>`, finalUrl: 'https://example.org/tides' };
const timedOut: PageFetchResult = { ok: false, failure: 'the page did not answer within 10000 ms', transient: true };
const slowLink = (i: number) => `https://slow.example/${i}`;
const FAST = 'https://fast.example/y';

/**
 * One author (X) sends many cards whose pages are slow: every fetch is held until the test answers it, so "slow" is
 * as slow as the test wants and no timer decides anything. Another author's (Y) card must not wait behind all of them.
 */
describe('verification shares its slots fairly across authors', () => {
  const currentStore = storePerTest();
  const fetcher = () => new HeldFetcher();

  async function setUp(held: HeldFetcher, slots: { concurrency: number; maxPerAuthor?: number }) {
    // A clock that moves on a millisecond per reading (in the past, so everything is due at once): what is enqueued or put
    // back later is later, even within one real millisecond.
    let now = Date.now() - 60_000;
    const kit = runnerKit(currentStore(), held, { maxAttempts: 3, retryBaseMs: 0, leaseMs: 60_000, clock: () => new Date(now++) });
    const service = kit.newService();
    const runner = kit.newRunner(service, slots);
    const stop = async () => {
      service.stop();
      held.answerAll({ ok: false, failure: 'test over', transient: false });
      await runner.stop();
    };
    return { ...kit, runner, stop };
  }

  it("one author's many slow pages leave slots for another author's card at once (VERIFY_MAX_PER_AUTHOR, default half)", async () => {
    const held = fetcher();
    const { runner, enqueue, stop } = await setUp(held, { concurrency: 4 });
    try {
      for (let i = 0; i < 16; i++) await enqueue(CONTENT, slowLink(i), 'author-x');
      runner.start();
      await until('X to take its share', () => held.fetches >= 2);
      await enqueue(CONTENT, FAST, 'author-y');
      runner.kick();
      // None of X's pages has answered (nor ever will here): Y's page fetched at all is Y waiting for no slot. The usual
      // 10 s to see it, not 3 s, which a test worker starved of CPU on a loaded machine can spend before the runner's turn.
      await until("Y's page to be fetched", () => held.links.includes(FAST));
      expect(held.links).toEqual([slowLink(0), slowLink(1), FAST]);
    } finally {
      await stop();
    }
  });

  it("with every slot X's, Y's card takes the first slot that frees, not X's next card (fair claiming, no cap)", async () => {
    const held = fetcher();
    const { runner, enqueue, announced, stop } = await setUp(held, { concurrency: 4, maxPerAuthor: 4 });
    try {
      for (let i = 0; i < 16; i++) await enqueue(CONTENT, slowLink(i), 'author-x');
      runner.start();
      await until('X to fill every slot', () => held.fetches === 4);
      const y = await enqueue(CONTENT, FAST, 'author-y');
      runner.kick();
      held.answer(0, page); // one slot's time
      await until('the freed slot to be taken', () => held.fetches === 5);
      expect(held.links[4]).toBe(FAST);
      held.answer(4, page);
      await until("Y's result", async () => (await announced()).some((e) => e.cardId === y.id));
      // X's cards all still run, each announced once.
      for (let i = 1; i < 17; i++) {
        if (i === 4) continue; // Y's, answered
        await until(`fetch ${i}`, () => held.fetches > i);
        held.answer(i, page);
      }
      await until('every result', async () => (await announced()).length === 17);
      expect(new Set((await announced()).map((e) => e.cardId)).size).toBe(17);
    } finally {
      await stop();
    }
  });

  it("a page that timed out tries again after the other authors' waiting cards, not in the slot it held", async () => {
    const held = fetcher();
    const { runner, enqueue, stop } = await setUp(held, { concurrency: 1 });
    try {
      await enqueue(CONTENT, slowLink(0), 'author-x');
      runner.start();
      await until("X's first try", () => held.fetches === 1);
      await enqueue(CONTENT, FAST, 'author-y');
      held.answer(0, timedOut);
      await until('the next fetch', () => held.fetches === 2);
      held.answer(1, page);
      await until("X's second try", () => held.fetches === 3);
      expect(held.links).toEqual([slowLink(0), FAST, slowLink(0)]);
    } finally {
      await stop();
    }
  });
});
