import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { openSqlite } from '@cards/platform';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import type { ServiceName } from '../support/distributed';
import { signUp, type TestUser } from '../support/accounts';
import { html, uniqueText } from './cards-support';
import { eventually } from './openapi-support';

// The production topology (every service its own process, SQLite stores, the shared SQLite event log): a steady
// workload through the gateway (cards with links verified against a page server here, votes, bookmarks, deletions,
// document uploads) while ONE service at a time is SIGKILLed at an awkward moment and started again:
//   search        while it fetches a card's page to verify it (the page held open by this test),
//   files         while it ingests a 100-page document (its first cards made, the rest not),
//   cards         with answered creations' events still in its outbox,
//   notifications with a verification it has notified not yet committed as consumed (given to it again on restart),
//   identity      under the workload (every signed-in request asks it for the session; the sessions hold).
// Then from outside: every card answered 200 exists and search finds it once; every deleted card is gone;
// every document is done with its cards, none twice; every verified card notified once; votes and bookmarks as
// answered; no 5xx except a 503 with a message while the killed service was down; no request hung.
// On the embedded stores the cards and notifications kills are made at their moments by triggers in the shared event
// log (events.db); on Kafka and MongoDB (test/engines/run-e2e-distributed.ts) those two are killed under the workload
// (after a burst of answered creations; after a new verification notification), the rest as on the embedded stores.

const DOCS = join(__dirname, '../fixtures/documents');
const REQUEST_LIMIT_MS = 60_000; // a request not answered in this long counts as a hang
const ARTICLE = uniqueText(200);
/** The event log and the cards store are the embedded SQLite files this test can hold (not Kafka, not MongoDB). */
const EMBEDDED = !process.env.KAFKA_BROKERS && !process.env.MONGO_URL;

type VoteState = boolean | null;
interface Created {
  id: string;
  marker: string;
  link: string;
}

let mailbox: Mailbox;
let pages: Server;
let pagesPort: number;
let system: RunningSystem;
let author: TestUser;
let voters: TestUser[];
let voteCards: string[];
let collectionId: string;

/** Down: from just before a service is killed until the gateway's /healthz is 200 again after its restart. */
let down: ServiceName | null = null;
const problems: string[] = [];
const answered503WhileDown = new Map<string, number>();
const created = new Map<string, Created>(); // acknowledged and not deleted
const deleted = new Set<string>(); // deletion answered 204
const uncertainDeletes = new Set<string>(); // deletion not answered 204: either outcome
const bookmarked = new Set<string>(); // add answered 204
const unackedMarkers: string[] = []; // creations not answered 200: at most once
const votes = new Map<string, { acked: VoteState; inFlight?: VoteState }>();
const uploads: { fileId: string; name: string }[] = [];
const killedAt: Partial<Record<ServiceName, string>> = {};
let bookAtKill = { cards: 0, status: '' }; // the 100-page document when files was killed
let outboxAtKill = 0;
let positionHeld = 0; // verification events notifications had not committed as consumed when it was killed // cards' unpublished events when it was killed

