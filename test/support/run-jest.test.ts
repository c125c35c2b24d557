// scripts/run-jest.mjs (the jest of `pnpm test`): its closing line "N passed, N failed, N skipped" is computed from the
// real results in every path, and its exit code agrees — also when a test file hangs where no test timeout ends it
// (killed after SUITE_TIMEOUT_S, named, counted failed, the run goes on), when the process running a file dies (a jest
// worker or, when jest runs the files in its own process, jest itself), when a file does not compile or its afterAll
// throws. The fixtures (test/support/fixtures/runner) run in a runner and jest of their own.
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { testTempDir } from './cleanup';

const ROOT = resolve(__dirname, '../..');

function runJest(fixtures: string[], suiteTimeoutS: number, jestArgs: string[] = []): { status: number | null; lines: string[] } {
  const files = fixtures.length === 1 ? fixtures[0] : `{${fixtures.join(',')}}`;
  const run = spawnSync(
    process.execPath,
    // A cache of its own: no timings from earlier runs, so jest runs several files in workers, one file in its own process.
    [join(ROOT, 'scripts/run-jest.mjs'), '--ci', '--cacheDirectory', testTempDir('run-jest-cache-'), '--testMatch', `<rootDir>/test/support/fixtures/runner/${files}`, ...jestArgs],
    // A guard for the test itself only: a runner that let a hanging file hang it would never return.
    { cwd: ROOT, env: { ...process.env, SUITE_TIMEOUT_S: String(suiteTimeoutS) }, encoding: 'utf8', timeout: 240_000 },
  );
  return { status: run.status, lines: run.stdout.trim().split('\n') };
}

describe('the runner of pnpm test (scripts/run-jest.mjs)', () => {
  it('kills a test file that hangs in a jest worker, names it and counts it failed, and counts the others as jest reports them: a worker that died, a file that did not compile, an afterAll that threw, a skipped test', () => {
    const { status, lines } = runJest(['passes.fixture.ts', 'does-not-compile.fixture.js', 'kills-its-process.fixture.ts', 'hangs.fixture.ts', 'after-all-throws.fixture.ts'], 20);
    expect(lines.filter((line) => line.startsWith('FAIL test file hung: '))).toEqual([
      expect.stringMatching(/^FAIL test file hung: test\/support\/fixtures\/runner\/hangs\.fixture\.ts still running after 20 s \(SUITE_TIMEOUT_S\): its process \d+ \(a jest worker\) killed$/),
    ]);
    // passed: passes' first test and after-all-throws' test (the passing test before its worker died is lost with it);
    // failed: does-not-compile, kills-its-process, hangs, after-all-throws; skipped: passes' second test.
    expect(lines).toContain('skipped: is skipped: a fixture of the runner test');
    expect(lines.at(-1)).toBe('2 passed, 4 failed, 1 skipped');
    expect(status).toBe(1);
  }, 300_000);

  it('kills jest itself when it runs a hanging test file in its own process, and counts both the file and the unfinished run', () => {
    const { status, lines } = runJest(['hangs.fixture.ts'], 5);
    expect(lines).toContainEqual(expect.stringMatching(/^FAIL test file hung: test\/support\/fixtures\/runner\/hangs\.fixture\.ts still running after 5 s .*\(jest itself, which ran it in its own process\) killed$/));
    expect(lines).toContain('FAIL jest ended before completing its run (killed by signal SIGKILL): 0 test file(s) reported, the others are not counted');
    expect(lines.at(-1)).toBe('0 passed, 2 failed, 0 skipped');
    expect(status).toBe(1);
  }, 300_000);

  it('still ends with the closing line when the jest process itself dies (before: no closing line at all)', () => {
    const { status, lines } = runJest(['kills-its-process.fixture.ts'], 60);
    expect(lines).toContain('FAIL jest ended before completing its run (killed by signal SIGKILL): 0 test file(s) reported, the others are not counted');
    expect(lines.at(-1)).toBe('0 passed, 1 failed, 0 skipped');
    expect(status).toBe(1);
  }, 300_000);

  it('counts a jest that exits non-zero with no test failed (no test file matched) as a failure', () => {
    const { status, lines } = runJest(['no-such.fixture.ts'], 60);
    // jest leaves through exit-x, which may or may not let its run's end reach the reporter first: either line.
    expect(lines).toContainEqual(expect.stringMatching(/^FAIL jest (exited non-zero|ended before completing its run) \(exit code 1\)/));
    expect(lines.at(-1)).toBe('0 passed, 1 failed, 0 skipped');
    expect(status).toBe(1);
  }, 300_000);

  it('refuses a SUITE_TIMEOUT_S that is not a number of seconds above 0 (NaN would take every file for hung at once), running nothing', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'scripts/run-jest.mjs'), '--testMatch', '<rootDir>/test/support/fixtures/runner/passes.fixture.ts'], {
      cwd: ROOT,
      env: { ...process.env, SUITE_TIMEOUT_S: '15m' },
      encoding: 'utf8',
      timeout: 240_000,
    });
    expect(run.stderr).toContain("SUITE_TIMEOUT_S must be a number of seconds above 0, not '15m'");
    expect(run.stdout).not.toContain('passed');
    expect(run.status).toBe(1);
  }, 300_000);

  it('passes a run whose files pass, with the skipped tests named', () => {
    const { status, lines } = runJest(['passes.fixture.ts'], 60);
    expect(lines.slice(-2)).toEqual(['skipped: is skipped: a fixture of the runner test', '1 passed, 0 failed, 1 skipped']);
    expect(status).toBe(0);
  }, 300_000);
});
