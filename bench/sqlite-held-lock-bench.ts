// What a running all-in-one's clients see while another process holds one of its SQLite stores' write lock (BEGIN
// IMMEDIATE, as an operator's sqlite3 or a long checkpoint would) for HOLD_MS: a signed-in read (GET /api/auth) asked
// every 20 ms, and cards created one after another (each a write to cards.db whose event the outbox relay then writes
// to events.db), from the moment the lock is taken until it is let go and the last request under way has its answer.
// Prints the reads' median and slowest time and the creations' statuses and slowest time.
// Start the all-in-one first (mail written as .eml files under DATA_DIR/mail, the auth limit raised), e.g.
//   PORT=3103 DATA_DIR=/tmp/hl/data RATE_LIMIT_AUTH_PER_IP=100000 PASSWORD_HASH_COST=1024 pnpm start
// then: BASE_URL=http://127.0.0.1:3103 DATA_DIR=/tmp/hl/data HOLD_MS=2000 pnpm exec tsx bench/sqlite-held-lock-bench.ts events/events.db
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const BASE = process.env.BASE_URL ?? 'http://127.0.0.1:3000';
const DATA_DIR = resolve(process.env.DATA_DIR ?? './data');
const HOLD_MS = Number(process.env.HOLD_MS ?? 2000);
const store = process.argv[2] ?? 'events/events.db';

const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function signIn(): Promise<string> {
  const email = `held-lock-${process.pid}-${Date.now()}@example.com`;
  const invited = await fetch(`${BASE}/api/invitation`, json({ email, referral_tokens: [] }));
  if (invited.status !== 200) throw new Error(`invitation: ${invited.status}`);
  let id: string | undefined;
  for (let i = 0; i < 100 && !id; i++) {
    await new Promise((r) => setTimeout(r, 100));
    for (const file of readdirSync(join(DATA_DIR, 'mail'))) {
      const text = readFileSync(join(DATA_DIR, 'mail', file), 'utf8').replace(/=\r?\n/g, '');
      if (text.includes(email)) id = /register\/([0-9a-f-]{36})/.exec(text)?.[1];
    }
  }
  if (!id) throw new Error('no invitation mail under DATA_DIR/mail');
  const password = 'long enough password';
  const registered = await fetch(`${BASE}/api/register/${id}`, json({ password, password_confirmation: password }));
  if (registered.status !== 200) throw new Error(`register: ${registered.status}`);
  const auth = await fetch(`${BASE}/api/auth`, json({ email, password }));
  if (auth.status !== 204) throw new Error(`auth: ${auth.status}`);
  return auth.headers.get('set-cookie')!.split(';')[0]!;
}

const cardHtml = () => `<p>${Array.from({ length: 80 }, (_, i) => `w${i}x${Math.floor(Math.random() * 1e9)}`).join(' ')}</p>`;

async function main(): Promise<void> {
  const cookie = await signIn();
  const script = `const D = require(${JSON.stringify(require.resolve('better-sqlite3'))}); const db = new D(${JSON.stringify(join(DATA_DIR, store))});
    db.exec('BEGIN IMMEDIATE'); console.log('held'); setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, ${HOLD_MS});`;
  const holder = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const released = new Promise((r) => holder.on('exit', r));
  await new Promise((r) => holder.stdout.once('data', r));
  let held = true;
  void released.then(() => (held = false));
  const reads: number[] = [];
  const creations: [number, number][] = [];
  const reader = (async () => {
    while (held) {
      const started = performance.now();
      await (await fetch(`${BASE}/api/auth`, { headers: { cookie } })).arrayBuffer();
      reads.push(performance.now() - started);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const creator = (async () => {
    while (held) {
      const started = performance.now();
      const res = await fetch(`${BASE}/api/card`, { ...json({ card_html: cardHtml(), link: '', private: false }), headers: { 'content-type': 'application/json', cookie } });
      await res.arrayBuffer();
      creations.push([performance.now() - started, res.status]);
    }
  })();
  await Promise.all([released, reader, creator]);
  reads.sort((a, b) => a - b);
  const statuses = [...creations.reduce((m, [, s]) => m.set(s, (m.get(s) ?? 0) + 1), new Map<number, number>())].map(([s, n]) => `${n} × ${s}`).join(', ');
  console.log(
    `${store} held ${HOLD_MS} ms: reads ${reads.length}, median ${reads[Math.floor(reads.length / 2)]!.toFixed(0)} ms, slowest ${reads.at(-1)!.toFixed(0)} ms; ` +
      `cards created ${creations.length} (${statuses}), slowest ${Math.max(...creations.map(([ms]) => ms)).toFixed(0)} ms`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
