import Database from 'better-sqlite3';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { signUp, type TestUser } from '../support/accounts';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { html, uniqueText } from './cards-support';
import { eventually } from './openapi-support';

// The search service SIGKILLed during the rebuild of its lost index, in the production topology (every service its own
// process) on the embedded stores: the index file deleted while search was stopped, search started, and killed
//   1. after it decided its new index was lost, before the rebuild request reached the event log (a trigger in the
//      shared event log refuses the request's topic meanwhile, so search retries sending it), and
//   2. while it applies the cards the rebuild tells it, its position not committed (a trigger refuses its group's
//      position), once some of them are findable again.
// After each restart the index converges to the cards store: every visible card found once, no private card found by
// another user, no deleted card found; every search meanwhile 200, or 503 with a message while search is down.
// Embedded only (it writes triggers into DATA_DIR/events/events.db and deletes DATA_DIR/search/index.db).

const LOST = 'it was lost (deleted or emptied while search was stopped)';
const REQUEST_FAILED = 'asking the cards service to rebuild the search index failed; trying again';

let mailbox: Mailbox;
let system: RunningSystem;
let alice: TestUser;
let bob: TestUser;
const open: { id: string; marker: string }[] = [];
const secret: { id: string; marker: string }[] = [];
const gone: { id: string; marker: string }[] = [];
const problems: string[] = [];
let searchDown = false;
let searches = 0;

async function create(isPrivate: boolean): Promise<{ id: string; marker: string }> {
  const text = uniqueText();
  const res = await alice.client.post('/api/card', { card_html: html(text), link: '', private: isPrivate });
  expect(res.status).toBe(200);
  return { id: res.json.card_metadata.id, marker: text.split(' ')[0]! };
}

