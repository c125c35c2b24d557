import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Topics, createLogger, openSharedSqliteEventLog, serviceMetrics, type EventBus, type Subscription } from '@cards/platform';
import { events } from '@cards/proto';
import { verificationConfigSchema } from '../src/verification/config';
import { startVerificationWorker, type VerificationWorker } from '../src/verification';
import { testTempDir } from '../../../test/support/cleanup';

const ARTICLE = `Coral reefs cover less than one percent of the ocean floor, yet they support about a quarter of all
marine species. Reef-building corals live in partnership with microscopic algae that give them food and colour.
When water temperatures stay too high for several weeks, corals expel the algae and turn white, an event called
bleaching. Repeated bleaching leaves reefs weaker, slower to recover and more exposed to disease and storms.`;
const CARD_QUOTING = `When water temperatures stay too high for several weeks, corals expel the algae and turn white, an event
called bleaching. Coral reefs cover less than one percent of the ocean floor, yet they support about a quarter of all marine species.`;
// A page is usually longer than a card; token_set_ratio of unrelated texts of equal length sits near 50.
const UNRELATED_PAGE = `The municipal budget for next year raises spending on road repairs, public libraries and school
buses, while property taxes stay flat. Council members debated parking fees for three hours before the vote.
The finance director warned that pension obligations will grow faster than revenue unless the city renegotiates
its contracts with the transit authority. Residents who spoke during the hearing asked for longer opening hours
at the central library, safer crossings near the elementary schools and a pilot program for electric buses.
The mayor promised a detailed report on the bridge inspection backlog before the summer recess.`;

const page = (body: string) => `<!doctype html><html><head><title>Article</title><script>var tracking = "coral coral coral";</script></head><body><nav>Home | About</nav><article><p>${body}</p></article></body></html>`;

let pages: Server;
let pagesPort: number;
let closedPort: number;
let victim: Server;
let victimPort: number;
let victimHits = 0;
/** Requests to /held wait here until the test answers them. */
const heldAnswers: (() => void)[] = [];
let slowRequests = 0;
let slowAnswers = false;
let dataDir: string;
let bus: EventBus;
let worker: VerificationWorker;
let results: Subscription;
const verified: events.CardVerified[] = [];

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  pages = createServer((req, res) => {
    if (req.url === '/coral') return res.writeHead(200, { 'content-type': 'text/html' }).end(page(ARTICLE));
    if (req.url === '/budget') return res.writeHead(200, { 'content-type': 'text/html' }).end(page(UNRELATED_PAGE));
    if (req.url === '/slow') {
      slowRequests++;
      if (slowAnswers) return res.writeHead(200, { 'content-type': 'text/html' }).end(page(ARTICLE));
      return; // hangs until the server closes
    }
    if (req.url === '/held') {
      heldAnswers.push(() => res.writeHead(200, { 'content-type': 'text/html' }).end(page(ARTICLE)));
      return;
    }
    if (req.url === '/to-victim') return res.writeHead(302, { location: `http://127.0.0.1:${victimPort}/` }).end();
    res.writeHead(404).end();
  });
  pagesPort = await listen(pages, '127.0.0.1');
  victim = createServer((_req, res) => {
    victimHits++;
    res.writeHead(200, { 'content-type': 'text/html' }).end(page(ARTICLE));
  });
  victimPort = await listen(victim, '::');
  const closed = createServer();
  closedPort = await listen(closed, '127.0.0.1');
  await new Promise((r) => closed.close(r));

  dataDir = testTempDir('verification-worker-');
  const logger = createLogger('verification-test', 'silent');
  bus = openSharedSqliteEventLog({ path: join(dataDir, 'events', 'events.db'), logger });
  const config = verificationConfigSchema.parse({
    VERIFY_ALLOW_HOSTS: `127.0.0.1:${pagesPort},127.0.0.1:${closedPort}`,
    VERIFY_MAX_ATTEMPTS: '2',
    VERIFY_RETRY_BASE_MS: '50',
    VERIFY_TIMEOUT_MS: '3000',
  });
  worker = await startVerificationWorker({ config, dataDir, bus, logger });
  results = await bus.subscribe({
    group: 'test-results',
    topics: [Topics.verification],
    handler: async (e) => {
      verified.push(events.CardVerified.decode(e.payload));
    },
  });
});

afterAll(async () => {
  await results?.close();
  await worker?.stop();
  await bus?.close();
  pages.closeAllConnections();
  await new Promise((r) => pages.close(r));
  await new Promise((r) => victim.close(r));
  rmSync(dataDir, { recursive: true, force: true });
});

