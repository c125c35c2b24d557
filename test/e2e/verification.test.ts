import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { uniqueText } from './cards-support';

/**
 * Content verification end to end: cards are created through the gateway with links to pages served
 * by this test on 127.0.0.1; the system may fetch only that server (VERIFY_ALLOW_HOSTS). A second,
 * "victim" server on loopback proves the refused links never reach it. Nothing leaves this machine.
 */

const ARTICLE_FIRST = `Coral reefs cover less than one percent of the ocean floor, yet they support about a quarter of all
marine species known to science. Reef-building corals live in partnership with microscopic algae that live inside their
tissue, give them most of their food and lend them their bright colours. When the water stays too warm for several weeks,
the corals expel the algae and turn white, an event that scientists call bleaching. A bleached coral is not dead, but it
is starving, and it will die if the water does not cool down soon enough.`;
const ARTICLE_SECOND = `Repeated bleaching leaves reefs weaker, slower to recover and more exposed to disease and storms. Fishing
communities along tropical coasts depend on healthy reefs for food, income and protection from waves, because a living
reef breaks the force of the sea before it reaches the shore. Researchers now breed heat-tolerant corals in nurseries
and plant them on damaged reefs, hoping that the new colonies will survive the marine heatwaves that are expected to
become more frequent in the coming decades.`;
const ARTICLE = `${ARTICLE_FIRST}\n${ARTICLE_SECOND}`;
// A page is usually much longer than a card; token_set_ratio of unrelated texts of equal length sits near 50.
const UNRELATED = `The municipal budget for next year raises spending on road repairs, public libraries and school buses,
while property taxes stay flat. Council members debated parking fees for three hours before the final vote. The finance
director warned that pension obligations will grow faster than revenue unless the city renegotiates its contracts with
the transit authority. Residents who spoke during the hearing asked for longer opening hours at the central library,
safer crossings near the elementary schools and a pilot program for electric buses. The mayor promised a detailed report
on the bridge inspection backlog before the summer recess, and the council agreed to revisit the sidewalk plan in
autumn. Local business owners asked the council to simplify permits for outdoor seating and market stalls downtown.`;

// Accented prose: read in the wrong encoding, every accented word stops matching.
const BRASSERIE = `Le café crème de la brasserie près de la gare était célèbre dans tout le quartier. Les habitués arrivaient dès
l'aube, commandaient une tartine beurrée et lisaient les nouvelles régionales pendant que le garçon essuyait le comptoir.
Élodie, la propriétaire, préparait elle-même les pâtisseries: des éclairs au chocolat, des religieuses à la crème
pâtissière et des crêpes flambées le dimanche. Pendant l'été, la terrasse ombragée débordait de touristes épuisés qui
découvraient la région à vélo. L'hiver, on y servait du vin chaud épicé et une soupe à l'oignon gratinée, très appréciée
des employés de la mairie qui déjeunaient là chaque midi.`;
const latin1Page = (head: string) => Buffer.from(`<!doctype html><html><head>${head}<title>Brasserie</title></head><body><article><p>${BRASSERIE}</p></article></body></html>`, 'latin1');

const page = (body: string) =>
  `<!doctype html><html><head><title>Reader</title><style>body{font:16px serif}</style><script>window.analytics = "coral reef tracker";</script></head>` +
  `<body><nav>Home | Science | Contact</nav><article>${body
    .split('\n')
    .map((p) => `<p>${p}</p>`)
    .join('')}</article><footer>&copy; 2026 Reader</footer></body></html>`;

let pages: Server;
let pagesPort: number;
let victim: Server;
let victimPort: number;
let closedPort: number;
const victimRequests: string[] = [];
let system: RunningSystem;
const mailbox = new Mailbox();
let alice: TestUser;
let bob: TestUser;

