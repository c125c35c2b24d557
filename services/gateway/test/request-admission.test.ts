import { createServer, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { GatewayAppOptions } from '../src/app';
import type { GatewayClients } from '../src/clients';
import { OWN_REQUESTS_BUSY_MESSAGE, SERVER_BUSY_MESSAGE } from '../src/http/request-admission';
import { appWithoutServices, closed, listening, until } from './app-without-services';
import { gatewayInFrontOf, stubPeersForSuite, tokenIsUser, type GatewayInFront } from './fake-peer';

/**
 * The gateway's bound on API requests served at once (HTTP_REQUESTS_AT_ONCE and its line): past it a request is
 * answered 503 with Retry-After instead of waiting behind every other without limit, one client's flood is answered
 * 429 before it fills the line of others, searches wait in a line of their own, and a request whose client left the
 * line is never run. The peers answer only when the test lets them (a gate), so what is under way is known without
 * any timing.
 */

/** A promise the test resolves: every held call waits for it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

let counts = gate();
let searches = gate();
let logins = gate();
/** The second page of a bookmark lookup (POST /api/card_collection/bookmark), held until the test lets it be read. */
let bookmarkPages = gate();
/** Calls that reached the peers. */
const reached = { counts: 0, searches: 0, cards: 0, sessionLookups: 0, logins: 0, bookmarkPages: 0 };
/**
 * The card GET /api/card/:id answers: 2 x 1,000,000 control characters, each written \\u0001 in JSON, so its answer
 * (~12 MB) is far more than the connection's buffers take from a client that reads none of it.
 */
const LARGE_CARD_ID = '00000000-0000-4000-8000-00000000000a';
const unreadable = '\u0001'.repeat(1_000_000);
/** The file GET /api/file/:id reads (from the peer's ReadFile): 128 pieces of 64 KiB. */
const LARGE_FILE_ID = '00000000-0000-4000-8000-00000000000f';
const LARGE_FILE_BYTES = 128 * 65_536;
/** Resolves once `n` count calls have reached the peer. */
let onReached: () => void = () => undefined;

const peers = stubPeersForSuite({
  identity: {
    async resolveSession(req) {
      reached.sessionLookups += 1;
      return tokenIsUser.resolveSession(req);
    },
    async resolveSessions(req) {
      reached.sessionLookups += 1;
      return tokenIsUser.resolveSessions(req);
    },
    async getUsers({ ids }) {
      return { users: ids.map((id) => ({ id, email: `${id}@example.com`, visibleEmail: false })) };
    },
    // A password check (identity's scrypt), held until the test lets it end.
    async login() {
      reached.logins += 1;
      onReached();
      await logins.opened;
      return { token: 'a-session', expiresAt: new Date(Date.now() + 3_600_000) };
    },
  },
  cards: {
    async countCards() {
      reached.counts += 1;
      onReached();
      await counts.opened;
      return { totalCount: 7 };
    },
    async getCard({ cardId }) {
      reached.cards += 1;
      onReached();
      const at = new Date('2026-11-25T00:00:00.000Z');
      return { id: cardId, authorId: 'author', content: unreadable, cardHtml: unreadable, link: '', totalUpvotes: 0, totalDownvotes: 0, createdAt: at, updatedAt: at, tags: [], private: false };
    },
    // A bookmark lookup answered in two pages: the first at once, the second once the test lets it.
    async findCardCollections({ cardIds, pageToken }) {
      reached.bookmarkPages += 1;
      if (pageToken === '') return { entries: [{ cardId: cardIds[0]!, collectionIds: ['first-page'] }], nextPageToken: 'second' };
      await bookmarkPages.opened;
      return { entries: [{ cardId: cardIds[0]!, collectionIds: ['second-page'] }], nextPageToken: '' };
    },
  },
  files: {
    // A public file of ~8 MB: far more than the connection's buffers take from a client that reads none of it.
    async *readFile({ fileId }) {
      const at = new Date('2026-11-25T00:00:00.000Z');
      yield { part: { $case: 'file', value: { id: fileId, userId: 'owner', fileName: 'large.pdf', mimeType: 'application/pdf', size: LARGE_FILE_BYTES, private: false, createdAt: at, updatedAt: at, tags: [], ingestionStatus: 'done' } } };
      for (let sent = 0; sent < LARGE_FILE_BYTES; sent += 65_536) yield { part: { $case: 'chunk', value: Buffer.alloc(65_536, 7) } };
    },
  },
  search: {
    async semanticSearch() {
      reached.searches += 1;
      onReached();
      await searches.opened;
      return { hits: [], totalPages: 0 };
    },
  },
});

let gateway: GatewayInFront;
let base: string;

/** The gateway in front of the peers with these request bounds (the calls' deadline 60 s, longer than any test). */
const gatewayWith = (requestAdmission: GatewayAppOptions['requestAdmission'], app: Partial<GatewayAppOptions> = {}) =>
  gatewayInFrontOf(peers.address, { deadlineMs: 60_000, app: { requestAdmission, ...app } });

beforeEach(async () => {
  counts = gate();
  searches = gate();
  logins = gate();
  bookmarkPages = gate();
  reached.bookmarkPages = 0;
  reached.logins = 0;
  reached.counts = 0;
  reached.searches = 0;
  reached.cards = 0;
  reached.sessionLookups = 0;
  gateway = await gatewayWith({ atOnce: 2, heavyAtOnce: 1, queue: 2, queueWaitMs: 600_000, perClient: 3 });
  base = gateway.base;
});
afterEach(async () => {
  counts.open();
  searches.open();
  logins.open();
  bookmarkPages.open();
  await gateway.close();
});

/** Resolves once the peers have been reached this often. */
function untilReached(want: { counts?: number; searches?: number; cards?: number; logins?: number }): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (reached.counts >= (want.counts ?? 0) && reached.searches >= (want.searches ?? 0) && reached.cards >= (want.cards ?? 0) && reached.logins >= (want.logins ?? 0)) resolve();
    };
    onReached = check;
    check();
  });
}

