// What a test file leaves behind goes when the file ends, even when its tests fail (test/support/test-environment.js
// with cleanup.ts), and what a test made another way is named by the run (leftovers-reporter.js) without moving the
// closing summary off the last line. The file that leaves things behind runs in a jest of its own.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { testTempDir } from './cleanup';

const ROOT = resolve(__dirname, '../..');

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

it('kills the child a failed file left running, then removes its directory; a directory made with plain mkdtempSync is named before the summary', () => {
  const out = join(testTempDir('cleanup-outer-'), 'made.json');
  const run = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules/jest/bin/jest.js'), '--ci', '--forceExit', '--testMatch', '<rootDir>/test/support/fixtures/leaves-things-behind.fixture.ts'],
    { cwd: ROOT, env: { ...process.env, CHECK_RESULTS: '', CLEANUP_FIXTURE_OUT: out }, encoding: 'utf8', timeout: 120_000 },
  );
  const made = JSON.parse(readFileSync(out, 'utf8')) as { dir: string; pid: number; leaked: string };
  try {
    expect(run.status).toBe(1);
    expect(alive(made.pid)).toBe(false);
    expect(existsSync(made.dir)).toBe(false);
    const lines = run.stdout.trim().split('\n');
    expect(lines.find((line) => line.startsWith('warning: '))).toContain(made.leaked.split('/').pop());
    expect(lines.at(-1)).toBe('0 passed, 1 failed, 0 skipped');
  } finally {
    if (alive(made.pid)) process.kill(made.pid, 'SIGKILL');
    rmSync(made.dir, { recursive: true, force: true });
    rmSync(made.leaked, { recursive: true, force: true });
  }
});
