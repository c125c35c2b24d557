// Every listing of the interface on very big single things, through a running all-in-one's gateway, on a data dir
// filled by bench/big-accounts-fill.ts (ids from its output): per listing, the first, a middle and the last page
// (listings the interface answers whole, once), sequential requests on one kept-alive connection, p50 and p99 in ms
// and the answer's size. Then the writes that touch the big things, each while a cheap GET (`GET /api/card/count`)
// is sent one after another on another connection: the write's time, and the longest and p50 of those GETs while it
// ran (what everyone else notices of it). The writes change the data: fill a fresh copy of the data dir before a
// second run. The process's resident memory (the gateway's /metrics) before and after.
// With --search also the searches in the big collection's scope (semantic and full-text), which need the search index
// built first (the fill writes no events): rebuild-search-index on the data dir while the all-in-one runs.
// Usage: pnpm exec tsx bench/big-accounts-bench.ts <port> <ids.json> [requests=30] [--no-writes] [--search] [--top-users-first]
import { readFileSync } from 'node:fs';

const port = Number(process.argv[2]);
const ids = JSON.parse(readFileSync(process.argv[3]!, 'utf8')) as Record<string, string>;
const requests = Number(process.argv[4] ?? 30);
const withWrites = !process.argv.includes('--no-writes');
const withSearch = process.argv.includes('--search');
const base = `http://127.0.0.1:${port}`;
const PASSWORD = 'long enough';