const as = (user: string, init: RequestInit = {}) => ({ ...init, headers: { ...(init.headers as Record<string, string>), cookie: `ai-editor=${user}` } });
const count = (user: string, signal?: AbortSignal) => fetch(`${base}/api/card/count`, as(user, { signal }));
const searchAs = (user: string) =>
  fetch(`${base}/api/card/search/1`, as(user, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'river' }) }));

/** Resolves once the gateway's request bound holds `n` requests waiting in `line` (its /metrics gauge). */
async function untilWaiting(line: 'light' | 'heavy', n: number, at = base): Promise<void> {
  await until(async () => new RegExp(`^http_requests_waiting\\{line="${line}"\\} ${n}$`, 'm').test(await (await fetch(`${at}/metrics`)).text()));
}

/** Resolves once the gateway's request bound serves `n` requests in `line` (its /metrics gauge). */
async function untilInFlight(at: string, line: 'light' | 'heavy', n: number): Promise<void> {
  await until(async () => new RegExp(`^http_requests_in_flight\\{line="${line}"\\} ${n}$`, 'm').test(await (await fetch(`${at}/metrics`)).text()));
}

describe('the gateway serves at most HTTP_REQUESTS_AT_ONCE API requests, with a bounded line', () => {
  test('past the slots and the line a request is answered 503 {"message"} with Retry-After at once; those under way are all answered once the peers are', async () => {
    const held = [count('u1'), count('u2')];
    await untilReached({ counts: 2 });
    const waiting = [count('u3'), count('u4')];
    await untilWaiting('light', 2);
    // The two in line are not run while the slots are taken; one more is refused without waiting.
    const refused = await count('u5');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('2');
    expect(await refused.json()).toEqual({ message: SERVER_BUSY_MESSAGE });
    expect(reached.counts).toBe(2);
    counts.open();
    const answers = await Promise.all([...held, ...waiting]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(await Promise.all(answers.map((a) => a.json()))).toEqual(Array(4).fill({ total_count: 7 }));
    // Once the flood is over everyone is served again.
    expect((await count('u5')).status).toBe(200);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^http_requests_refused_total\{line="light",status="503"\} 1$/m);
  });

  test("a request refused because its line is full is refused before its session is looked up: a flood that ignores Retry-After costs identity nothing", async () => {
    const held = [count('u1'), count('u2')];
    await untilReached({ counts: 2 });
    const waiting = [count('u3'), count('u4')];
    await untilWaiting('light', 2);
    const lookups = reached.sessionLookups;
    // Ten refusals, each signed in with a session identity was never asked about (before: one lookup each).
    const refused = await Promise.all(Array.from({ length: 10 }, (_, i) => count(`flood-${i}`)));
    expect(refused.map((r) => r.status)).toEqual(Array(10).fill(503));
    expect(refused.map((r) => r.headers.get('retry-after'))).toEqual(Array(10).fill('2'));
    expect(await Promise.all(refused.map((r) => r.json()))).toEqual(Array(10).fill({ message: SERVER_BUSY_MESSAGE }));
    expect(reached.sessionLookups).toBe(lookups);
    // A search has a line of its own, still open: it is looked up and served.
    const search = searchAs('searcher');
    await untilReached({ searches: 1 });
    expect(reached.sessionLookups).toBeGreaterThan(lookups);
    searches.open();
    counts.open();
    expect((await search).status).toBe(200);
    expect((await Promise.all([...held, ...waiting])).map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^http_requests_refused_total\{line="light",status="503"\} 10$/m);
  });

  test('health and readiness probes never wait behind API requests: with both lines full, /livez, /healthz and /metrics answer at once', async () => {
    const held = [count('u1'), count('u2'), searchAs('s1')];
    await untilReached({ counts: 2, searches: 1 });
    const waiting = [count('u3'), count('u4'), searchAs('s2'), searchAs('s3')];
    await untilWaiting('light', 2);
    await untilWaiting('heavy', 2);
    expect((await count('u5')).status).toBe(503);
    // Outside /api: not counted, never in line (a guard of the design: request-admission is mounted on /api only).
    const live = await fetch(`${base}/livez`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${base}/healthz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ok' });
    expect((await fetch(`${base}/metrics`)).status).toBe(200);
    counts.open();
    searches.open();
    expect((await Promise.all([...held, ...waiting])).map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 200]);
  });

  test("one client's requests beyond HTTP_REQUESTS_PER_CLIENT are answered 429 with Retry-After; another client still gets a slot in line", async () => {
    const flood = [count('flooder'), count('flooder')];
    await untilReached({ counts: 2 });
    const inLine = count('flooder');
    await untilWaiting('light', 1);
    const own = await count('flooder');
    expect(own.status).toBe(429);
    expect(own.headers.get('retry-after')).toBe('2');
    expect(await own.json()).toEqual({ message: OWN_REQUESTS_BUSY_MESSAGE });
    // The line still has room for someone else.
    const other = count('someone-else');
    await untilWaiting('light', 2);
    counts.open();
    expect((await Promise.all([...flood, inLine, other])).map((a) => a.status)).toEqual([200, 200, 200, 200]);
  });

  test('searches wait in a line of their own: with every search slot and its line taken, a cheap read is still served', async () => {
    const heldSearch = searchAs('s1');
    await untilReached({ searches: 1 });
    const waitingSearches = [searchAs('s2'), searchAs('s3')];
    await untilWaiting('heavy', 2);
    const refusedSearch = await searchAs('s4');
    expect(refusedSearch.status).toBe(503);
    expect(refusedSearch.headers.get('retry-after')).toBe('2');
    expect(await refusedSearch.json()).toEqual({ message: SERVER_BUSY_MESSAGE });
    counts.open();
    const read = await count('reader');
    expect(read.status).toBe(200);
    expect(reached.searches).toBe(1);
    searches.open();
    expect((await Promise.all([heldSearch, ...waitingSearches])).map((a) => a.status)).toEqual([200, 200, 200]);
  });

  test('a request whose client went away while it waited in line is never run, and its place is free', async () => {
    const held = [count('u1'), count('u2')];
    await untilReached({ counts: 2 });
    const leaving = new AbortController();
    const gone = count('u3', leaving.signal).catch((err: unknown) => err);
    await untilWaiting('light', 1);
    const staying = count('u4');
    await untilWaiting('light', 2);
    leaving.abort();
    expect(((await gone) as Error).name).toBe('AbortError');
    await untilWaiting('light', 1);
    const next = count('u6');
    await untilWaiting('light', 2);
    counts.open();
    expect((await Promise.all([...held, staying, next])).map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(reached.counts).toBe(4);
  });
  test('pipelined requests whose client closed the connection give their slots back (Node never closes the queued answers)', async () => {
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => undefined);
    const request = `GET /api/card/count HTTP/1.1\r\nHost: ${hostname}:${port}\r\nCookie: ai-editor=piper\r\n\r\n`;
    // Two requests on one connection: both are run at once and take both slots, the second's answer queued behind the first's.
    socket.write(request + request);
    await untilReached({ counts: 2 });
    socket.destroy();
    // Both slots are free again: two other clients' requests reach the peer (before, the second slot was held for good,
    // the second of these waited in line until its wait ran out, and every later request too once all were taken).
    const after = [count('a1'), count('a2')];
    await untilReached({ counts: 4 });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^http_requests_in_flight\{line="light"\} 2$/m);
    expect(metrics).toMatch(/^http_requests_waiting\{line="light"\} 0$/m);
    counts.open();
    expect((await Promise.all(after)).map((a) => a.status)).toEqual([200, 200]);
    // The client's share is given back too: it may send as many again.
    expect((await Promise.all([count('piper'), count('piper'), count('piper')])).map((a) => a.status)).toEqual([200, 200, 200]);
  });
  test("a client's bodies arriving slowly hold only its own share, never a slot: another user's search is served meanwhile", async () => {
    const { hostname, port } = new URL(base);
    // Three searches whose bodies start and then stop (Node waits minutes for the rest): the client's whole share.
    const slow = [1, 2, 3].map(() => {
      const socket = connect(Number(port), hostname);
      socket.on('error', () => undefined);
      socket.write(`POST /api/card/search/1 HTTP/1.1\r\nHost: ${hostname}:${port}\r\nCookie: ai-editor=slow\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"content":`);
      return socket;
    });
    try {
      // Once the gateway has counted all three, the client's next request is refused as past its share.
      const probe = () => fetch(`${base}/api/card/not-a-card`, as('slow'));
      for (let answer = await probe(); answer.status !== 429; answer = await probe()) await answer.arrayBuffer();
      // Before, the first held the only search slot and the other two the whole line: this search was answered 503.
      const other = searchAs('someone-else');
      await untilReached({ searches: 1 });
      searches.open();
      expect((await other).status).toBe(200);
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^http_requests_in_flight\{line="heavy"\} 0$/m);
    } finally {
      slow.forEach((socket) => socket.destroy());
    }
  });
  test('a search whose path is written in other letter case (the router matches it all the same) waits in the search line', async () => {
    const heldSearch = searchAs('s1');
    await untilReached({ searches: 1 });
    const upper = fetch(`${base}/api/Card/Search/1`, as('s2', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'river' }) }));
    // Before, it was taken for a cheap read and served at once beside the held search, past HTTP_HEAVY_REQUESTS_AT_ONCE.
    await untilWaiting('heavy', 1);
    expect(reached.searches).toBe(1);
    searches.open();
    expect((await Promise.all([heldSearch, upper])).map((a) => a.status)).toEqual([200, 200]);
  });
});

