// Overload from outside: pushes one kind of request at a time (and a mix) past what the machine serves, at several
// connection counts, against a running gateway (the all-in-one), and prints what the clients got: throughput, p50/p99
// of the answers, status codes, answers that broke the contract (a 5xx other than 503, a 503/429 without Retry-After,
// an error body that is not JSON {"message"}), connections that ended without an answer (resets) or got none in 30 s
// (timeouts), and meanwhile what one quiet user got (GET /api/card/:id and /healthz from a separate process, one at a
// time), the gateway's memory and event-loop delay (/metrics) and, after each flood, how long until those two answer
// normally again.
//
// Seed first (a few thousand cards, users, votes, collections through the HTTP interface; invitation mail read from
// DATA_DIR/mail, so start the all-in-one without SMTP_URL and with generous auth limits for seeding):
//   pnpm exec tsx bench/overload-bench.ts seed http://localhost:4202 /tmp/data [cards=3000] [users=8] > seed.json
// then flood (a login flood also prints the password checks identity ran for clients that had left):
//   pnpm exec tsx bench/overload-bench.ts run http://localhost:4202 seed.json [seconds=10] [levels=50,200,1000] [kinds=read,...]
// Kinds: read, user-pages, top-users, search, collection-search, create, update, vote, bookmark, login, upload, mixed.
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';

interface Seed {
  users: { id: string; email: string; password: string; cookie: string }[];
  cards: { id: string; author: string }[];
  collections: { id: string; owner: string }[];
}

const VOCAB = (
  'river mountain library archive signal harbor lantern meadow orbit canvas granite velvet compass thunder willow ' +
  'crystal ember falcon glacier horizon island jasmine kernel lattice marble nectar oasis pepper quartz rhythm history ' +
  'science politics economy market trade bank money price energy water climate weather forest ocean city village farm ' +
  'school teacher student book paper letter word language music painting film theatre museum church castle king queen ' +
  'war peace treaty army ship train road bridge tower house garden kitchen bread cheese wine coffee tea sugar salt fish ' +
  'bird horse tree flower apple stone iron gold silver copper coal oil light fire sun moon star planet rocket engine ' +
  'machine computer network software data law court judge health doctor hospital medicine heart brain voice song dance'
).split(' ');
const QUERIES = ['river mountain library', 'harbor lantern', 'climate energy ocean', 'king queen castle war', 'rivr mountan', 'coffee bread cheese', 'doctor hospital medicine', 'computer network software'];
const pick = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)]!;
const cardText = (words = 90) => [`card-${randomUUID().slice(0, 12)}`, ...Array.from({ length: words }, () => pick(VOCAB))].join(' ');
const DOCX = readFileSync(join(__dirname, '../test/fixtures/documents/energy.docx')).toString('base64url');

async function call(base: string, method: string, path: string, body?: unknown, cookie?: string) {
  const res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json: any;
  try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
  return { status: res.status, text, json, setCookie: res.headers.get('set-cookie') ?? '' };
}

