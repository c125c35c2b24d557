// What a running all-in-one's clients see while the backup command copies its data dir: /livez asked every 20 ms and
// invitations posted one after another (each a write to identity.db, and a mail), from the start of the backup to its
// end; prints the backup's total time and writesHeldMs, the slowest /livez and the slowest write, and their statuses.
// The backup runs in a process of its own, as the command does. Start the all-in-one first with a large store in its
// data dir (the backup copies every *.db under it, all held at one moment) and the mail limits raised, e.g.
//   mkdir -p /tmp/bk/data/bench && cp <a 290 MB store, e.g. bench/data-dir-backup-bench.ts's big.db> /tmp/bk/data/bench/
//   PORT=3107 DATA_DIR=/tmp/bk/data RATE_LIMIT_MAIL_PER_IP=1000000 RATE_LIMIT_AUTH_PER_IP=1000000 pnpm start
// then: BASE_URL=http://127.0.0.1:3107 DATA_DIR=/tmp/bk/data pnpm exec tsx bench/data-dir-backup-livez.ts <new target dir>
// BACKUP_MODULE=<path> runs another implementation of backUpDataDir (as in bench/data-dir-backup-bench.ts).
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
const BASE = process.env.BASE_URL ?? 'http://127.0.0.1:3000';
const DATA_DIR = resolve(process.env.DATA_DIR ?? './data');
const MODULE = resolve(process.env.BACKUP_MODULE ?? join(ROOT, 'packages/platform/src/data-dir-backup.ts'));
const target = process.argv[2];

type Timed = [ms: number, status: number];

async function timed(request: () => Promise<Response>): Promise<Timed> {
  const started = performance.now();
  const res = await request();
  await res.arrayBuffer();
  return [performance.now() - started, res.status];
}

const slowest = (all: Timed[]) => Math.max(...all.map(([ms]) => ms)).toFixed(0);
const statuses = (all: Timed[]) => [...all.reduce((m, [, s]) => m.set(s, (m.get(s) ?? 0) + 1), new Map<number, number>())].map(([s, n]) => `${n} × ${s}`).join(', ');

async function main(): Promise<void> {
  if (!target) throw new Error('usage: bench/data-dir-backup-livez.ts <new target dir>');
  let running = true;
  let n = 0;
  const livez: Timed[] = [];
  const writes: Timed[] = [];
  const probe = (async () => {
    while (running) {
      livez.push(await timed(() => fetch(`${BASE}/livez`)));
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const writer = (async () => {
    while (running) {
      const email = `backup-bench-${process.pid}-${Date.now()}-${n++}@example.com`;
      writes.push(await timed(() => fetch(`${BASE}/api/invitation`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, referral_tokens: [] }) })));
    }
  })();
  await new Promise((r) => setTimeout(r, 300));
  const [livezFrom, writesFrom] = [livez.length, writes.length];
  const code = `import(${JSON.stringify(MODULE)}).then(async (m) => { const t = performance.now(); const r = await (m.default ?? m).backUpDataDir(process.env.DATA_DIR, process.env.TARGET); console.log('backup total ' + Math.round(performance.now() - t) + ' ms, writesHeldMs ' + r.writesHeldMs); })`;
  const child = spawn('pnpm', ['exec', 'tsx', '-e', code], { cwd: ROOT, env: { ...process.env, DATA_DIR, TARGET: resolve(target) }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const exit = await new Promise<number | null>((r) => child.on('exit', r));
  running = false;
  await Promise.all([probe, writer]);
  if (exit !== 0) throw new Error(`the backup exited ${exit}`);
  const [l, w] = [livez.slice(livezFrom), writes.slice(writesFrom)];
  console.log(`${MODULE.replace(`${ROOT}/`, '')}: ${out.trim()}; /livez during it: ${l.length} probes, slowest ${slowest(l)} ms (${statuses(l)}); invitations (writes) during it: ${w.length}, slowest ${slowest(w)} ms (${statuses(w)})`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
