// What openSqlite's one-time rewrite of a store made before secure_delete costs at start (sqlite.ts, zeroFreePagesOnce):
// builds a store as an older release left it (ROWS cards of ~3 KB text, a tenth deleted without secure_delete, their
// text in free pages), then times openSqlite on it twice: the first open rewrites it (VACUUM) and notes it, the second
// only reads the note. Prints the file's size, its free pages, both times and whether the deleted text is still there.
// The rewrite is timed whatever the size; a service's start does it only up to REWRITE_AT_OPEN_MAX_BYTES (64 MiB): the
// line says which this store is.
//   pnpm exec tsx bench/sqlite-zero-free-pages-bench.ts [rows, default 100000] [dir, default a temporary one]
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../packages/platform/src/logger';
import { openSqlite, REWRITE_AT_OPEN_MAX_BYTES } from '../packages/platform/src/sqlite';

const rows = Number(process.argv[2] ?? 100_000);
const dir = process.argv[3] ?? mkdtempSync(join(tmpdir(), 'zero-free-pages-'));
const path = join(dir, 'cards.db');

function olderStore(): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE cards (id INTEGER PRIMARY KEY, content TEXT NOT NULL)');
  const insert = db.prepare('INSERT INTO cards (content) VALUES (?)');
  const filler = 'lorem ipsum dolor sit amet '.repeat(110);
  db.transaction(() => {
    for (let i = 0; i < rows; i++) insert.run(`${i % 10 === 0 ? 'deleted-card-text' : 'card'} ${i} ${filler}`);
  })();
  db.prepare("DELETE FROM cards WHERE content LIKE 'deleted-card-text%'").run();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

function timedOpen(): number {
  const started = performance.now();
  const db = openSqlite(path, [], { rewriteAtOpenMaxBytes: Infinity, logger: createLogger('bench', 'silent') });
  const ms = performance.now() - started;
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  return ms;
}

try {
  olderStore();
  const bytes = statSync(path).size;
  const mb = (bytes / 1e6).toFixed(0);
  const free = new Database(path, { readonly: true });
  const freePages = free.pragma('freelist_count', { simple: true });
  free.close();
  const first = timedOpen();
  const afterFirst = statSync(path).size;
  const second = timedOpen();
  const holds = readFileSync(path).includes('deleted-card-text');
  console.log(`${rows} rows, ${mb} MB, ${freePages} free pages: first open (rewrite) ${first.toFixed(0)} ms, file then ${(afterFirst / 1e6).toFixed(0)} MB; second open ${second.toFixed(1)} ms; deleted text left: ${holds}; at a service's start: ${bytes > REWRITE_AT_OPEN_MAX_BYTES ? 'too large, left with a warning' : 'rewritten'}`);
} finally {
  if (!process.argv[3]) rmSync(dir, { recursive: true, force: true });
}