async function seed(base: string, dataDir: string, cardCount: number, userCount: number): Promise<Seed> {
  const mailDir = join(dataDir, 'mail');
  const users: Seed['users'] = [];
  for (let i = 0; i < userCount; i++) {
    const email = `overload${i}-${randomUUID().slice(0, 6)}@example.com`;
    const password = `pw-${randomUUID()}`;
    const invited = await call(base, 'POST', '/api/invitation', { email, referral_tokens: [] });
    if (invited.status !== 200) throw new Error(`invitation: ${invited.status} ${invited.text}`);
    let invitation: string | undefined;
    for (let t = 0; t < 200 && !invitation; t++) {
      for (const f of readdirSync(mailDir)) {
        const mail = readFileSync(join(mailDir, f), 'utf8').replace(/=\r?\n/g, '');
        if (mail.includes(email)) invitation = /register\/([0-9a-f-]{36})/.exec(mail)?.[1];
      }
      if (!invitation) await new Promise((r) => setTimeout(r, 100));
    }
    const registered = await call(base, 'POST', `/api/register/${invitation}`, { password, password_confirmation: password });
    if (registered.status !== 200) throw new Error(`register: ${registered.status} ${registered.text}`);
    const login = await call(base, 'POST', '/api/auth', { email, password });
    users.push({ id: registered.json.id, email, password, cookie: login.setCookie.split(';')[0]! });
  }
  const cards: Seed['cards'] = [];
  for (let i = 0; i < cardCount; i += 8) {
    const made = await Promise.all(
      Array.from({ length: Math.min(8, cardCount - i) }, async (_, j) => {
        const user = users[(i + j) % users.length]!;
        const body = { card_html: `<p>${cardText()}</p>`, link: Math.random() < 0.3 ? `https://example.com/${pick(VOCAB)}` : '', private: Math.random() < 0.1, tag_set: [pick(['news', 'science', 'history', 'art'])] };
        const res = await call(base, 'POST', '/api/card', body, user.cookie);
        return res.status === 200 ? { id: res.json.card_metadata.id as string, author: user.id } : undefined;
      }),
    );
    cards.push(...made.filter((c): c is Seed['cards'][number] => !!c));
  }
  for (const user of users) {
    const chosen = new Set<string>();
    while (chosen.size < Math.min(150, cards.length)) chosen.add(pick(cards).id);
    const ids = [...chosen];
    for (let k = 0; k < ids.length; k += 10) await Promise.all(ids.slice(k, k + 10).map((id) => call(base, 'POST', '/api/vote', { card_metadata_id: id, vote: Math.random() < 0.8 }, user.cookie)));
    for (let c = 0; c < 3; c++) await call(base, 'POST', '/api/card_collection', { name: `collection ${c} ${randomUUID().slice(0, 4)}`, is_public: c !== 2, description: 'seeded' }, user.cookie);
  }
  const collections: Seed['collections'] = [];
  for (const user of users) {
    const list = await call(base, 'GET', `/api/user/collections/${user.id}`, undefined, user.cookie);
    for (const collection of (list.json ?? []) as { id: string }[]) {
      collections.push({ id: collection.id, owner: user.id });
      for (let k = 0; k < 40; k += 10) await Promise.all(Array.from({ length: 10 }, () => call(base, 'POST', `/api/card_collection/${collection.id}`, { card_metadata_id: pick(cards).id }, user.cookie)));
    }
  }
  return { users, cards, collections };
}

type Request = { method: string; path: string; headers: Record<string, string>; body?: string };

/** One request of a kind, as a signed-in user (or anyone) would send it. */
function requestOf(kind: string, s: Seed, created: string[]): Request {
  // The first user is the quiet one (startProbe), never part of a flood.
  const user = pick(s.users.slice(1));
  const headers = { 'content-type': 'application/json', cookie: user.cookie };
  const json = (method: string, path: string, body: unknown): Request => ({ method, path, headers, body: JSON.stringify(body) });
  switch (kind) {
    case 'read': return { method: 'GET', path: `/api/card/${pick(s.cards).id}`, headers };
    case 'user-pages': return { method: 'GET', path: `/api/user/${pick(s.users.slice(1)).id}/${1 + Math.floor(Math.random() * 5)}`, headers };
    case 'top-users': return { method: 'GET', path: `/api/top_users/1`, headers };
    case 'search': return json('POST', `/api/card/${Math.random() < 0.5 ? 'search' : 'fulltextsearch'}/1`, { content: pick(QUERIES) });
    case 'collection-search': {
      const own = s.collections.filter((c) => c.owner === user.id);
      return json('POST', `/api/card_collection/${Math.random() < 0.5 ? 'search' : 'fulltextsearch'}/1`, { content: pick(QUERIES), collection_id: pick(own.length ? own : s.collections).id });
    }
    case 'create': return json('POST', '/api/card', { card_html: `<p>${cardText()}</p>`, link: '', private: false, tag_set: ['overload'] });
    case 'update': {
      const own = s.cards.filter((c) => c.author === user.id);
      return json('PUT', '/api/card/update', { card_uuid: pick(own).id, link: `https://example.com/${pick(VOCAB)}` });
    }
    case 'vote': return json('POST', '/api/vote', { card_metadata_id: pick(s.cards).id, vote: Math.random() < 0.7 });
    case 'bookmark': {
      const own = s.collections.filter((c) => c.owner === user.id);
      return json('POST', `/api/card_collection/${pick(own).id}`, { card_metadata_id: pick(s.cards).id });
    }
    case 'login': {
      // Mostly wrong passwords of unknown addresses (what a credential-stuffing flood sends), some right ones.
      const known = Math.random() < 0.2 ? user : undefined;
      return { method: 'POST', path: '/api/auth', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: known?.email ?? `nobody-${randomUUID().slice(0, 8)}@example.com`, password: known?.password ?? 'wrong password' }) };
    }
    case 'upload': return json('POST', '/api/file', { base64_docx_file: DOCX, file_name: `energy-${randomUUID().slice(0, 6)}.docx`, file_mime_type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', private: true });
    case 'mixed': {
      const roll = Math.random();
      const k = roll < 0.35 ? 'read' : roll < 0.5 ? 'search' : roll < 0.6 ? 'user-pages' : roll < 0.65 ? 'top-users' : roll < 0.75 ? 'vote' : roll < 0.82 ? 'create' : roll < 0.88 ? 'bookmark' : roll < 0.93 ? 'update' : roll < 0.98 ? 'login' : 'upload';
      return requestOf(k, s, created);
    }
    default: throw new Error(`unknown kind ${kind}`);
  }
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
};