// The page server: /article/* answers a page; while `hold` is set, requests wait until released.
let hold = false;
const held: { res: ServerResponse; url: string }[] = [];
const pageRequests: string[] = [];
function servePage(req: IncomingMessage, res: ServerResponse) {
  pageRequests.push(req.url ?? '');
  if (hold) return void held.push({ res, url: req.url ?? '' });
  answerPage(res);
}
function answerPage(res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><body><article><p>${ARTICLE}</p></article></body></html>`);
}
function releaseHeld() {
  hold = false;
  for (const h of held.splice(0)) answerPage(h.res);
}

async function call(user: TestUser | undefined, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (user?.client.cookie) headers.cookie = user.client.cookie;
  const downAtStart = down;
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${system.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_LIMIT_MS) });
    text = await res.text();
  } catch (err) {
    problems.push(`${method} ${path}: no answer (${(err as Error).name}: ${(err as Error).message}; ${downAtStart ?? 'nothing'} down)`);
    return { status: 0, json: undefined };
  }
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (res.status >= 500) {
    const wasDown = downAtStart ?? down;
    if (!wasDown) problems.push(`${method} ${path}: ${res.status} ${text.slice(0, 200)} while every service was up`);
    else if (res.status !== 503 || typeof json?.message !== 'string') problems.push(`${method} ${path}: ${res.status} ${text.slice(0, 200)} while ${wasDown} was down (expected 503 with a message)`);
    else answered503WhileDown.set(wasDown, (answered503WhileDown.get(wasDown) ?? 0) + 1);
  }
  return { status: res.status, json };
}

function expectStatus(what: string, status: number, ok: number[]) {
  if (ok.includes(status) || status >= 500 || status === 0) return; // 5xx and no answer are judged in call()
  problems.push(`${what}: unexpected ${status}`);
}

/** One worker: create a card with a link, then bookmark it or delete it, alternately. */
async function creatorLoop(stop: { done: boolean }, name: string) {
  let n = 0;
  while (!stop.done) {
    const text = uniqueText();
    const marker = text.split(' ')[0]!;
    const link = `http://127.0.0.1:${pagesPort}/article/${marker}`;
    const res = await call(author, 'POST', '/api/card', { card_html: html(text), link, private: false });
    expectStatus(`create (${name})`, res.status, [200]);
    if (res.status !== 200) {
      unackedMarkers.push(marker);
      await new Promise((r) => setTimeout(r, 100)); // do not spin on a dead service
      continue;
    }
    const id = res.json.card_metadata.id as string;
    created.set(id, { id, marker, link });
    if (n++ % 2 === 0) {
      const added = await call(author, 'POST', `/api/card_collection/${collectionId}`, { card_metadata_id: id });
      expectStatus('bookmark', added.status, [204]);
      if (added.status === 204) bookmarked.add(id);
    } else {
      const gone = await call(author, 'DELETE', `/api/card/${id}`);
      expectStatus('delete', gone.status, [204]);
      created.delete(id);
      if (gone.status === 204) deleted.add(id);
      else uncertainDeletes.add(id);
    }
  }
}

