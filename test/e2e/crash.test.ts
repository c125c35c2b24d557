import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { CardsClient } from '@cards/client';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { html, signUpMany, uniqueText } from './cards-support';
import { eventually, typedClient } from './openapi-support';
import { testTempDir } from '../support/cleanup';

// SIGKILL of the all-in-one process while a vote storm, card creation and a document ingestion are in
// flight, a second SIGKILL 1.5 s into the recovery, then a restart on the same data directory: every acknowledged write is there, no card exists
// twice, counters match the votes, the outbox drains (cards reach the index and come back indexed) and
// the ingestion finishes exactly once.

const VOTERS = 20;
const CARDS = 6;
const STORM_MS = 1000; // well under the time the 100-page book takes to ingest under the storm
const BOOK = readFileSync(join(__dirname, '../fixtures/documents/bench/book-100-pages.docx'));

type VoteState = boolean | null;
interface PairLog {
  /** State after the last acknowledged operation. */
  acked: VoteState;
  /** The state the one unacknowledged (in-flight at the kill) operation would have left, if any. */
  inFlight?: VoteState;
}

let mailbox: Mailbox;
let dataDir: string;
let system: RunningSystem;
let author: TestUser;
let voters: TestUser[];
let cardIds: string[];
const pairs = new Map<string, PairLog>(); // `${voterIndex}:${cardId}`
const createdCards = new Map<string, string>(); // acknowledged id -> content
const unackedCardTexts: string[] = []; // creations in flight at the kill: at most once
let fileId: string;

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  dataDir = testTempDir('cards-crash-');
  system = await startSystem({ dataDir, env: { SMTP_URL: mailbox.url } });
  author = await signUp(system.baseUrl, mailbox, 'crash-author');
  voters = await signUpMany(system.baseUrl, mailbox, VOTERS, 'crash-voter');
  const api = typedClient(system.baseUrl, author);
  cardIds = [];
  for (let i = 0; i < CARDS; i++) {
    const res = await api.POST('/api/card', { body: { card_html: html(uniqueText()), link: '', private: false } });
    cardIds.push(res.data!.card_metadata.id);
  }
}, 180_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** Each voter votes, flips and withdraws one operation at a time until the process dies under it. */
async function voterLoop(index: number, api: CardsClient, stop: { dead: boolean }): Promise<void> {
  while (!stop.dead) {
    const cardId = cardIds[Math.floor(Math.random() * cardIds.length)]!;
    const key = `${index}:${cardId}`;
    const log = pairs.get(key) ?? { acked: null };
    pairs.set(key, log);
    const withdraw = Math.random() < 0.2;
    const value = Math.random() < 0.6;
    const next: VoteState = withdraw ? null : value;
    log.inFlight = next;
    try {
      const res = withdraw ? await api.DELETE('/api/vote/{card_id}', { params: { path: { card_id: cardId } } }) : await api.POST('/api/vote', { body: { card_metadata_id: cardId, vote: value } });
      const ok = withdraw ? res.response.status === 204 || res.response.status === 404 : res.response.status === 200;
      if (!ok) throw new Error(`unexpected ${res.response.status} ${JSON.stringify(res.error)}`);
      log.acked = next;
      delete log.inFlight;
    } catch (err) {
      if (!stop.dead && !isConnectionError(err)) throw err;
      return; // in flight when the process died: either outcome is allowed
    }
  }
}

async function creatorLoop(api: CardsClient, stop: { dead: boolean }): Promise<void> {
  while (!stop.dead) {
    const text = uniqueText();
    try {
      const res = await api.POST('/api/card', { body: { card_html: html(text), link: '', private: false } });
      if (res.response.status !== 200) throw new Error(`create ${res.response.status} ${JSON.stringify(res.error)}`);
      createdCards.set(res.data!.card_metadata.id, res.data!.card_metadata.content);
    } catch (err) {
      if (!stop.dead && !isConnectionError(err)) throw err;
      unackedCardTexts.push(text.split(' ')[0]!);
      return;
    }
  }
}

function isConnectionError(err: unknown): boolean {
  const text = `${(err as Error)?.message} ${String((err as { cause?: unknown })?.cause)}`;
  return /fetch failed|ECONNRESET|ECONNREFUSED|socket|other side closed|terminated/i.test(text);
}