async function metrics(base: string) {
  try {
    const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    // Password checks identity ran (the all-in-one's gRPC server counts every Login it handled, whatever its outcome).
    const logins = [...text.matchAll(/^grpc_server_handled_total\{[^}]*grpc_method="Login"[^}]*\} (\S+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    const underWay = ['in_flight', 'waiting'].reduce((sum, gauge) => sum + [...text.matchAll(new RegExp(`^http_requests_${gauge}\\{[^}]*\\} (\\S+)$`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0), 0);
    return { rssMb: value('process_resident_memory_bytes') / 2 ** 20, lagP99Ms: value('nodejs_eventloop_lag_p99_seconds') * 1000, lagMaxMs: value('nodejs_eventloop_lag_max_seconds') * 1000, logins, underWay };
  } catch {
    return { rssMb: NaN, lagP99Ms: NaN, lagMaxMs: NaN, logins: NaN, underWay: NaN };
  }
}

/** The quiet user: a child process reading one card and /healthz in turn, one at a time. */
function startProbe(base: string, cardId: string, cookie: string) {
  const child = fork(__filename, ['probe', base, cardId, cookie], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise<void>((resolve) => child.once('message', () => resolve()));
  return {
    ready,
    stop: () => new Promise<{ card: number[]; health: number[]; bad: string[] }>((resolve) => {
      child.once('message', (m) => resolve(m as { card: number[]; health: number[]; bad: string[] }));
      child.send('stop');
    }),
    kill: () => child.kill(),
  };
}

async function probe(base: string, cardId: string, cookie: string) {
  const out = { card: [] as number[], health: [] as number[], bad: [] as string[] };
  let stopping = false;
  process.on('message', () => { stopping = true; });
  let first = true;
  while (!stopping) {
    for (const [list, path] of [[out.card, `/api/card/${cardId}`], [out.health, '/healthz']] as const) {
      const started = performance.now();
      try {
        const res = await fetch(base + path, { headers: { cookie }, signal: AbortSignal.timeout(30_000) });
        await res.arrayBuffer();
        list.push(performance.now() - started);
        if (res.status !== 200) out.bad.push(`${path.startsWith('/healthz') ? 'healthz' : 'card'} ${res.status}`);
      } catch (err) {
        out.bad.push(`${path.startsWith('/healthz') ? 'healthz' : 'card'} ${(err as Error).name}`);
      }
    }
    if (first) {
      // Warmed up (module loaded, connection open): the flood starts now, and this round is not counted.
      first = false;
      out.card.length = 0;
      out.health.length = 0;
      out.bad.length = 0;
      process.send!('ready');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  process.send!(out, () => process.exit(0));
}

async function recoveryMs(base: string, cardId: string, cookie: string) {
  const started = performance.now();
  for (;;) {
    const t = performance.now();
    try {
      const [card, health] = await Promise.all([
        fetch(`${base}/api/card/${cardId}`, { headers: { cookie }, signal: AbortSignal.timeout(5000) }),
        fetch(`${base}/healthz`, { signal: AbortSignal.timeout(5000) }),
      ]);
      await card.arrayBuffer();
      await health.arrayBuffer();
      if (card.status === 200 && health.status === 200 && performance.now() - t < 100) return performance.now() - started;
    } catch { /* not yet */ }
    if (performance.now() - started > 120_000) return NaN;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function flood(base: string, s: Seed, kind: string, connections: number, seconds: number) {
  const statuses = new Map<number, number>();
  const broken = new Map<string, number>();
  const latencies: number[] = [];
  const created: string[] = [];
  const note = (m: Map<string, number>, key: string) => m.set(key, (m.get(key) ?? 0) + 1);
  const probeUser = s.users[0]!;
  const quiet = s.cards.find((c) => c.author === probeUser.id)!;
  const before = await metrics(base);
  const watcher = startProbe(base, quiet.id, probeUser.cookie);
  await watcher.ready;
  let peakRss = before.rssMb;
  const sampler = setInterval(() => void metrics(base).then((m) => { if (m.rssMb > peakRss) peakRss = m.rssMb; }), 2000);
  const result = await autocannon({
    url: base,
    connections,
    duration: seconds,
    timeout: 30,
    requests: [
      {
        setupRequest: (req: any, context: any) => {
          context.sentAt = performance.now();
          return { ...req, ...requestOf(kind, s, created) };
        },
        onResponse: (status: number, body: string, context: any, headers: Record<string, string | string[]>) => {
          latencies.push(performance.now() - context.sentAt);
          if (status === 200 && body.startsWith('{"card_metadata"')) created.push(JSON.parse(body).card_metadata.id);
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          if (status >= 400) {
            let message: unknown;
            try { message = JSON.parse(body).message; } catch { message = undefined; }
            if (typeof message !== 'string') note(broken, `${status} body not {"message"}`);
            const retryAfter = Object.keys(headers ?? {}).some((name) => name.toLowerCase() === 'retry-after');
            if ((status === 503 || status === 429) && !retryAfter) note(broken, `${status} without Retry-After`);
            if (status >= 500 && status !== 503) note(broken, `${status}`);
          }
        },
      },
    ],
  } as any);
  clearInterval(sampler);
  const quietUser = await watcher.stop();
  const recovered = await recoveryMs(base, quiet.id, probeUser.cookie);
  // Once nothing is served or waiting any more (the gateway's request bound), so what the flood left is counted whole.
  let after = await metrics(base);
  for (let tries = 0; tries < 600 && after.underWay !== 0; tries++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await metrics(base);
  }
  // Nothing lost: every card whose create was answered 200 during the flood is stored (read back one by one).
  let stored = 0;
  for (const id of created) if ((await fetch(`${base}/api/card/${id}`, { headers: { cookie: probeUser.cookie } })).status === 200) stored++;
  // Logins identity checked beyond those answered to the flood (204 or 401): password checks for clients that had left.
  const checked = after.logins - before.logins;
  const answeredLogins = (statuses.get(204) ?? 0) + (statuses.get(401) ?? 0);
  const seen = [...statuses.entries()].sort(([a], [b]) => a - b).map(([st, n]) => `${st}x${n}`).join(' ');
  const f = (n: number) => (Number.isFinite(n) ? n.toFixed(0) : '-');
  console.log(
    `${kind.padEnd(17)} ${String(connections).padStart(5)}  ${f(result.requests.average).padStart(6)}/s  p50 ${f(pct(latencies, 50)).padStart(6)}  p99 ${f(pct(latencies, 99)).padStart(6)} ms` +
      `  [${seen}] resets/errors ${result.errors} timeouts ${result.timeouts}` +
      `  | quiet card p50 ${f(pct(quietUser.card, 50))} p99 ${f(pct(quietUser.card, 99))} max ${f(Math.max(...quietUser.card))} ms, healthz p50 ${f(pct(quietUser.health, 50))} p99 ${f(pct(quietUser.health, 99))} ms${quietUser.bad.length ? ` bad: ${[...new Set(quietUser.bad)].join(',')}` : ''}` +
      `  | rss ${f(before.rssMb)}→peak ${f(peakRss)}→${f(after.rssMb)} MB, loop p99 ${f(after.lagP99Ms)} max ${f(after.lagMaxMs)} ms, back in ${f(recovered)} ms` +
      (created.length ? `  | created ${created.length}, read back ${stored}` : '') +
      (checked > 0 ? `  | password checks ${checked}, answered ${answeredLogins}, for clients gone ${checked - answeredLogins}` : '') +
      (broken.size ? `  BROKEN: ${[...broken.entries()].map(([k, n]) => `${k} x${n}`).join(', ')}` : ''),
  );
  return { statuses, broken };
}

async function main() {
  const [mode, base] = process.argv.slice(2);
  if (mode === 'probe') return probe(base!, process.argv[4]!, process.argv[5]!);
  if (mode === 'seed') {
    const s = await seed(base!, process.argv[4]!, Number(process.argv[5] ?? 3000), Number(process.argv[6] ?? 8));
    process.stdout.write(JSON.stringify(s));
    return;
  }
  if (mode !== 'run') throw new Error('usage: overload-bench.ts seed|run <baseUrl> ...');
  const s = JSON.parse(readFileSync(process.argv[4]!, 'utf8')) as Seed;
  const seconds = Number(process.argv[5] ?? 10);
  const levels = (process.argv[6] ?? '50,200,1000').split(',').map(Number);
  const kinds = (process.argv[7] ?? 'read,user-pages,top-users,search,collection-search,create,update,vote,bookmark,login,upload,mixed').split(',');
  console.log(`overload: ${base}, ${s.cards.length} seed cards, ${s.users.length} users, ${seconds} s per flood; the quiet user reads one card and /healthz one at a time meanwhile`);
  for (const kind of kinds) for (const level of levels) {
    await flood(base!, s, kind, level, seconds);
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