async function voterLoop(stop: { done: boolean }, index: number) {
  const voter = voters[index]!;
  while (!stop.done) {
    const cardId = voteCards[Math.floor(Math.random() * voteCards.length)]!;
    const key = `${index}:${cardId}`;
    const log = votes.get(key) ?? { acked: null };
    votes.set(key, log);
    const withdraw = Math.random() < 0.25;
    const value = Math.random() < 0.5;
    const next: VoteState = withdraw ? null : value;
    const res = withdraw ? await call(voter, 'DELETE', `/api/vote/${cardId}`) : await call(voter, 'POST', '/api/vote', { card_metadata_id: cardId, vote: value });
    const ok = withdraw ? [204, 404] : [200];
    expectStatus('vote', res.status, ok);
    if (ok.includes(res.status)) {
      log.acked = next;
      delete log.inFlight;
    } else {
      log.inFlight = next; // not answered: either outcome (a later acknowledged vote settles it)
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

async function searcherLoop(stop: { done: boolean }) {
  while (!stop.done) {
    const some = [...created.values()].pop();
    const res = await call(author, 'POST', '/api/card/fulltextsearch/1', { content: some?.marker ?? 'river' });
    expectStatus('search', res.status, [200]);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function upload(name: string, path = join(DOCS, name)): Promise<number> {
  const res = await call(author, 'POST', '/api/file', {
    base64_docx_file: readFileSync(path).toString('base64url'),
    file_name: name,
    file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    private: false,
  });
  expectStatus(`upload ${name}`, res.status, [200]);
  if (res.status === 200) uploads.push({ fileId: res.json.id, name });
  return res.status;
}

/** Runs the workload around `crash`, which kills the service at its moment; restarts it once some requests met it down. */
async function phase(victim: ServiceName, crash: () => Promise<void>, whileDown: () => Promise<void>) {
  const stop = { done: false };
  const workers = [creatorLoop(stop, 'a'), creatorLoop(stop, 'b'), voterLoop(stop, 0), voterLoop(stop, 1), searcherLoop(stop)];
  try {
    const before = created.size + deleted.size;
    await eventually(`some work acknowledged before ${victim} is killed`, async () => created.size + deleted.size >= before + 2, 60_000, 50);
    await crash();
    await whileDown();
    await system.restartService!(victim);
    down = null;
    const after = created.size + deleted.size;
    await eventually(`work acknowledged after ${victim} came back`, async () => created.size + deleted.size >= after + 2, 60_000, 50);
  } finally {
    stop.done = true; // also when a step failed: no workload left running into afterAll
    await Promise.all(workers);
  }
}

/** An embedded store of the running system (through @cards/platform: the engines' run resolves no better-sqlite3 here). */
function openStore(service: string, file: string) {
  const path = join(system.dataDir, service, file);
  if (!existsSync(path)) throw new Error(`${path} is missing`);
  return openSqlite(path);
}

async function kill(victim: ServiceName) {
  down = victim;
  killedAt[victim] = new Date().toISOString();
  await system.killService!(victim);
}

beforeAll(async () => {
  pages = createServer(servePage);
  await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
  pagesPort = (pages.address() as AddressInfo).port;
  mailbox = new Mailbox();
  await mailbox.start();
  system = await startSystem({
    env: {
      SMTP_URL: mailbox.url,
      SYSTEM_TOPOLOGY: 'distributed',
      VERIFY_ALLOW_HOSTS: `127.0.0.1:${pagesPort}`,
      VERIFY_ALLOW_PRIVATE: 'false',
    },
  });
  [author, ...voters] = await Promise.all([signUp(system.baseUrl, mailbox, 'kill-author'), signUp(system.baseUrl, mailbox, 'kill-voter'), signUp(system.baseUrl, mailbox, 'kill-voter')]);
  voteCards = [];
  for (let i = 0; i < 3; i++) {
    const res = await author.client.post('/api/card', { card_html: html(uniqueText()), link: '', private: false });
    voteCards.push(res.json.card_metadata.id);
  }
  expect((await author.client.post('/api/card_collection', { name: 'kept', is_public: false })).status).toBe(204);
  collectionId = (await author.client.get(`/api/user/collections/${author.id}`)).json.find((c: any) => c.name === 'kept').id;

  // search: killed while it fetches a card's page to verify it.
  await phase(
    'search',
    async () => {
      const seen = pageRequests.length;
      hold = true;
      await eventually('search fetching a page', async () => held.length > 0 && pageRequests.length > seen, 60_000, 20);
      await kill('search');
      releaseHeld();
    },
    async () => eventually('a search answered while search is down', async () => (answered503WhileDown.get('search') ?? 0) > 0, 60_000, 50),
  );
  await upload('energy.docx');

  // files: killed while it ingests a 100-page document.
  await phase(
    'files',
    async () => {
      expect(await upload('book-100-pages.docx', join(DOCS, 'bench/book-100-pages.docx'))).toBe(200);
      const book = uploads.at(-1)!.fileId;
      // Killed once the first of its cards exist, the ingestion still pending.
      await eventually(
        'the first cards of the book',
        async () => {
          const [listing, file] = await Promise.all([author.client.get(`/api/user/${author.id}/1`), author.client.get(`/api/file/${book}`)]);
          bookAtKill = { cards: (listing.json.cards as any[]).filter((c) => c.file_id === book).length, status: file.json.ingestion_status };
          return bookAtKill.cards > 0 || bookAtKill.status !== 'pending';
        },
        60_000,
        20,
      );
      await kill('files');
    },
    async () => {
      expect(await upload('word-features.docx')).toBe(503);
      // Reads of a file, its download (proxied over HTTP, not gRPC) and the user's file list: 503 too.
      const book = uploads.at(-1)!.fileId;
      for (const path of [`/api/file/${book}`, `/api/file/${book}/download`, `/api/user/files/${author.id}`]) {
        expect({ path, status: (await call(author, 'GET', path)).status }).toEqual({ path, status: 503 });
      }
    },
  );

  // cards: killed with answered creations' events still in its outbox: a trigger in the shared event log refuses cards'
  // topics meanwhile (its relay fails fast and retries; holding the log's write lock instead stalls the relay in its
  // busy_timeout and the creations answer 504), dropped once cards is dead.
  const burst = async () => {
    const answered = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const text = uniqueText();
        const marker = text.split(' ')[0]!;
        const link = `http://127.0.0.1:${pagesPort}/article/${marker}`;
        return { res: await call(author, 'POST', '/api/card', { card_html: html(text), link, private: false }), marker, link };
      }),
    );
    for (const { res, marker, link } of answered) {
      expect(res.status).toBe(200);
      created.set(res.json.card_metadata.id, { id: res.json.card_metadata.id, marker, link });
    }
  };
  await phase(
    'cards',
    async () => {
      if (!EMBEDDED) {
        await burst();
        return kill('cards');
      }
      const events = openStore('events', 'events.db');
      events.exec("CREATE TRIGGER hold_cards_events BEFORE INSERT ON events WHEN NEW.topic LIKE '%cards.%' BEGIN SELECT RAISE(ABORT, 'the test holds cards events'); END");
      try {
        await burst();
        await kill('cards');
        const cardsStore = openStore('cards', 'cards.db');
        outboxAtKill = (cardsStore.prepare('SELECT COUNT(*) AS n FROM outbox').get() as { n: number }).n;
        cardsStore.close();
      } finally {
        events.exec('DROP TRIGGER hold_cards_events');
        events.close();
      }
    },
    async () => eventually('a creation answered while cards is down', async () => (answered503WhileDown.get('cards') ?? 0) > 1, 60_000, 50),
  );
  await upload('doc-structure.docx');

  // notifications: killed while a verification it has already turned into a notification is not yet committed as consumed
  // (a trigger in the shared event log refuses its group's position on the verification topic), so the restarted
  // consumer is given the same event again.
  await phase(
    'notifications',
    async () => {
      const verified = async () => new Set(((await author.client.get('/api/notifications')).json as any[]).filter((n) => n.type === 'verification').map((n) => n.card_uuid as string));
      // Read before the triggers: a verification notified between the triggers and this read had its commit refused, and
      // the consumer, retrying that commit, delivers nothing more, so no notification after the read would ever come.
      const before = await verified();
      if (!EMBEDDED) {
        await eventually('a new verification notified', async () => [...(await verified())].some((id) => !before.has(id) && created.has(id)), 60_000, 50);
        return kill('notifications');
      }
      const events = openStore('events', 'events.db');
      const refuse = "WHEN NEW.group_id = 'notifications' AND NEW.topic LIKE '%verification%' BEGIN SELECT RAISE(ABORT, 'the test holds this position'); END";
      events.exec(`CREATE TRIGGER hold_position_insert BEFORE INSERT ON consumer_offsets ${refuse}; CREATE TRIGGER hold_position_update BEFORE UPDATE ON consumer_offsets ${refuse}`);
      try {
        const uncommitted = () => (events.prepare("SELECT COUNT(*) AS n FROM consumer_offsets o JOIN events e ON e.topic = o.topic AND e.seq > o.seq WHERE o.group_id = 'notifications' AND o.topic LIKE '%verification%'").get() as { n: number }).n;
        await eventually('a verification notified while its position is held', async () => [...(await verified())].some((id) => !before.has(id) && created.has(id)) && uncommitted() > 0, 60_000, 50);
        const held = uncommitted();
        await kill('notifications');
        positionHeld = held;
      } finally {
        events.exec('DROP TRIGGER hold_position_insert; DROP TRIGGER hold_position_update');
        events.close();
      }
    },
    async () => {
      expect((await call(author, 'GET', '/api/notifications')).status).toBe(503);
    },
  );

  // identity: every signed-in request asks it for the session; killed under the workload, the sessions hold after it.
  await phase(
    'identity',
    async () => kill('identity'),
    async () => eventually('requests answered while identity is down', async () => (answered503WhileDown.get('identity') ?? 0) > 1, 60_000, 50),
  );
}, 420_000);

afterAll(async () => {
  if (process.env.SERVICE_KILL_SUMMARY) {
    process.stderr.write(`[service-kill] kept ${created.size} cards, deleted ${deleted.size} (${uncertainDeletes.size} unanswered), ${bookmarked.size} bookmarks, ${votes.size} voter/card pairs, ${uploads.length} documents, ${outboxAtKill} outbox entries at the cards kill, the book at the files kill: ${JSON.stringify(bookAtKill)}, ${positionHeld} verification events uncommitted at the notifications kill, 503s while down: ${JSON.stringify(Object.fromEntries(answered503WhileDown))}\n`);
  }
  releaseHeld();
  await system?.stop();
  await mailbox?.stop();
  pages?.closeAllConnections();
  await new Promise((r) => pages?.close(r));
});

/** A card's entries in a full-text search for its marker (every page of the answer). */
async function foundTimes(id: string, marker: string): Promise<number> {
  const res = await author.client.post('/api/card/fulltextsearch/1', { content: marker });
  expect(res.status).toBe(200);
  return (res.json.score_cards as any[]).flatMap((e) => e.metadata).filter((c: any) => c.id === id).length;
}

describe('one service SIGKILLed at a time under a steady workload (distributed topology)', () => {
  it('killed each service and met it down: only 503s with a message then, no other 5xx, no hang', () => {
    expect(Object.keys(killedAt).sort()).toEqual(['cards', 'files', 'identity', 'notifications', 'search']);
    expect([...answered503WhileDown.keys()].sort()).toEqual(['cards', 'files', 'identity', 'notifications', 'search']);
    if (EMBEDDED) expect(outboxAtKill).toBeGreaterThanOrEqual(3);
    expect(bookAtKill.status).toBe('pending');
    if (EMBEDDED) expect(positionHeld).toBeGreaterThanOrEqual(1);
    expect(problems).toEqual([]);
  });

  it('keeps every card answered 200; the index finds each once, and no deleted card', async () => {
    expect(created.size).toBeGreaterThanOrEqual(8);
    for (const card of created.values()) expect({ id: card.id, status: (await author.client.get(`/api/card/${card.id}`)).status }).toEqual({ id: card.id, status: 200 });
    for (const id of deleted) expect({ id, status: (await author.client.get(`/api/card/${id}`)).status }).toEqual({ id, status: 404 });
    await eventually(
      'every acknowledged card found by its marker',
      async () => {
        for (const card of created.values()) if ((await foundTimes(card.id, card.marker)) === 0) return false;
        return true;
      },
      120_000,
      500,
    );
    for (const card of created.values()) expect({ id: card.id, found: await foundTimes(card.id, card.marker) }).toEqual({ id: card.id, found: 1 });
    // No creation left unanswered made two cards.
    const listing: any[] = [];
    for (let page = 1; ; page++) {
      const res = await author.client.get(`/api/user/${author.id}/${page}`);
      listing.push(...res.json.cards);
      if (page >= res.json.total_pages) break;
    }
    // The listing pages by offset while documents still add cards: an entry may show on two pages, so count by id.
    const manual = [...new Map(listing.filter((c) => c.file_id === null).map((c) => [c.id, c.content.split(' ')[0]])).values()];
    expect(manual.length - new Set(manual).size).toBe(0);
  }, 240_000);

  it('keeps every acknowledged vote, and each card counts its votes', async () => {
    const mismatches: string[] = [];
    const totals = new Map(voteCards.map((id) => [id, { up: 0, down: 0 }]));
    for (const [index, voter] of voters.entries()) {
      for (const cardId of voteCards) {
        const seen = (await voter.client.get(`/api/card/${cardId}`)).json.vote_by_current_user;
        const log = votes.get(`${index}:${cardId}`) ?? { acked: null };
        const allowed = log.inFlight === undefined ? [log.acked] : [log.acked, log.inFlight];
        if (!allowed.includes(seen)) mismatches.push(`voter ${index} on ${cardId}: answered ${log.acked}, found ${seen}`);
        if (seen === true) totals.get(cardId)!.up++;
        if (seen === false) totals.get(cardId)!.down++;
      }
    }
    expect(mismatches).toEqual([]);
    for (const cardId of voteCards) {
      const card = (await author.client.get(`/api/card/${cardId}`)).json;
      expect({ cardId, up: card.total_upvotes, down: card.total_downvotes }).toEqual({ cardId, ...totals.get(cardId) });
    }
  });

  it('keeps every acknowledged bookmark', async () => {
    const inCollection: string[] = [];
    for (let page = 1; ; page++) {
      const res = await author.client.get(`/api/card_collection/${collectionId}/${page}`);
      inCollection.push(...res.json.bookmarks.map((b: any) => b.metadata[0].id));
      if (page >= res.json.total_pages) break;
    }
    expect(bookmarked.size).toBeGreaterThanOrEqual(4);
    for (const id of bookmarked) expect({ id, kept: inCollection.includes(id) }).toEqual({ id, kept: true });
    expect(new Set(inCollection).size).toBe(inCollection.length);
  });

  it('finishes every accepted document once: done, its cards none twice, one collection', async () => {
    expect(uploads.map((u) => u.name).sort()).toEqual(['book-100-pages.docx', 'doc-structure.docx', 'energy.docx']);
    const collections = async () => (await author.client.get(`/api/user/collections/${author.id}`)).json as any[];
    for (const { fileId, name } of uploads) {
      await eventually(`${name} ingested`, async () => (await author.client.get(`/api/file/${fileId}`)).json?.ingestion_status !== 'pending', 120_000, 500);
      expect({ name, status: (await author.client.get(`/api/file/${fileId}`)).json.ingestion_status }).toEqual({ name, status: 'done' });
      expect({ name, collections: (await collections()).filter((c) => c.file_id === fileId).length }).toEqual({ name, collections: 1 });
    }
    const listing: any[] = [];
    for (let page = 1; ; page++) {
      const res = await author.client.get(`/api/user/${author.id}/${page}`);
      listing.push(...res.json.cards);
      if (page >= res.json.total_pages) break;
    }
    for (const { fileId, name } of uploads) {
      const contents = listing.filter((c) => c.file_id === fileId).map((c) => c.content);
      const least = name === 'book-100-pages.docx' ? 100 : 1; // the book makes well over 100 cards
      expect({ name, enough: contents.length >= least, twice: contents.length - new Set(contents).size }).toEqual({ name, enough: true, twice: 0 });
    }
    // Each document's collection announced once (the announcement follows the ingestion's end through events).
    for (const { fileId, name } of uploads) {
      const collection = (await collections()).find((c) => c.file_id === fileId);
      const announced = async () => ((await author.client.get('/api/notifications')).json as any[]).filter((n) => n.type === 'collection_created' && n.collection_uuid === collection.id).length;
      await eventually(`the collection of ${name} announced`, async () => (await announced()) > 0, 60_000, 250);
      expect({ name, announced: await announced() }).toEqual({ name, announced: 1 });
    }
  }, 400_000);

  it('notifies each verified card once', async () => {
    const verifications = async () => ((await author.client.get('/api/notifications')).json as any[]).filter((n) => n.type === 'verification');
    await eventually(
      'every kept card with a link verified and notified',
      async () => {
        const notified = new Set((await verifications()).map((n) => n.card_uuid));
        return [...created.keys()].every((id) => notified.has(id));
      },
      120_000,
      500,
    );
    const counts = new Map<string, number>();
    for (const n of await verifications()) counts.set(n.card_uuid, (counts.get(n.card_uuid) ?? 0) + 1);
    expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
  }, 150_000);
});