/**
 * A raw connection to `base` reading nothing (paused) until the test resumes it; `socketClosed` resolves once the gateway
 * closed it (seen once resumed). `head(path)` is a GET's head as `user`, to write on it, pipelined if several.
 */
function pausedConnection(base: string, user: string) {
  const { hostname, port } = new URL(base);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  socket.pause();
  const socketClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const head = (path: string, headers = '') => `GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nCookie: ai-editor=${user}\r\n${headers}\r\n`;
  return { socket, socketClosed, head };
}

describe('an answer its client takes none of for HTTP_ANSWER_IDLE_MS is cut and its slot given back', () => {
  test('a client that asks for a large answer and never reads it holds its slot only that long: the next request is then served', async () => {
    // One slot, and a bound short enough for a test (the setting's floor is 1 s; the default 30 s).
    const oneSlot = await gatewayWith({ atOnce: 1, heavyAtOnce: 1, queue: 4, queueWaitMs: 600_000, perClient: 4, answerIdleMs: 200 });
    const oneSlotBase = oneSlot.base;
    // Reads nothing: what the gateway writes stays in the connection's buffers, then in its own.
    const { socket, socketClosed, head } = pausedConnection(oneSlotBase, 'never-reads');
    try {
      counts.open();
      socket.write(head(`/api/card/${LARGE_CARD_ID}`, 'X-Request-Id: never-reads-1\r\n'));
      await untilReached({ cards: 1 });
      // Another user's read waits for the only slot. Before, it waited for good (as long as the connection stayed open).
      const other = await fetch(`${oneSlotBase}/api/card/count`, as('someone-else'));
      expect(other.status).toBe(200);
      expect(await other.json()).toEqual({ total_count: 7 });
      // The reader's connection was cut (it sees the end once it reads again), counted, and logged with its request id.
      socket.resume();
      await socketClosed;
      expect(await (await fetch(`${oneSlotBase}/metrics`)).text()).toMatch(/^http_answers_cut_total 1$/m);
      const line = oneSlot.logged.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.requestId === 'never-reads-1');
      expect(line).toMatchObject({ level: 30, path: `/api/card/${LARGE_CARD_ID}`, idleMs: 200 });
      expect(line?.unsentBytes).toBeGreaterThan(0);
    } finally {
      socket.destroy();
      await oneSlot.close();
    }
  });

  test('a large answer pipelined behind another is cut too when its client reads none of it (the first answer sent does not clear its bound)', async () => {
    const twoSlots = await gatewayWith({ atOnce: 2, heavyAtOnce: 1, queue: 4, queueWaitMs: 600_000, perClient: 4, answerIdleMs: 200 });
    const twoSlotsBase = twoSlots.base;
    const { socket, socketClosed, head } = pausedConnection(twoSlotsBase, 'piper');
    try {
      // The count is held, so the card's answer is worked out first and waits for the connection behind it.
      socket.write(head('/api/card/count') + head(`/api/card/${LARGE_CARD_ID}`));
      await untilReached({ counts: 1, cards: 1 });
      counts.open();
      // Before, the count's answer, once sent, cleared the bound the card's answer had set on taking the connection:
      // that answer was never cut and held its slot for good.
      await until(async () => /^http_answers_cut_total 1$/m.test(await (await fetch(`${twoSlotsBase}/metrics`)).text()));
      socket.resume();
      await socketClosed;
      expect(await (await fetch(`${twoSlotsBase}/metrics`)).text()).toMatch(/^http_requests_in_flight\{line="light"\} 0$/m);
    } finally {
      socket.destroy();
      await twoSlots.close();
    }
  });

  test("a file read pipelined behind an answer keeps its own idle bound when it equals this one (FILE_READ_IDLE_MS = HTTP_ANSWER_IDLE_MS)", async () => {
    const sameBounds = await gatewayWith(
      { atOnce: 2, heavyAtOnce: 1, queue: 4, queueWaitMs: 600_000, perClient: 4, answerIdleMs: 200 },
      { fileReads: { atOnce: 1, perClient: 1, callMs: 60_000, idleMs: 200 } },
    );
    const sameBase = sameBounds.base;
    // The file read sets its bound once its header has come (res.setTimeout): known here, the gateway being in process.
    let boundSet!: () => void;
    const fileBoundSet = new Promise<void>((resolve) => (boundSet = resolve));
    const setTimeoutOf = ServerResponse.prototype.setTimeout;
    const spy = jest.spyOn(ServerResponse.prototype, 'setTimeout').mockImplementation(function (this: ServerResponse, ms: number, callback?: () => void) {
      if ((this.req as { originalUrl?: string }).originalUrl?.startsWith('/api/file/')) boundSet();
      return setTimeoutOf.call(this, ms, callback);
    });
    const { socket, socketClosed, head } = pausedConnection(sameBase, 'piper');
    try {
      // The count is held, so the file read, behind it on the connection, has its header and its bound set first.
      socket.write(head('/api/card/count') + head(`/api/file/${LARGE_FILE_ID}`));
      await untilReached({ counts: 1 });
      await fileBoundSet;
      counts.open();
      // Another client's file read is answered 503 while the only read slot is held, 200 once it is given back. Before,
      // the count's answer, once sent, cleared the connection's timeout (its value was this bound's): the file read,
      // never read, was never cut and held the only read slot for good.
      for (;;) {
        const other = await fetch(`${sameBase}/api/file/${LARGE_FILE_ID}`, as('someone-else'));
        const body = await other.arrayBuffer();
        if (other.status === 200) {
          expect(body.byteLength).toBeGreaterThan(LARGE_FILE_BYTES);
          break;
        }
        expect(other.status).toBe(503);
      }
      // The reader's connection was cut (it sees the end once it reads again).
      socket.resume();
      await socketClosed;
    } finally {
      spy.mockRestore();
      socket.destroy();
      await sameBounds.close();
    }
  });

  test('a request whose answer the gateway is still working out is not cut, however long past the bound it takes', async () => {
    const oneSlot = await gatewayWith({ atOnce: 1, heavyAtOnce: 1, queue: 4, queueWaitMs: 600_000, perClient: 4, answerIdleMs: 50 });
    const oneSlotBase = oneSlot.base;
    // The bound fires as the connection's idle timeout (res.setTimeout): Node then emits 'timeout' on the server too.
    let boundReached!: () => void;
    const reachedBound = new Promise<void>((resolve) => (boundReached = resolve));
    oneSlot.server.once('timeout', () => boundReached());
    try {
      const held = fetch(`${oneSlotBase}/api/card/count`, as('patient'));
      await untilReached({ counts: 1 });
      // The count is held until the test lets the peer answer, after the bound has fired on its idle connection (before,
      // a 200 ms pause that a loaded machine could end before the 50 ms bound had fired: then it passed without testing).
      await reachedBound;
      counts.open();
      const answer = await held;
      expect(answer.status).toBe(200);
      expect(await answer.json()).toEqual({ total_count: 7 });
      expect(await (await fetch(`${oneSlotBase}/metrics`)).text()).toMatch(/^http_answers_cut_total 0$/m);
    } finally {
      await oneSlot.close();
    }
  });
});

