// Runs jest and ends with the closing line "N passed, N failed, N skipped", computed from the real results in every
// path: each test file's result as jest reported it (test/support/summary-reporter.js writes them to RUN_JEST_RESULTS
// as they come), plus the results of checks run before (run-tests.mjs). Three paths jest alone does not count:
// - a test file still running after SUITE_TIMEOUT_S seconds (default 900; a busy loop or a synchronous wait no test
//   timeout ends) is named, its process killed, and counted as failed; jest goes on with the next files;
// - a jest that ends without completing its run (killed, out of memory, a test file killing the process it runs in)
//   counts as one failure, named with its exit code or signal; the files it reported before are counted as reported;
// - a jest that exits non-zero with nothing failed (no test found, an error of its own) counts as one failure.
// Usage: node scripts/run-jest.mjs [jest args]  (pnpm test runs it after its checks: scripts/run-tests.mjs)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WATCH_EVERY_MS = 1000;

/** Runs jest with `jestArgs`; prints the closing line counting `checks` ({name, ok}) too; resolves with the exit code. */
export async function runJest(jestArgs, checks = []) {
  const suiteTimeoutS = Number(process.env.SUITE_TIMEOUT_S || 900);
  // NaN would take every file for hung at once.
  if (!(suiteTimeoutS > 0)) throw new Error(`SUITE_TIMEOUT_S must be a number of seconds above 0, not '${process.env.SUITE_TIMEOUT_S}'`);
  // Made before jest starts: the leftovers reporter names only entries made during the run.
  const dir = mkdtempSync(join(tmpdir(), 'run-jest-'));
  try {
    // pnpm's shim, as pnpm test ran it before: it sets NODE_PATH (the hoisted packages, which some suites resolved
    // through it: 39085f7) and execs node, so jest.pid is jest's own process.
    const jest = spawn(join(ROOT, 'node_modules/.bin/jest'), ['--maxWorkers=2', '--forceExit', ...jestArgs], {
      stdio: 'inherit',
      // The jest started here is the one that reports to `dir` (its reporter checks its parent is this process).
      env: { ...process.env, RUN_JEST_RESULTS: dir, RUN_JEST_RUNNER_PID: String(process.pid) },
    });
    const exited = new Promise((resolve) => jest.once('exit', (code, signal) => resolve({ code, signal })));
    const hung = [];
    const watchdog = setInterval(() => {
      for (const record of running(dir)) {
        if (Date.now() - record.startedAt < suiteTimeoutS * 1000) continue;
        rmSync(record.file, { force: true });
        // A worker that died (a test file killing it) left its record; its file was reported failed already, and its
        // pid may since be another process's: only jest or one of its workers is ever killed.
        if (reported(dir).some((file) => file.path === record.testPath) || !isJestOrItsWorker(record.pid, jest.pid)) continue;
        hung.push(record.testPath);
        const whose = record.pid === jest.pid ? 'jest itself, which ran it in its own process' : 'a jest worker';
        console.log(`\nFAIL test file hung: ${relative(process.cwd(), record.testPath)} still running after ${suiteTimeoutS} s (SUITE_TIMEOUT_S): its process ${record.pid} (${whose}) killed`);
        try {
          process.kill(record.pid, 'SIGKILL');
        } catch {
          // ended meanwhile
        }
      }
    }, WATCH_EVERY_MS);
    const { code, signal } = await exited;
    clearInterval(watchdog);

    const files = reported(dir);
    let passed = checks.filter((c) => c.ok).length;
    let failed = checks.length - passed;
    let skipped = 0;
    for (const file of files) {
      passed += file.passed;
      failed += file.failed;
      skipped += file.skipped;
    }
    const reportedPaths = new Set(files.map((file) => file.path));
    failed += hung.filter((path) => !reportedPaths.has(path)).length;
    const how = signal ? `killed by signal ${signal}` : `exit code ${code}`;
    if (!existsSync(join(dir, 'complete'))) {
      failed++;
      console.log(`\nFAIL jest ended before completing its run (${how}): ${files.length} test file(s) reported, the others are not counted`);
    } else if (code !== 0 && failed === 0) {
      failed++;
      console.log(`\nFAIL jest exited non-zero (${how}) with no test failed: see its output above`);
    }
    // Every skipped test's name says why it was skipped; listing them keeps the reasons in CI's output.
    const skips = files.flatMap((file) => file.skips.map((name) => `skipped: ${name}`));
    console.log(['', ...skips, `${passed} passed, ${failed} failed, ${skipped} skipped`].join('\n'));
    return failed === 0 ? 0 : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function isJestOrItsWorker(pid, jestPid) {
  if (pid === jestPid) return true;
  const ps = spawnSync('ps', ['-o', 'ppid=', '-p', String(pid)], { encoding: 'utf8' });
  return Number(ps.stdout.trim()) === jestPid;
}

/** The test files running now, as test/support/test-environment.js records them (one per process). */
function running(dir) {
  return readdirSync(dir)
    .filter((name) => name.startsWith('running-') && name.endsWith('.json'))
    .flatMap((name) => {
      const file = join(dir, name);
      try {
        return [{ ...JSON.parse(readFileSync(file, 'utf8')), file }];
      } catch {
        return []; // removed or replaced meanwhile
      }
    });
}

/** Each test file's result as the summary reporter wrote it (one JSON line per file). */
function reported(dir) {
  const file = join(dir, 'results.jsonl');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runJest(process.argv.slice(2));
}