/** All of a user's cards as the owner sees them (every page). */
async function allCardsOf(api: CardsClient, userId: string) {
  const cards = [];
  for (let page = 1; ; page++) {
    const res = await api.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: userId, page } } });
    cards.push(...res.data!.cards);
    if (page >= res.data!.total_pages) return { cards, page: res.data! };
  }
}

describe('SIGKILL during a vote storm, card creation and a document ingestion', () => {
  let restarted: RunningSystem;
  let api: CardsClient;
  let killedDuringRecovery = false;

  beforeAll(async () => {
    const authorApi = typedClient(system.baseUrl, author);
    const upload = await authorApi.POST('/api/file', { body: { base64_docx_file: BOOK.toString('base64url'), file_name: 'book-100-pages.docx', file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', private: false } });
    expect(upload.response.status).toBe(200);
    fileId = upload.data!.id;
    const stop = { dead: false };
    const loops = [...voters.map((v, i) => voterLoop(i, typedClient(system.baseUrl, v), stop)), ...[1, 2, 3].map(() => creatorLoop(typedClient(system.baseUrl, author), stop))];
    await new Promise((r) => setTimeout(r, STORM_MS));
    const during = await authorApi.GET('/api/file/{file_id}', { params: { path: { file_id: fileId } } });
    expect(during.data!.ingestion_status).toBe('pending'); // the kill really lands mid-ingestion
    stop.dead = true;
    await system.kill();
    await Promise.all(loops);
    // Second SIGKILL while the restarted process is recovering (outbox relays catching up, ingestion resumed).
    const recovering = await startSystem({ dataDir, env: { SMTP_URL: mailbox.url } });
    system = recovering;
    // Killed as soon as the resumed ingestion has made a card, so the kill lands mid-recovery however fast it runs.
    const recoveringApi = typedClient(recovering.baseUrl, author);
    const cardsNow = async () => (await recoveringApi.GET('/api/user/{user_id}/{page}', { params: { path: { user_id: author.id, page: 1 } } })).data!.total_cards_created;
    const atRestart = await cardsNow();
    for (const giveUp = Date.now() + 20_000; Date.now() < giveUp && (await cardsNow()) === atRestart; ) await new Promise((r) => setTimeout(r, 25));
    const resumed = await recoveringApi.GET('/api/file/{file_id}', { params: { path: { file_id: fileId } } });
    killedDuringRecovery = resumed.data!.ingestion_status === 'pending';
    await recovering.kill();
    restarted = await startSystem({ dataDir, env: { SMTP_URL: mailbox.url } });
    system = restarted;
    api = typedClient(restarted.baseUrl, author);
  }, 240_000);

  it('was killed mid-ingestion twice: during the storm and again while recovering', () => {
    expect(killedDuringRecovery).toBe(true);
  });

  it('stormed for real: many acknowledged votes and card creations before the kill', () => {
    expect([...pairs.values()].filter((p) => p.acked !== null).length).toBeGreaterThan(10);
    expect(createdCards.size).toBeGreaterThanOrEqual(3);
  });

  it('keeps every acknowledged vote, and each card\'s counters equal its votes', async () => {
    const problems: string[] = [];
    const totals = new Map(cardIds.map((id) => [id, { up: 0, down: 0 }]));
    await Promise.all(
      voters.map(async (voter, index) => {
        const voterApi = typedClient(restarted.baseUrl, voter);
        for (const cardId of cardIds) {
          const res = await voterApi.GET('/api/card/{card_id}', { params: { path: { card_id: cardId } } });
          const seen = res.data!.vote_by_current_user;
          const log = pairs.get(`${index}:${cardId}`) ?? { acked: null };
          const allowed = log.inFlight === undefined ? [log.acked] : [log.acked, log.inFlight];
          if (!allowed.includes(seen)) problems.push(`voter ${index} on ${cardId}: acknowledged ${log.acked}, found ${seen}`);
          if (seen === true) totals.get(cardId)!.up++;
          if (seen === false) totals.get(cardId)!.down++;
        }
      }),
    );
    expect(problems).toEqual([]);
    let up = 0;
    let down = 0;
    for (const cardId of cardIds) {
      const card = (await api.GET('/api/card/{card_id}', { params: { path: { card_id: cardId } } })).data!;
      expect({ cardId, up: card.total_upvotes, down: card.total_downvotes }).toEqual({ cardId, up: totals.get(cardId)!.up, down: totals.get(cardId)!.down });
      up += card.total_upvotes;
      down += card.total_downvotes;
    }
    // The author's counters and the top-users score agree with the cards.
    const { page } = await allCardsOf(api, author.id);
    expect({ up: page.total_upvotes_received, down: page.total_downvotes_received }).toEqual({ up, down });
    const top = await api.GET('/api/top_users/{page}', { params: { path: { page: 1 } } });
    const entry = top.data!.users.find((u) => u.id === author.id);
    if (up + down > 0) expect(entry?.score).toBe(up - down);
  });

  it('keeps every acknowledged card, and no card exists twice', async () => {
    // The listing pages by OFFSET, newest first: cards the resumed ingestion adds meanwhile would shift
    // entries across pages, so read it once ingestion has settled.
    await eventually(
      'ingestion settled after the restart',
      async () => (await api.GET('/api/file/{file_id}', { params: { path: { file_id: fileId } } })).data?.ingestion_status !== 'pending',
      120_000,
      500,
    );
    const { cards } = await allCardsOf(api, author.id);
    const byId = new Map(cards.map((c) => [c.id, c]));
    for (const [id, content] of createdCards) expect(byId.get(id)?.content).toBe(content);
    const manual = cards.filter((c) => c.file_id === null);
    const contents = manual.map((c) => c.content);
    expect(new Set(contents).size).toBe(contents.length);
    for (const marker of unackedCardTexts) expect(contents.filter((c) => c.startsWith(`${marker} `)).length).toBeLessThanOrEqual(1);
  }, 150_000);

  it('drains the outbox: every acknowledged card reaches the search index and comes back indexed', async () => {
    const ids = [...cardIds, ...createdCards.keys()];
    await eventually(
      'every card indexed (vector_point_id set)',
      async () => {
        const cards = await Promise.all(ids.map((id) => api.GET('/api/card/{card_id}', { params: { path: { card_id: id } } })));
        return cards.every((c) => c.data?.vector_point_id);
      },
      60_000,
      500,
    );
    for (const [id, content] of createdCards) {
      const found = await api.POST('/api/card/fulltextsearch/{page}', { params: { path: { page: 1 } }, body: { content: content.split(' ')[0]! } });
      expect({ id, found: found.data!.score_cards.some((e) => e.metadata.some((c) => c.id === id)) }).toEqual({ id, found: true });
    }
  }, 90_000);

  it('finishes the interrupted ingestion exactly once: file intact, one collection, no duplicate cards, one notification', async () => {
    let status = '';
    await eventually(
      'ingestion done after the restart',
      async () => {
        const res = await api.GET('/api/file/{file_id}', { params: { path: { file_id: fileId } } });
        status = res.data?.ingestion_status ?? '';
        return status !== 'pending';
      },
      120_000,
      500,
    );
    expect(status).toBe('done');
    const file = await api.GET('/api/file/{file_id}', { params: { path: { file_id: fileId } } });
    expect(Buffer.from(file.data!.base64url_content, 'base64url').equals(BOOK)).toBe(true);

    const fileCards = (await allCardsOf(api, author.id)).cards.filter((c) => c.file_id === fileId);
    expect(fileCards.length).toBeGreaterThan(100);
    const contents = fileCards.map((c) => c.content);
    expect(new Set(contents).size).toBe(contents.length);

    const collections = (await api.GET('/api/user/collections/{user_id}', { params: { path: { user_id: author.id } } })).data!.filter((c) => c.file_id === fileId);
    expect(collections).toHaveLength(1);
    const collectionId = collections[0]!.id;
    const inCollection: string[] = [];
    for (let page = 1; ; page++) {
      const res = await api.GET('/api/card_collection/{collection_id}/{page}', { params: { path: { collection_id: collectionId, page } } });
      inCollection.push(...res.data!.bookmarks.map((b) => b.metadata[0]!.id));
      if (page >= res.data!.total_pages) break;
    }
    expect(new Set(inCollection).size).toBe(inCollection.length);
    expect(inCollection.sort()).toEqual(fileCards.map((c) => c.id).sort());

    const announced = async () => (await api.GET('/api/notifications')).data!.filter((n) => n.type === 'collection_created' && n.collection_uuid === collectionId).length;
    await eventually('the collection-created notification', async () => (await announced()) > 0, 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(await announced()).toBe(1);
  }, 180_000);
});