async function listen(server: Server, host: string): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  pages = createServer((req, res) => {
    if (req.url === '/coral') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(ARTICLE));
    // The same ISO-8859-1 page, its encoding named in the Content-Type header or only in a <meta> (as many sites do).
    if (req.url === '/brasserie-header') return res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' }).end(latin1Page(''));
    if (req.url === '/brasserie-meta') return res.writeHead(200, { 'content-type': 'text/html' }).end(latin1Page('<meta charset="iso-8859-1">'));
    // Compressed whether or not the client asked, as servers of pre-compressed static files do.
    if (req.url === '/coral-gzip') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-encoding': 'gzip' }).end(gzipSync(page(ARTICLE)));
    if (req.url === '/budget') return res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(UNRELATED));
    if (req.url === '/to-victim') return res.writeHead(302, { location: `http://127.0.0.1:${victimPort}/via-redirect` }).end();
    res.writeHead(404).end();
  });
  pagesPort = await listen(pages, '127.0.0.1');
  victim = createServer((req, res) => {
    victimRequests.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'text/html' }).end(page(ARTICLE));
  });
  victimPort = await listen(victim, '::'); // dual stack: reachable as 127.0.0.1, ::1 and localhost
  const closed = createServer();
  closedPort = await listen(closed, '127.0.0.1');
  await new Promise((r) => closed.close(r));

  await mailbox.start();
  system = await startSystem({
    env: {
      SMTP_URL: mailbox.url,
      VERIFY_ALLOW_HOSTS: `127.0.0.1:${pagesPort},127.0.0.1:${closedPort}`,
      VERIFY_ALLOW_PRIVATE: 'false',
      VERIFY_MAX_ATTEMPTS: '2',
      VERIFY_RETRY_BASE_MS: '100',
    },
  });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'verify-alice'), signUp(system.baseUrl, mailbox, 'verify-bob')]);
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
  pages?.closeAllConnections();
  await new Promise((r) => pages?.close(r));
  await new Promise((r) => victim?.close(r));
});

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A card text of more than 70 words that no other card has (so it is never stored as a duplicate). */
const unique = (text: string) => `${text} Reference ${randomUUID()}.`;

async function createCard(user: TestUser, text: string, link: string): Promise<string> {
  const res = await user.client.post('/api/card', { card_html: `<p>${text}</p>`, link, private: false });
  if (res.status !== 200) throw new Error(`card creation failed: ${res.status} ${res.text}`);
  return res.json.card_metadata.id as string;
}

async function notificationsOf(client: ApiClient): Promise<any[]> {
  const res = await client.get('/api/notifications');
  expect(res.status).toBe(200);
  expect(Array.isArray(res.json)).toBe(true);
  return res.json;
}