function snapshot(cardId: string, link: string, content: string): events.CardSnapshot {
  return { id: cardId, authorId: randomUUID(), content, tags: [], link, private: false, collectionIds: [], createdAt: new Date(), updatedAt: new Date() };
}

async function publishCard(event: events.CardEvent): Promise<void> {
  const key = event.kind?.$case === 'deleted' ? event.kind.value.cardId : event.kind!.value.card!.id;
  await bus.publish([{ topic: Topics.card, key, payload: events.CardEvent.encode(event).finish() }]);
}

const created = (card: events.CardSnapshot): events.CardEvent => ({ eventId: randomUUID(), occurredAt: new Date(), kind: { $case: 'created', value: { card } } });

async function resultsFor(cardId: string, count = 1, timeoutMs = 10_000): Promise<events.CardVerified[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = verified.filter((v) => v.cardId === cardId);
    if (found.length >= count || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Publishes a marker card and waits for its result: every event published before it has been handled by then. */
async function drain(): Promise<void> {
  const marker = randomUUID();
  await publishCard(created(snapshot(marker, `http://127.0.0.1:${pagesPort}/budget`, 'marker')));
  expect(await resultsFor(marker)).toHaveLength(1);
}

describe('verification worker (card events in, CardVerified out)', () => {
  it('scores a card quoting its page >= 70 and announces it for the author with a verification id', async () => {
    const card = snapshot(randomUUID(), `http://127.0.0.1:${pagesPort}/coral`, CARD_QUOTING);
    await publishCard(created(card));
    const [result] = await resultsFor(card.id);
    expect(result).toMatchObject({ cardId: card.id, authorId: card.authorId, link: card.link, failure: '', verificationId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(result!.score).toBeGreaterThanOrEqual(70);
    expect(result!.eventId).not.toBe(result!.verificationId);
  });

  it('scores an unrelated page < 50', async () => {
    const card = snapshot(randomUUID(), `http://127.0.0.1:${pagesPort}/budget`, CARD_QUOTING);
    await publishCard(created(card));
    const [result] = await resultsFor(card.id);
    expect(result!.score).toBeLessThan(50);
    expect(result!.failure).toBe('');
  });

  it('scores an unreachable page 0 after retrying, and says why', async () => {
    const card = snapshot(randomUUID(), `http://127.0.0.1:${closedPort}/gone`, CARD_QUOTING);
    await publishCard(created(card));
    const [result] = await resultsFor(card.id);
    expect(result).toMatchObject({ score: 0, failure: 'fetch failed: ECONNREFUSED' });
  });

  it('refuses loopback targets (direct, by name, through a redirect) with score 0 and never reaches them', async () => {
    const links = [`http://127.0.0.1:${victimPort}/`, `http://[::1]:${victimPort}/`, `http://localhost:${victimPort}/`, `http://127.0.0.1:${pagesPort}/to-victim`];
    const cards = links.map((link) => snapshot(randomUUID(), link, CARD_QUOTING));
    for (const card of cards) await publishCard(created(card));
    for (const card of cards) {
      const [result] = await resultsFor(card.id);
      expect(result).toMatchObject({ score: 0, failure: expect.stringMatching(/^refused/) });
    }
    expect(victimHits).toBe(0);
  });

  it('a replayed card event produces no second verification', async () => {
    const card = snapshot(randomUUID(), `http://127.0.0.1:${pagesPort}/coral`, CARD_QUOTING);
    const event = created(card);
    await publishCard(event);
    await publishCard(event);
    await resultsFor(card.id);
    await drain();
    expect(await resultsFor(card.id, 2, 0)).toHaveLength(1);
  });

  it('re-verifies when the link or content changes, not for other updates, and skips cards without a link', async () => {
    const card = snapshot(randomUUID(), `http://127.0.0.1:${pagesPort}/budget`, CARD_QUOTING);
    await publishCard(created(card));
    expect((await resultsFor(card.id))[0]!.score).toBeLessThan(50);
    const moved = { ...card, link: `http://127.0.0.1:${pagesPort}/coral` };
    await publishCard({ eventId: randomUUID(), kind: { $case: 'updated', value: { card: moved, contentChanged: false, linkChanged: true, privacyChanged: false } } });
    const both = await resultsFor(card.id, 2);
    expect(both).toHaveLength(2);
    expect(both[1]!.score).toBeGreaterThanOrEqual(70);
    expect(both[1]!.verificationId).not.toBe(both[0]!.verificationId);

    await publishCard({ eventId: randomUUID(), kind: { $case: 'updated', value: { card: moved, contentChanged: false, linkChanged: false, privacyChanged: true } } });
    const linkless = snapshot(randomUUID(), '', CARD_QUOTING);
    await publishCard(created(linkless));
    await drain();
    expect(await resultsFor(card.id, 3, 0)).toHaveLength(2);
    expect(await resultsFor(linkless.id, 1, 0)).toHaveLength(0);
  });

  it('/metrics: the jobs running in the queue, and each job that ends counted as done, failed or cancelled', async () => {
    const sample = async (name: string, label: string, value: string) =>
      (await serviceMetrics.getSingleMetric(name)!.get()).values.find((v) => v.labels[label] === value)?.value ?? 0;
    const ended = (outcome: string) => sample('card_library_verifications_total', 'outcome', outcome);
    const jobs = (state: string) => sample('card_library_verification_jobs', 'state', state);
    await drain();
    const before = { done: await ended('done'), failed: await ended('failed'), cancelled: await ended('cancelled') };

    const held = snapshot(randomUUID(), `http://127.0.0.1:${pagesPort}/held`, CARD_QUOTING);
    await publishCard(created(held));
    for (let i = 0; i < 400 && heldAnswers.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(heldAnswers).toHaveLength(1);
    expect(await jobs('running')).toBe(1);
    // Its link removed while it runs: cancelled (its result, once the page answers, is dropped and not counted).
    await publishCard({ eventId: randomUUID(), kind: { $case: 'updated', value: { card: { ...held, link: '' }, contentChanged: false, linkChanged: true, privacyChanged: false } } });
    await drain();
    expect(await ended('cancelled')).toBe(before.cancelled + 1);
    heldAnswers.shift()!();

    const scored = snapshot(randomUUID(), `http://127.0.0.1:${pagesPort}/budget`, CARD_QUOTING);
    const unusable = snapshot(randomUUID(), `http://127.0.0.1:${closedPort}/gone`, CARD_QUOTING);
    await publishCard(created(scored));
    await publishCard(created(unusable));
    expect(await resultsFor(scored.id)).toHaveLength(1);
    expect(await resultsFor(unusable.id)).toHaveLength(1);
    // The marker of drain() and `scored`; `unusable`; `held`'s link removal.
    expect(await ended('done')).toBe(before.done + 2);
    expect(await ended('failed')).toBe(before.failed + 1);
    expect(await ended('cancelled')).toBe(before.cancelled + 1);
    let running = -1;
    for (let i = 0; i < 400 && (running = await jobs('running')) !== 0; i++) await new Promise((r) => setTimeout(r, 25));
    expect(running).toBe(0);
    expect(await jobs('pending')).toBe(0);
  });
});

describe('verification worker shutdown', () => {
  it('stops promptly with a page still loading, announces nothing for it, and verifies that card after the restart', async () => {
    const dir = testTempDir('verification-restart-');
    const logger = createLogger('verification-test', 'silent');
    const log = openSharedSqliteEventLog({ path: join(dir, 'events', 'events.db'), logger });
    const config = verificationConfigSchema.parse({ VERIFY_ALLOW_HOSTS: `127.0.0.1:${pagesPort}`, VERIFY_TIMEOUT_MS: '10000' });
    const seen: events.CardVerified[] = [];
    const sub = await log.subscribe({ group: 'restart-results', topics: [Topics.verification], handler: async (e) => void seen.push(events.CardVerified.decode(e.payload)) });
    try {
      const first = await startVerificationWorker({ config, dataDir: dir, bus: log, logger });
      const card = snapshot(randomUUID(), `http://127.0.0.1:${pagesPort}/slow`, CARD_QUOTING);
      const before = slowRequests;
      await log.publish([{ topic: Topics.card, key: card.id, payload: events.CardEvent.encode(created(card)).finish() }]);
      while (slowRequests === before) await new Promise((r) => setTimeout(r, 20));
      const started = Date.now();
      await first.stop();
      // Without waiting for the page's 10 s fetch timeout: a bound well below it (it was 2 s, which leaves no room for a
      // test worker starved of CPU for a second or two on a loaded machine).
      expect(Date.now() - started).toBeLessThan(7_000);
      await new Promise((r) => setTimeout(r, 200));
      expect(seen).toEqual([]);

      slowAnswers = true;
      const second = await startVerificationWorker({ config, dataDir: dir, bus: log, logger });
      const deadline = Date.now() + 10_000;
      while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      await second.stop();
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ cardId: card.id, failure: '' });
      expect(seen[0]!.score).toBeGreaterThanOrEqual(70);
    } finally {
      slowAnswers = false;
      await sub.close();
      await log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