/** The ids a user's full-text search for `marker` answers (every entry of the first page), or null when not 200. */
async function search(user: TestUser, marker: string): Promise<string[] | null> {
  const wasDown = searchDown;
  const res = await fetch(`${system.baseUrl}/api/card/fulltextsearch/1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie: user.client.cookie! },
    body: JSON.stringify({ content: marker }),
    signal: AbortSignal.timeout(60_000),
  }).catch((err: Error) => err);
  if (res instanceof Error) {
    problems.push(`search ${marker}: no answer (${res.message})`);
    return null;
  }
  const text = await res.text();
  searches++;
  if (res.status === 200) return (JSON.parse(text).score_cards as any[]).flatMap((e) => e.metadata).map((c: any) => c.id);
  const message = (() => {
    try {
      return JSON.parse(text).message;
    } catch {
      return undefined;
    }
  })();
  if (!(res.status === 503 && (wasDown || searchDown) && typeof message === 'string')) problems.push(`search ${marker}: ${res.status} ${text.slice(0, 200)} (search ${wasDown || searchDown ? 'down' : 'up'})`);
  return null;
}

/** Searches for every card's marker while the rebuild goes on (judged in search()). */
async function searcherLoop(stop: { done: boolean }) {
  const all = [...open, ...secret, ...gone];
  for (let i = 0; !stop.done; i++) {
    await search(i % 2 ? alice : bob, all[i % all.length]!.marker);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const searchLog = (text: string) => system.logs().split('\n').filter((line) => line.startsWith('[search]') && line.includes(text)).length;

async function killSearch() {
  searchDown = true;
  await system.killService!('search');
}

async function restartSearch() {
  await system.restartService!('search');
  searchDown = false;
}

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, SYSTEM_TOPOLOGY: 'distributed' } });
  [alice, bob] = await Promise.all([signUp(system.baseUrl, mailbox, 'rebuild-kill-alice'), signUp(system.baseUrl, mailbox, 'rebuild-kill-bob')]);
  for (let i = 0; i < 8; i++) open.push(await create(false));
  for (let i = 0; i < 3; i++) secret.push(await create(true));
  for (let i = 0; i < 3; i++) gone.push(await create(false));
  for (const card of gone) expect((await alice.client.delete(`/api/card/${card.id}`)).status).toBe(204);
  await eventually(
    'every card indexed before the index is lost',
    async () => {
      for (const card of [...open, ...secret]) if (!(await search(alice, card.marker))?.includes(card.id)) return false;
      return true;
    },
    120_000,
    200,
  );

  // The index lost while search is stopped.
  await killSearch();
  const files = readdirSync(join(system.dataDir, 'search')).filter((f) => f.startsWith('index.db'));
  expect(files).toContain('index.db');
  for (const file of files) rmSync(join(system.dataDir, 'search', file));

  const stop = { done: false };
  const searcher = searcherLoop(stop);
  const events = new Database(join(system.dataDir, 'events', 'events.db'), { fileMustExist: true });
  try {
    // 1. Killed after deciding the index was lost, its rebuild request not yet in the log.
    events.exec("CREATE TRIGGER hold_rebuild_request BEFORE INSERT ON events WHEN NEW.topic LIKE '%index-rebuild%' BEGIN SELECT RAISE(ABORT, 'the test holds the rebuild request'); END");
    await restartSearch();
    await eventually('search deciding its index was lost and failing to send the request', async () => searchLog(LOST) >= 1 && searchLog(REQUEST_FAILED) >= 1, 60_000, 50);
    await killSearch();
    events.exec('DROP TRIGGER hold_rebuild_request');
    expect((events.prepare("SELECT COUNT(*) AS n FROM events WHERE topic LIKE '%index-rebuild%'").get() as { n: number }).n).toBe(0);

    // 2. Killed while it applies the rebuilt cards, its position held (some found again, none committed).
    // Its rows exist (it had committed before), so holding their updates holds its position; subscribing inserts.
    events.exec("CREATE TRIGGER hold_position_update BEFORE UPDATE ON consumer_offsets WHEN NEW.group_id = 'search-index' BEGIN SELECT RAISE(ABORT, 'the test holds this position'); END");
    await restartSearch();
    await eventually(
      'some rebuilt cards found again',
      async () => {
        for (const card of open) if ((await search(bob, card.marker))?.includes(card.id)) return true;
        return false;
      },
      120_000,
      100,
    );
    await killSearch();
    const positionHeld = (events.prepare("SELECT COUNT(*) AS n FROM consumer_offsets o JOIN events e ON e.topic = o.topic AND e.seq > o.seq WHERE o.group_id = 'search-index'").get() as { n: number }).n;
    expect(positionHeld).toBeGreaterThan(0);
    events.exec('DROP TRIGGER hold_position_update');
    await restartSearch();
  } finally {
    for (const name of ['hold_rebuild_request', 'hold_position_update']) events.exec(`DROP TRIGGER IF EXISTS ${name}`);
    events.close();
    stop.done = true;
    await searcher;
  }
}, 400_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
});

describe('search SIGKILLed while it rebuilds its lost index (distributed topology, embedded stores)', () => {
  it('finds every visible card again, once; no private card for another user, no deleted card', async () => {
    await eventually(
      'every card found again after the rebuild',
      async () => {
        for (const card of open) if (!(await search(bob, card.marker))?.includes(card.id)) return false;
        for (const card of secret) if (!(await search(alice, card.marker))?.includes(card.id)) return false;
        return true;
      },
      120_000,
      250,
    );
    for (const card of open) {
      for (const user of [alice, bob]) expect({ card: card.id, found: (await search(user, card.marker))!.filter((id) => id === card.id).length }).toEqual({ card: card.id, found: 1 });
    }
    for (const card of secret) {
      expect({ card: card.id, found: (await search(alice, card.marker))!.filter((id) => id === card.id).length }).toEqual({ card: card.id, found: 1 });
      expect({ card: card.id, foundByOther: (await search(bob, card.marker))!.includes(card.id) }).toEqual({ card: card.id, foundByOther: false });
    }
    for (const card of gone) expect({ card: card.id, found: (await search(alice, card.marker))!.includes(card.id) }).toEqual({ card: card.id, found: false });
    // A card made after the rebuild is indexed as usual.
    const late = await create(false);
    await eventually('a new card found', async () => (await search(bob, late.marker))?.includes(late.id) ?? false, 60_000, 100);
  }, 300_000);

  it('answered every search during the rebuild: 200, or 503 with a message while search was down', () => {
    expect(searches).toBeGreaterThan(10);
    expect(problems).toEqual([]);
  });
});
