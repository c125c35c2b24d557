// web/scripts/ensure-build.mjs, which every browser test file runs as it starts (two at once under jest's two workers,
// from a clean clone with no build): one build at a time, the other process waiting for it and serving it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { testTempDir } from '../support/cleanup';

const ENSURE_BUILD = resolve(__dirname, '../../web/scripts/ensure-build.mjs');

/**
 * A web directory with sources and no build, and a script that runs ensureWebBuild on it once `go` exists, with a
 * stand-in for Vite that does what its build does to dist (emptied first, index.html written 1.5 s later) and notes
 * each build in builds.log.
 */
function webDirWithoutBuild(): { dir: string; script: string; go: string } {
  const dir = testTempDir('cards-web-build-');
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src', 'main.tsx'), 'export {};\n');
  writeFileSync(join(dir, 'index.html'), '<!doctype html>\n');
  const go = join(dir, 'go');
  const script = join(dir, 'build-when-told.mjs');
  writeFileSync(
    script,
    `import { appendFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureWebBuild } from ${JSON.stringify(ENSURE_BUILD)};
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
const dir = ${JSON.stringify(dir)};
writeFileSync(join(dir, 'ready-' + process.pid), '');
while (!existsSync(${JSON.stringify(go)})) pause(5);
ensureWebBuild({
  quiet: true,
  dir,
  build: () => {
    appendFileSync(join(dir, 'builds.log'), process.pid + '\\n');
    rmSync(join(dir, 'dist'), { recursive: true, force: true });
    pause(1500);
    mkdirSync(join(dir, 'dist'));
    writeFileSync(join(dir, 'dist', 'index.html'), '<!doctype html><title>built</title>');
    return { status: 0 };
  },
});
`,
  );
  return { dir, script, go };
}

const exited = (child: ReturnType<typeof spawn>) => new Promise<number | null>((done) => child.once('exit', (code) => done(code)));

describe('the web app build the browser tests start with', () => {
  it('is made once when two processes ask for it at once: the second waits for the first build instead of emptying web/dist under it', async () => {
    const { dir, script, go } = webDirWithoutBuild();
    const children = [spawn(process.execPath, [script], { stdio: 'inherit' }), spawn(process.execPath, [script], { stdio: 'inherit' })];
    const codes = Promise.all(children.map(exited));
    // Both started and asking at the same moment, whatever the machine's load.
    while (readdirSync(dir).filter((name) => name.startsWith('ready-')).length < 2) await new Promise((r) => setTimeout(r, 20));
    writeFileSync(go, '');
    expect(await codes).toEqual([0, 0]);
    expect(readFileSync(join(dir, 'builds.log'), 'utf8').trim().split('\n')).toHaveLength(1);
    expect(readFileSync(join(dir, 'dist', 'index.html'), 'utf8')).toContain('built');
  });

  it('is made when a process building it before was killed and left its lock behind', async () => {
    const { dir, script, go } = webDirWithoutBuild();
    const gone = spawnSync(process.execPath, ['-e', 'process.pid']).pid!;
    mkdirSync(join(dir, 'node_modules', '.web-build.lock'), { recursive: true });
    writeFileSync(join(dir, 'node_modules', '.web-build.lock', 'pid'), String(gone));
    writeFileSync(go, '');
    expect(await exited(spawn(process.execPath, [script], { stdio: 'inherit' }))).toBe(0);
    expect(readFileSync(join(dir, 'builds.log'), 'utf8').trim().split('\n')).toHaveLength(1);
    expect(existsSync(join(dir, 'node_modules', '.web-build.lock'))).toBe(false);
  });
});
