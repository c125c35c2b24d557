// Where the online backup's time goes for one large store (packages/platform/src/data-dir-backup.ts): the page copy
// through a read snapshot (SQLite's backup API), the rewrite of that copy without its free pages (VACUUM INTO, the
// second copy), WAL mode set back, and the flush of the result to disk (fsync), each timed on its own, plus what the
// page copy holds that the rewrite drops: its free pages, and rows deleted from the store whose text is still in its
// bytes (with secure_delete ON since the store was made, as the services open every store).
// The store: BENCH_STORE (e.g. bench/data-dir-backup-bench.ts's big/big.db, never deleted from), copied to
// <BENCH_PHASES_DIR>/store.db; with DELETE_PERCENT=N that copy first gets N% of its rows (of its table `rows`) deleted
// with secure_delete ON, as a store the services have deleted from.
// Usage: BENCH_STORE=<path> [DELETE_PERCENT=10] [BENCH_PHASES_DIR=/tmp/cards-backup-phases] pnpm exec tsx bench/data-dir-backup-phases.ts [rounds]
import { createRequire } from 'node:module';
import { closeSync, copyFileSync, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
const Database = createRequire(join(ROOT, 'packages/platform/package.json'))('better-sqlite3') as typeof import('better-sqlite3');
const STORE = process.env.BENCH_STORE;
const DIR = process.env.BENCH_PHASES_DIR ?? '/tmp/cards-backup-phases';
const DELETE_PERCENT = Number(process.env.DELETE_PERCENT ?? 0);
const ROUNDS = Number(process.argv[2] ?? 3);

const mb = (path: string) => (statSync(path).size / 1e6).toFixed(0);
const timed = <T>(run: () => T): [T, number] => {
  const started = performance.now();
  const value = run();
  return [value, performance.now() - started];
};
const flush = (path: string) => {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
};

async function main(): Promise<void> {
  if (!STORE) throw new Error('BENCH_STORE=<a large SQLite store> is required');
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(DIR, { recursive: true });
  const store = join(DIR, 'store.db');
  copyFileSync(STORE, store);
  const marked: string[] = [];
  {
    const db = new Database(store);
    db.pragma('journal_mode = WAL');
    db.pragma('secure_delete = ON');
    if (DELETE_PERCENT > 0) {
      // The first 32 characters of 40 deleted rows spread over them, to look for in the copies' bytes after.
      const rows = db.prepare(`SELECT id, substr(body, 1, 32) AS head FROM rows WHERE abs(random()) % 100 < ${DELETE_PERCENT}`).all() as { id: number; head: string }[];
      const remove = db.prepare('DELETE FROM rows WHERE id = ?');
      db.transaction(() => rows.forEach((row) => remove.run(row.id)))();
      // Not the rows of id % 4 = 0: the store's FTS5 table keeps their first 40 characters (bench/data-dir-backup-bench.ts).
      const candidates = rows.filter((row) => row.id % 4 !== 0);
      for (const [i, row] of candidates.entries()) if (i % Math.ceil(candidates.length / 40) === 0) marked.push(row.head);
    }
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
  }
  console.log(`store ${mb(store)} MB${DELETE_PERCENT ? `, ${DELETE_PERCENT}% of its rows deleted with secure_delete ON (${marked.length} of them looked for)` : ''}; ${ROUNDS} rounds`);
  const stillThere = (path: string) => {
    if (marked.length === 0) return 0;
    const bytes = readFileSync(path);
    return marked.filter((head) => bytes.includes(head)).length;
  };
  for (let round = 1; round <= ROUNDS; round++) {
    const pages = join(DIR, `copy-${round}.db.pages`);
    const copy = join(DIR, `copy-${round}.db`);
    const snapshot = new Database(store, { fileMustExist: true });
    snapshot.exec('BEGIN');
    snapshot.prepare('SELECT count(*) FROM sqlite_schema').get();
    const started = performance.now();
    await snapshot.backup(pages, { progress: () => 1024 });
    const copyMs = performance.now() - started;
    snapshot.exec('ROLLBACK');
    snapshot.close();
    const [free, inspectMs] = timed(() => {
      const db = new Database(pages, { readonly: true });
      try {
        return db.pragma('freelist_count', { simple: true }) as number;
      } finally {
        db.close();
      }
    });
    const [, vacuumMs] = timed(() => {
      const db = new Database(pages, { fileMustExist: true });
      try {
        db.prepare('VACUUM INTO ?').run(copy);
      } finally {
        db.close();
      }
    });
    const [, walMs] = timed(() => {
      const db = new Database(copy, { fileMustExist: true });
      try {
        db.pragma('journal_mode = WAL');
      } finally {
        db.close();
      }
    });
    const [, syncMs] = timed(() => flush(copy));
    console.log(
      `round ${round}: page copy ${copyMs.toFixed(0)} ms (${mb(pages)} MB, ${free} free pages, freelist read ${inspectMs.toFixed(1)} ms), ` +
        `VACUUM INTO ${vacuumMs.toFixed(0)} ms (${mb(copy)} MB), WAL mode ${walMs.toFixed(0)} ms, fsync ${syncMs.toFixed(0)} ms; ` +
        `deleted rows' text in the page copy ${stillThere(pages)}, in the rewrite ${stillThere(copy)}`,
    );
    rmSync(pages, { force: true });
    rmSync(copy, { force: true });
  }
  rmSync(DIR, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
