// The online backup of a large embedded data dir (packages/platform/src/data-dir-backup.ts) and the writes made while
// it runs: a data dir of two stores, `big/big.db` (BENCH_BACKUP_MB, default 300 MB: rows of 1,000 characters and an
// FTS5 index of part of them) and `events/events.db` (small), in WAL mode, built once under BENCH_BACKUP_DIR (default
// /tmp/cards-backup-bench) and reused. Each round backs it up into a new directory while a worker thread (its own
// connection, busy_timeout 5000 like the services) writes a row to each store in turn without a pause, and prints the
// backup's total time, its writesHeldMs, the writes made during it (how many, the slowest, how many failed) and the size
// of big.db's WAL when it ends (a checkpoint cannot pass a pinned snapshot: the WAL grows by the writes made meanwhile).
// Usage: pnpm exec tsx bench/data-dir-backup-bench.ts [rounds]
// BACKUP_MODULE=<path> runs another implementation of backUpDataDir (e.g. the one before, copied into
// packages/platform/src/ so it resolves better-sqlite3).
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';

const ROOT = resolve(__dirname, '..');
const requirePlatform = createRequire(join(ROOT, 'packages/platform/package.json'));
const Database = requirePlatform('better-sqlite3') as typeof import('better-sqlite3');
const MB = Number(process.env.BENCH_BACKUP_MB ?? 300);
const DIR = process.env.BENCH_BACKUP_DIR ?? '/tmp/cards-backup-bench';
const ROUNDS = Number(process.argv[2] ?? 3);
const MODULE = resolve(process.env.BACKUP_MODULE ?? join(ROOT, 'packages/platform/src/data-dir-backup.ts'));

function build(dataDir: string): void {
  const big = join(dataDir, 'big', 'big.db');
  if (existsSync(big) && statSync(big).size >= MB * 0.9 * 1e6) return;
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(join(dataDir, 'big'), { recursive: true });
  mkdirSync(join(dataDir, 'events'), { recursive: true });
  const started = performance.now();
  const db = new Database(big);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT); CREATE VIRTUAL TABLE words USING fts5(body); CREATE TABLE written (id INTEGER PRIMARY KEY, at TEXT)');
  const rows = Math.round((MB * 1e6) / 1100);
  for (let done = 0; done < rows; done += 50_000) {
    const n = Math.min(50_000, rows - done);
    db.exec(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${n}) INSERT INTO rows (body) SELECT hex(randomblob(500)) FROM c`);
  }
  db.exec(`INSERT INTO words (body) SELECT 'word' || (id % 5000) || ' other' || (id % 777) || ' ' || substr(body, 1, 40) FROM rows WHERE id % 4 = 0`);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const events = new Database(join(dataDir, 'events', 'events.db'));
  events.pragma('journal_mode = WAL');
  events.exec('CREATE TABLE written (id INTEGER PRIMARY KEY, at TEXT)');
  events.close();
  console.log(`built ${dataDir}: big/big.db ${(statSync(big).size / 1e6).toFixed(0)} MB in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

const WRITER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.sqlite);
const dbs = workerData.stores.map((path) => { const db = new Database(path); db.pragma('busy_timeout = 5000'); return db; });
const inserts = dbs.map((db) => db.prepare('INSERT INTO written (at) VALUES (?)'));
let stop = false, count = 0, failed = 0, slowest = 0, over100 = 0;
parentPort.on('message', () => { stop = true; });
function loop() {
  for (let i = 0; i < 20 && !stop; i++) {
    const started = performance.now();
    try { inserts[count % inserts.length].run(new Date().toISOString()); } catch { failed++; }
    const ms = performance.now() - started;
    if (ms > slowest) slowest = ms;
    if (ms > 100) over100++;
    count++;
  }
  if (stop) { for (const db of dbs) db.close(); parentPort.postMessage({ count, failed, slowest, over100 }); }
  else setImmediate(loop);
}
parentPort.postMessage('ready');
loop();
`;

async function main(): Promise<void> {
  const dataDir = join(DIR, 'data');
  build(dataDir);
  const { backUpDataDir } = (await import(MODULE)) as typeof import('../packages/platform/src/data-dir-backup');
  console.log(`backUpDataDir from ${MODULE.replace(`${ROOT}/`, '')}, data dir ${(statSync(join(dataDir, 'big', 'big.db')).size / 1e6).toFixed(0)} MB, ${ROUNDS} rounds`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const old of readdirSync(DIR)) if (old.startsWith('copy')) rmSync(join(DIR, old), { recursive: true, force: true });
    const worker = new Worker(WRITER, { eval: true, workerData: { sqlite: requirePlatform.resolve('better-sqlite3'), stores: [join(dataDir, 'big', 'big.db'), join(dataDir, 'events', 'events.db')] } });
    const done = new Promise<{ count: number; failed: number; slowest: number; over100: number }>((resolveDone) => worker.on('message', (m) => m !== 'ready' && resolveDone(m)));
    await new Promise<void>((ready) => worker.once('message', () => ready()));
    const started = performance.now();
    const result = await backUpDataDir(dataDir, join(DIR, `copy-${round}`));
    const totalMs = performance.now() - started;
    const wal = join(dataDir, 'big', 'big.db-wal');
    const walMb = existsSync(wal) ? statSync(wal).size / 1e6 : 0;
    worker.postMessage('stop');
    const writes = await done;
    await worker.terminate();
    console.log(`round ${round}: total ${totalMs.toFixed(0)} ms, writesHeldMs ${result.writesHeldMs}; writes during it ${writes.count} (slowest ${writes.slowest.toFixed(1)} ms, ${writes.over100} over 100 ms, ${writes.failed} failed); big.db-wal ${walMb.toFixed(1)} MB at its end`);
  }
  for (const old of readdirSync(DIR)) if (old.startsWith('copy')) rmSync(join(DIR, old), { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