/** Polls until the card has `count` verification notifications (verification is asynchronous). */
async function verificationsFor(user: TestUser, cardId: string, count = 1, timeoutMs = 30_000): Promise<any[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = (await notificationsOf(user.client)).filter((n) => n.type === 'verification' && n.card_uuid === cardId);
    if (found.length >= count || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function verificationScoreOf(user: TestUser, cardId: string, expected: number, timeoutMs = 15_000): Promise<unknown> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await user.client.get(`/api/card/${cardId}`);
    if (res.json?.verification_score === expected || Date.now() > deadline) return res.json?.verification_score;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('content verification', () => {
  let quoting: string;
  let unrelated: string;
  let unreachable: string;

  beforeAll(async () => {
    quoting = await createCard(alice, unique(ARTICLE_FIRST), `http://127.0.0.1:${pagesPort}/coral`);
    unrelated = await createCard(alice, unique(ARTICLE_SECOND), `http://127.0.0.1:${pagesPort}/budget`);
    unreachable = await createCard(alice, unique(ARTICLE_FIRST.split(' ').reverse().join(' ')), `http://127.0.0.1:${closedPort}/gone`);
  });

  it('a card quoting its page scores >= 70; one notification for the author with the contract fields', async () => {
    const [notification, ...more] = await verificationsFor(alice, quoting);
    expect(more).toEqual([]);
    expect(notification).toEqual({
      type: 'verification',
      id: expect.stringMatching(UUID),
      user_uuid: alice.id,
      card_uuid: quoting,
      verification_uuid: expect.stringMatching(UUID),
      similarity_score: expect.any(Number),
      user_read: false,
      created_at: expect.stringMatching(TIMESTAMP),
      updated_at: expect.stringMatching(TIMESTAMP),
    });
    expect(Number.isInteger(notification.similarity_score)).toBe(true);
    expect(notification.similarity_score).toBeGreaterThanOrEqual(70);
    expect(await verificationScoreOf(alice, quoting, notification.similarity_score)).toBe(notification.similarity_score);
  });

  it('a card linking an unrelated page scores < 50', async () => {
    const [notification] = await verificationsFor(alice, unrelated);
    expect(notification.similarity_score).toBeLessThan(50);
    expect(await verificationScoreOf(alice, unrelated, notification.similarity_score)).toBe(notification.similarity_score);
  });

  it('an unreachable link scores 0 and still notifies', async () => {
    const found = await verificationsFor(alice, unreachable);
    expect(found).toHaveLength(1);
    expect(found[0].similarity_score).toBe(0);
    expect(await verificationScoreOf(alice, unreachable, 0)).toBe(0);
  });

  it('changing the link re-verifies the card: a second notification with a new verification id', async () => {
    expect((await alice.client.put('/api/card/update', { card_uuid: unrelated, link: `http://127.0.0.1:${pagesPort}/coral` })).status).toBe(204);
    const found = await verificationsFor(alice, unrelated, 2);
    expect(found).toHaveLength(2);
    const [newest, oldest] = found;
    expect(newest.verification_uuid).not.toBe(oldest.verification_uuid);
    expect(newest.similarity_score).toBeGreaterThanOrEqual(70);
    expect(await verificationScoreOf(alice, unrelated, newest.similarity_score)).toBe(newest.similarity_score);
  });

  it('changing the html re-verifies the card against its (unchanged) link', async () => {
    const before = await verificationsFor(alice, quoting);
    expect(before).toHaveLength(1);
    const text = unique(UNRELATED.replace(/\s+/g, ' ').split(' ').slice(0, 90).join(' '));
    expect((await alice.client.put('/api/card/update', { card_uuid: quoting, card_html: `<p>${text}</p>` })).status).toBe(204);
    const found = await verificationsFor(alice, quoting, 2);
    expect(found).toHaveLength(2);
    expect(found[0].verification_uuid).not.toBe(before[0].verification_uuid);
    expect(found[0].similarity_score).toBeLessThan(50);
  });

  it('removing the link clears the verification score: the card cites no page any more', async () => {
    const card = await createCard(alice, unique(ARTICLE_FIRST), `http://127.0.0.1:${pagesPort}/coral`);
    const [notification] = await verificationsFor(alice, card);
    expect(await verificationScoreOf(alice, card, notification.similarity_score)).toBe(notification.similarity_score);
    expect((await alice.client.put('/api/card/update', { card_uuid: card, link: '' })).status).toBe(204);
    const res = await alice.client.get(`/api/card/${card}`);
    expect(res.json).toMatchObject({ link: '', verification_score: null });
  });

  it('a page naming its encoding only in a <meta> is read in it: it scores as the same page naming it in its header', async () => {
    const byHeader = await createCard(alice, unique(BRASSERIE), `http://127.0.0.1:${pagesPort}/brasserie-header`);
    const byMeta = await createCard(alice, unique(BRASSERIE), `http://127.0.0.1:${pagesPort}/brasserie-meta`);
    const [headerResult] = await verificationsFor(alice, byHeader);
    const [metaResult] = await verificationsFor(alice, byMeta);
    expect(headerResult.similarity_score).toBeGreaterThanOrEqual(95);
    expect(metaResult.similarity_score).toBe(headerResult.similarity_score);
    expect(await verificationScoreOf(alice, byMeta, headerResult.similarity_score)).toBe(headerResult.similarity_score);
  });

  it('a page sent gzip-compressed is read uncompressed: it scores as the same page sent plain', async () => {
    const plain = await createCard(alice, unique(ARTICLE_FIRST), `http://127.0.0.1:${pagesPort}/coral`);
    const compressed = await createCard(alice, unique(ARTICLE_FIRST), `http://127.0.0.1:${pagesPort}/coral-gzip`);
    const [plainResult] = await verificationsFor(alice, plain);
    const [compressedResult] = await verificationsFor(alice, compressed);
    expect(plainResult.similarity_score).toBeGreaterThanOrEqual(70);
    expect(compressedResult.similarity_score).toBe(plainResult.similarity_score);
  });

  it('refuses loopback targets (127.0.0.1, [::1], localhost, a redirect to loopback) without VERIFY_ALLOW_PRIVATE: score 0, nothing received', async () => {
    const links = [
      `http://127.0.0.1:${victimPort}/direct`,
      `http://[::1]:${victimPort}/ipv6`,
      `http://localhost:${victimPort}/by-name`,
      `http://127.0.0.1:${pagesPort}/to-victim`,
    ];
    const cards: string[] = [];
    for (const link of links) cards.push(await createCard(bob, uniqueText(), link));
    for (const card of cards) {
      const found = await verificationsFor(bob, card);
      expect(found).toHaveLength(1);
      expect(found[0].similarity_score).toBe(0);
    }
    expect(victimRequests).toEqual([]);
  });
});