describe("a login whose client left holds its heavy slot until its password check has ended", () => {
  /** A gateway with one heavy slot and a line of two whose access lines land in `lines()`. */
  async function loggingGateway() {
    const logging = await gatewayWith({ atOnce: 2, heavyAtOnce: 1, queue: 2, queueWaitMs: 600_000, perClient: 3 }, { accessLogLevel: 'info' });
    return { logging, lines: () => logging.logged.map((line) => JSON.parse(line) as Record<string, unknown>) };
  }
  const loginAt = (at: string, email: string, signal?: AbortSignal) =>
    fetch(`${at}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'wrong password' }), signal });
  /** Resolves once the gateway has seen `n` login clients leave before their answer (their access lines: 499; nothing else is POSTed). */
  async function untilLoginsGone(lines: () => Array<Record<string, unknown>>, n: number): Promise<void> {
    // The ones that left while in line never reached the router: their lines name no route ("unmatched").
    await until(() => lines().filter((line) => line.method === 'POST' && line.status === 499).length >= n);
  }

  test('the next login in line waits for it, and the logins whose clients left while waiting are never checked (a flood whose clients all left)', async () => {
    const { logging, lines } = await loggingGateway();
    const at = logging.base;
    try {
      const leaving = [new AbortController(), new AbortController(), new AbortController()];
      const sent = leaving.map((client, i) => loginAt(at, `flood-${i}@example.com`, client.signal).catch((err: unknown) => err));
      await untilReached({ logins: 1 });
      await untilWaiting('heavy', 2, at);
      // The first login's client leaves while identity still checks its password.
      leaving[0]!.abort();
      await untilLoginsGone(lines, 1);
      // Its work goes on, so it keeps the slot: the next login in line is not started beside it (before, the client's
      // close gave the slot back and the second password check started at once: one in line, two at identity).
      const held = await (await fetch(`${at}/metrics`)).text();
      expect(held).toMatch(/^http_requests_in_flight\{line="heavy"\} 1$/m);
      expect(held).toMatch(/^http_requests_waiting\{line="heavy"\} 2$/m);
      expect(reached.logins).toBe(1);
      // The flood ends: the clients waiting in line leave too, then the first password check ends.
      leaving[1]!.abort();
      leaving[2]!.abort();
      await untilLoginsGone(lines, 3);
      await untilWaiting('heavy', 0, at);
      logins.open();
      await untilInFlight(at, 'heavy', 0);
      expect((await Promise.all(sent)).map((err) => (err as Error).name)).toEqual(['AbortError', 'AbortError', 'AbortError']);
      // No password was checked for the two clients that left while in line.
      expect(reached.logins).toBe(1);
      // The slot and the clients' shares are free again: the next login is served.
      const next = await loginAt(at, 'back@example.com');
      expect(next.status).toBe(204);
      expect(reached.logins).toBe(2);
    } finally {
      await logging.close();
    }
  });
});

describe('a pipelined login whose client closed the connection holds its heavy slot until its password check has ended', () => {
  test('its answer, queued behind a read on the connection, is closed with the connection, but the next login waits for the check', async () => {
    const { socket, head } = pausedConnection(base, 'piper');
    try {
      // A read held at the peer holds the connection; the login behind it is admitted and its password check begun, its
      // answer queued behind the read's.
      const loginBody = JSON.stringify({ email: 'piped@example.com', password: 'wrong password' });
      const { hostname, port } = new URL(base);
      socket.write(head('/api/card/count') + `POST /api/auth HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${loginBody.length}\r\n\r\n${loginBody}`);
      await untilReached({ counts: 1, logins: 1 });
      // The client closes the connection: the read's slot is given back (cut with its client), the queued answer is
      // closed with the connection (queued-responses.ts), the password check goes on.
      socket.destroy();
      await untilInFlight(base, 'light', 0);
      // Before, closing the queued answer (res.destroy) counted as the end of the login's work: its slot was given back
      // while identity still checked the password, and the next login started beside it.
      expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^http_requests_in_flight\{line="heavy"\} 1$/m);
      const next = fetch(`${base}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'next@example.com', password: 'wrong password' }) });
      await untilWaiting('heavy', 1);
      expect(reached.logins).toBe(1);
      logins.open();
      expect((await next).status).toBe(204);
      expect(reached.logins).toBe(2);
    } finally {
      socket.destroy();
    }
  });
});

