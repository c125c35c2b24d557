// The online backup of a data dir of many small files (mail: one file per mail sent, kept 72 h): one small store and
// BENCH_FILES (default 4,000) files of 2 KB under mail/, built in BENCH_MANY_DIR (default /tmp/cards-backup-many), and
// backed up by each implementation of backUpDataDir in turn, `rounds` times: the total of each. What it shows: the cost
// of copying the files twice over and of flushing every file of the copy to disk before the rename.
// Usage: [BACKUP_MODULES=<path>,<path>] pnpm exec tsx bench/data-dir-backup-many-files.ts [rounds]
// (each path a data-dir-backup.ts, e.g. an older one copied into packages/platform/src/ so it resolves better-sqlite3)
import { createRequire } from 'node:module';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '..');
const Database = createRequire(join(ROOT, 'packages/platform/package.json'))('better-sqlite3') as typeof import('better-sqlite3');
const DIR = process.env.BENCH_MANY_DIR ?? '/tmp/cards-backup-many';
const FILES = Number(process.env.BENCH_FILES ?? 4000);
const MODULES = (process.env.BACKUP_MODULES ?? 'packages/platform/src/data-dir-backup.ts').split(',').map((path) => resolve(ROOT, path));
const ROUNDS = Number(process.argv[2] ?? 3);

async function main(): Promise<void> {
  const data = join(DIR, 'data');
  rmSync(DIR, { recursive: true, force: true });
  mkdirSync(join(data, 'mail'), { recursive: true });
  mkdirSync(join(data, 'svc'), { recursive: true });
  const db = new Database(join(data, 'svc', 'svc.db'));
  db.pragma('journal_mode = WAL');
  db.exec('CREATE TABLE t (v TEXT)');
  db.close();
  for (let i = 0; i < FILES; i++) writeFileSync(join(data, 'mail', `mail-${i}.eml`), 'x'.repeat(2000));
  console.log(`data dir: 1 store, ${FILES} files of 2 KB; ${ROUNDS} rounds`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [i, module] of MODULES.entries()) {
      const { backUpDataDir } = (await import(module)) as typeof import('../packages/platform/src/data-dir-backup');
      const target = join(DIR, `copy-${i}`);
      const started = performance.now();
      const result = await backUpDataDir(data, target);
      console.log(`round ${round}, ${module.replace(`${ROOT}/`, '')}: ${(performance.now() - started).toFixed(0)} ms (${result.files} files)`);
      rmSync(target, { recursive: true, force: true });
    }
  }
  rmSync(DIR, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