async function login(email: string): Promise<string> {
  const res = await fetch(`${base}/api/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password: PASSWORD }) });
  if (res.status !== 204) throw new Error(`login ${email}: ${res.status} ${await res.text()}`);
  return res.headers.get('set-cookie')!.split(';')[0]!;
}

interface Call {
  method?: string;
  path: string;
  cookie?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

async function call({ method = 'GET', path, cookie, body, headers = {} }: Call): Promise<{ status: number; text: string; ms: number; res: Response }> {
  const started = performance.now();
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(cookie ? { cookie } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}), origin: base, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, ms: performance.now() - started, res };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function timed(label: string, c: Call, n = requests): Promise<void> {
  const first = await call(c);
  if (first.status >= 400) throw new Error(`${label}: ${first.status} ${first.text.slice(0, 200)}`);
  for (let i = 0; i < 2; i++) await call(c);
  const times: number[] = [];
  for (let i = 0; i < n; i++) times.push((await call(c)).ms);
  times.sort((a, b) => a - b);
  const summary = summarize(first.text);
  console.log(`${label.padEnd(58)} p50 ${quantile(times, 0.5).toFixed(1).padStart(8)}  p99 ${quantile(times, 0.99).toFixed(1).padStart(8)} ms  ${(first.text.length / 1024).toFixed(0).padStart(6)} KB  ${summary}`);
}

function summarize(text: string): string {
  if (text === '') return '';
  const body = JSON.parse(text) as unknown;
  if (Array.isArray(body)) return `${body.length} items`;
  const o = body as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of ['total_cards_created', 'total_pages', 'total_user_pages']) if (key in o) parts.push(`${key} ${String(o[key])}`);
  for (const key of ['cards', 'users', 'bookmarks', 'score_cards']) {
    if (Array.isArray(o[key])) {
      const list = o[key] as unknown[];
      const inner = key === 'bookmarks' ? list.reduce((n: number, e) => n + ((e as { metadata?: unknown[] }).metadata?.length ?? 0), 0) : list.length;
      parts.push(`${key} ${list.length}${key === 'bookmarks' ? ` (${inner} cards)` : ''}`);
    }
  }
  return parts.join(', ');
}

async function pages(label: string, pathOf: (page: number) => string, lastPage: number, cookie?: string): Promise<void> {
  const middle = Math.max(1, Math.floor(lastPage / 2));
  for (const [name, page] of [['first', 1], ['middle', middle], ['last', lastPage]] as const) await timed(`${label} ${name} (${page})`, { path: pathOf(page), cookie });
}

async function rssMb(): Promise<string> {
  const text = (await call({ path: '/metrics' })).text;
  const match = /^process_resident_memory_bytes (\d+)/m.exec(text);
  return match ? (Number(match[1]) / 1048576).toFixed(0) : '?';
}

/** Runs a write while GET /api/card/count is sent one after another; the write's time and those GETs' p50 and max. */
async function duringWrite(label: string, write: Call, expect: number): Promise<void> {
  let done = false;
  const gets: number[] = [];
  const probe = (async () => {
    while (!done) gets.push((await call({ path: '/api/card/count' })).ms);
  })();
  await new Promise((r) => setTimeout(r, 200));
  const result = await call(write);
  done = true;
  await probe;
  if (result.status !== expect) throw new Error(`${label}: ${result.status} ${result.text.slice(0, 200)}`);
  const sorted = [...gets].sort((a, b) => a - b);
  console.log(`${label.padEnd(58)} write ${result.ms.toFixed(0).padStart(6)} ms; GET /api/card/count meanwhile: ${gets.length} answered, p50 ${quantile(sorted, 0.5).toFixed(1)}, max ${sorted[sorted.length - 1]!.toFixed(1)} ms`);
}

/** A cheap GET one after another for `ms`: p50 and max (the event consumers' work after the writes runs meanwhile). */
async function probeFor(label: string, ms: number): Promise<void> {
  const gets: number[] = [];
  const until = performance.now() + ms;
  while (performance.now() < until) gets.push((await call({ path: '/api/card/count' })).ms);
  const sorted = [...gets].sort((x, y) => x - y);
  console.log(`${label.padEnd(58)} ${gets.length} answered, p50 ${quantile(sorted, 0.5).toFixed(1)}, max ${sorted[sorted.length - 1]!.toFixed(1)} ms`);
}

/**
 * --top-users-first: only the first `requests` GET /api/top_users/:page (pages 1, 2, ... in turn) of an all-in-one just
 * started on a fresh copy of the filled data dir (the 50,000 authors' join dates not yet filled), each time printed.
 */
async function firstTopUsers(): Promise<void> {
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const res = await call({ path: `/api/top_users/${i + 1}` });
    if (res.status !== 200) throw new Error(`top users: ${res.status} ${res.text.slice(0, 200)}`);
    times.push(res.ms);
  }
  console.log(`first ${requests} GET /api/top_users/1..${requests}: ${times.map((t) => t.toFixed(0)).join(', ')} ms`);
  const sorted = [...times].sort((x, y) => x - y);
  console.log(`p50 ${quantile(sorted, 0.5).toFixed(1)}  p99 ${quantile(sorted, 0.99).toFixed(1)}  max ${sorted[sorted.length - 1]!.toFixed(1)} ms`);
}

async function main(): Promise<void> {
  if (process.argv.includes('--top-users-first')) return firstTopUsers();
  const [a, b, n] = [await login('a@example.com'), await login('b@example.com'), await login('n@example.com')];
  console.log(`resident memory before: ${await rssMb()} MB`);
  const userPage = JSON.parse((await call({ path: `/api/user/${ids.a}/1` })).text) as { total_pages: number };
  const ownerPage = JSON.parse((await call({ path: `/api/user/${ids.a}/1`, cookie: a })).text) as { total_pages: number };
  await pages("user A's cards, anyone", (p) => `/api/user/${ids.a}/${p}`, userPage.total_pages);
  await pages("user A's cards, A", (p) => `/api/user/${ids.a}/${p}`, ownerPage.total_pages, a);
  const top = JSON.parse((await call({ path: '/api/top_users/1' })).text) as { total_user_pages: number };
  await pages('top users', (p) => `/api/top_users/${p}`, top.total_user_pages);
  const coll = JSON.parse((await call({ path: `/api/card_collection/${ids.bigCollection}/1` })).text) as { total_pages: number };
  const collOwner = JSON.parse((await call({ path: `/api/card_collection/${ids.bigCollection}/1`, cookie: a })).text) as { total_pages: number };
  await pages('collection of 10,000, anyone', (p) => `/api/card_collection/${ids.bigCollection}/${p}`, coll.total_pages);
  await pages('collection of 10,000, A', (p) => `/api/card_collection/${ids.bigCollection}/${p}`, collOwner.total_pages, a);
  const fileColl = JSON.parse((await call({ path: `/api/card_collection/${ids.fileCollection}/1` })).text) as { total_pages: number };
  await pages("file's collection, anyone", (p) => `/api/card_collection/${ids.fileCollection}/${p}`, fileColl.total_pages);
  if (withSearch) {
    // Needs the search index built (the fill writes no events): run rebuild-search-index on the data dir first.
    for (const kind of ['search', 'fulltextsearch']) {
      const body = { content: 'library card article excerpt', collection_id: ids.bigCollection };
      const first = JSON.parse((await call({ method: 'POST', path: `/api/card_collection/${kind}/1`, body })).text) as { total_pages: number };
      for (const [name, page] of [['first', 1], ['middle', Math.max(1, Math.floor(first.total_pages / 2))], ['last', Math.max(1, first.total_pages)]] as const) {
        await timed(`collection ${kind} of 10,000, anyone ${name} (${page})`, { method: 'POST', path: `/api/card_collection/${kind}/${page}`, body });
      }
    }
  }
  await timed("user A's collections, anyone (whole)", { path: `/api/user/collections/${ids.a}` });
  await timed("user A's collections, A (whole)", { path: `/api/user/collections/${ids.a}`, cookie: a });
  await timed("user A's files, anyone (whole)", { path: `/api/user/files/${ids.a}` });
  await timed("user A's files, A (whole)", { path: `/api/user/files/${ids.a}`, cookie: a });
  await timed('notifications of N (whole)', { path: '/api/notifications', cookie: n }, Math.min(requests, 10));
  const tag = (await call({ path: '/api/notifications', cookie: n })).res.headers.get('etag');
  await timed('notifications of N, If-None-Match (304)', { path: '/api/notifications', cookie: n, headers: tag ? { 'if-none-match': tag } : {} });
  await timed('card with 2,000 collisions (GET /api/card/:id)', { path: `/api/card/${ids.root}`, cookie: b });
  await timed('bookmark lookup of 25 cards of A', { method: 'POST', path: '/api/card_collection/bookmark', cookie: a, body: { collection_ids: Array(25).fill(ids.aPublicCard).join(',') } });
  await timed('card count', { path: '/api/card/count' });
  await timed('GET /api/auth (cheap)', { path: '/api/auth', cookie: b });
  console.log(`resident memory after reads: ${await rssMb()} MB`);
  if (!withWrites) return;
  await duringWrite('mark all 30,000 notifications read (N)', { method: 'PUT', path: '/api/notifications/all', cookie: n }, 204);
  await duringWrite('vote on the card with 2,000 collisions (B)', { method: 'POST', path: '/api/vote', cookie: b, body: { card_metadata_id: ids.root, vote: true } }, 200);
  await duringWrite("make a card of A's 20,000 private (in the big collection)", { method: 'PUT', path: '/api/card/update', cookie: a, body: { card_uuid: ids.aPublicCard, private: true } }, 204);
  await duringWrite('delete the file whose collection holds 5,000 cards', { method: 'DELETE', path: `/api/file/${ids.fileId}`, cookie: a }, 204);
  await duringWrite('delete the collection of 10,000 bookmarks', { method: 'DELETE', path: '/api/card_collection', cookie: a, body: { collection_id: ids.bigCollection } }, 204);
  // The event consumers' work after the writes (search, notifications) runs on: measure a cheap GET for a while more.
  await probeFor('GET /api/card/count for 5 s after the writes (consumers at work)', 5000);
  console.log(`resident memory after writes: ${await rssMb()} MB`);
}

void main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