describe('a request in line whose client has hung up, its close not come yet, is not run when a slot is given to it', () => {
  test('a login in line whose connection can no longer be written to (Node ended it on its client\'s end) is never checked when a slot comes to it', async () => {
    const { hostname, port } = new URL(base);
    // Password checks are answered at once here: what counts is which of them reach identity.
    logins.open();
    // The gateway's own end of each connection, by the client's port.
    const serverSide = new Map<number, import('node:net').Socket>();
    const onConnection = (socket: import('node:net').Socket) => serverSide.set(socket.remotePort!, socket);
    gateway.server.on('connection', onConnection);
    const opened = () =>
      new Promise<import('node:net').Socket>((resolve) => {
        const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true }, () => resolve(socket));
        socket.on('error', () => undefined);
      });
    const searching = await opened();
    const loginBody = JSON.stringify({ email: 'hung-up@example.com', password: 'wrong password' });
    const hungUp = await opened();
    try {
      // The only heavy slot: a search held at the peer. Behind it in line, a login sent whole.
      const searchBody = JSON.stringify({ content: 'river' });
      searching.write(`POST /api/card/search/1 HTTP/1.1\r\nHost: ${hostname}:${port}\r\nCookie: ai-editor=searcher\r\nContent-Type: application/json\r\nContent-Length: ${searchBody.length}\r\n\r\n${searchBody}`);
      await untilReached({ searches: 1 });
      hungUp.write(`POST /api/auth HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${loginBody.length}\r\n\r\n${loginBody}`);
      await untilWaiting('heavy', 1);
      // The login's connection is ended on the gateway's side, as Node ends it on reading its client's end (its server
      // keeps no half-open connection, httpAllowHalfOpen false): nothing can be written to that client any more, and
      // the answer's 'close' comes only once the connection has closed, a few turns later when the client did end it.
      // Ended here, with the client's side still open, that window stays open for the test. The search's client then
      // leaves: its close gives the only heavy slot back at once (a search is cut with its client), to the login in line.
      const hungUpSide = serverSide.get(hungUp.localPort!)!;
      hungUpSide.end();
      expect(hungUpSide.writable).toBe(false);
      searching.destroy();
      await untilWaiting('heavy', 0);
      // The client ends its side too: the connection closes and the login's 'close' comes.
      hungUp.end();
      await untilInFlight(base, 'heavy', 0);
      // The next login is served; the one whose client had hung up was never checked (before: checked first, for nobody:
      // a flood's clients leaving together had each slot given back go to a login whose client was gone).
      const next = await fetch(`${base}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'next@example.com', password: 'wrong password' }) });
      expect(next.status).toBe(204);
      expect(reached.logins).toBe(1);
    } finally {
      gateway.server.off('connection', onConnection);
      searching.destroy();
      hungUp.destroy();
    }
  });
});

describe('a write whose answer is streamed gives its slot back when its client leaves mid-answer', () => {
  test('a bookmark lookup (POST, answered in pages) whose client left after the first page: the slot and the share come back once the route has stopped', async () => {
    // One slot, and a share of one request per client.
    const oneSlot = await gatewayWith({ atOnce: 1, heavyAtOnce: 1, queue: 2, queueWaitMs: 600_000, perClient: 1 }, { accessLogLevel: 'info' });
    const at = oneSlot.base;
    try {
      const leaving = new AbortController();
      const lookup = fetch(`${at}/api/card_collection/bookmark`, as('leaver', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ collection_ids: ['00000000-0000-4000-8000-000000000001'] }), signal: leaving.signal }));
      // The first page has been read and written; the second is held at the peer. The client leaves mid-answer.
      await until(() => reached.bookmarkPages >= 2);
      leaving.abort();
      await lookup.then((answer) => answer.arrayBuffer()).catch(() => undefined);
      // The gateway has seen its client leave (its access line: aborted, after the 200 it had begun).
      await until(() => oneSlot.logged.some((line) => (JSON.parse(line) as { aborted?: boolean }).aborted === true));
      bookmarkPages.open();
      counts.open();
      // The route stops with its client gone (its pipeline ends early): the only slot is free again. Before, a POST's
      // slot waited for an end of the answer (res.end, res.destroy) that a pipeline cut by its client's close never
      // makes: the slot and the client's share were held for good (this wait never ended), and every other API
      // request waited in line or, from that client, was answered 429.
      await untilInFlight(at, 'light', 0);
      const after = await fetch(`${at}/api/card/count`, as('leaver'));
      expect(after.status).toBe(200);
      expect(await after.json()).toEqual({ total_count: 7 });
    } finally {
      await oneSlot.close();
    }
  });
});

describe('a write whose route fails with the client-gone error after its client left gives its slot back', () => {
  test('a login whose password check ends in an AbortError once its client has gone: the only heavy slot is free for the next login', async () => {
    // The gateway with its own identity client (no peer): the first password check waits until the test lets it end,
    // then fails as a call cut by its signal does (AbortError), with its client gone; the next one succeeds.
    let checks = 0;
    const checkMayEnd = gate();
    const login = async () => {
      checks += 1;
      if (checks > 1) return { token: 'a-session', expiresAt: new Date(Date.now() + 3_600_000) };
      await checkMayEnd.opened;
      throw Object.assign(new Error('The operation was aborted'), { name: 'AbortError' });
    };
    const app = appWithoutServices({
      clients: { identity: { login } } as unknown as GatewayClients,
      // One heavy slot and no line: while it is held, the next login is answered 503 at once.
      requestAdmission: { atOnce: 2, heavyAtOnce: 1, queue: 0, queueWaitMs: 600_000, perClient: 4 },
    });
    const { server, base: at } = await listening(createServer(app));
    let answersClosed = 0;
    server.on('request', (_req, res: ServerResponse) => res.once('close', () => (answersClosed += 1)));
    const loginAt = (email: string, signal?: AbortSignal) =>
      fetch(`${at}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: 'a password' }), signal });
    try {
      const leaving = new AbortController();
      const first = loginAt('leaves@example.com', leaving.signal).catch((err: unknown) => err);
      await until(() => checks === 1);
      // The client leaves while the check runs; the gateway has seen it go (the answer's 'close').
      leaving.abort();
      await until(() => answersClosed === 1);
      expect(((await first) as Error).name).toBe('AbortError');
      // The check ends in an AbortError: the error handler's client-gone branch, with the answer destroyed already.
      checkMayEnd.open();
      // Before, nothing ended or destroyed the answer any more (destroyed already), so the login's work never counted
      // as ended: its heavy slot was held for good and every later login, search and card write was refused 503.
      const next = await loginAt('next@example.com');
      expect({ status: next.status, body: next.status === 204 ? '' : await next.text() }).toEqual({ status: 204, body: '' });
      expect(await (await fetch(`${at}/metrics`)).text()).toMatch(/^http_requests_in_flight\{line="heavy"\} 0$/m);
    } finally {
      await closed(server);
    }
  });
});
