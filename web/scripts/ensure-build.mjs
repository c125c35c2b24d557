// Builds the web app (vite build -> web/dist) unless the build is newer than every source file.
// Used by the root `start` script and by the browser tests, so a fresh clone serves the app at /.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestMtime(join(path, name))));
}

export function webBuildIsCurrent(dir = webDir) {
  const built = join(dir, 'dist', 'index.html');
  if (!existsSync(built)) return false;
  // The shared card rules are bundled too: a changed limit must rebuild the app.
  const sources = ['src', 'index.html', 'vite.config.ts', 'package.json', '../packages/card-rules/src'].map((p) => join(dir, p)).filter(existsSync);
  return statSync(built).mtimeMs >= Math.max(...sources.map(newestMtime));
}

const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Whether the process that wrote `lock` (its pid inside) is gone, so its lock is left over (killed while building). */
function leftOver(lock) {
  let pid;
  try {
    pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    // Made but its pid not written yet (or just removed): its owner is alive or the lock is gone; look again.
    return false;
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
}

/**
 * One build at a time in a web directory: a lock directory (mkdir is atomic) with its owner's pid, taken over when that
 * process is gone. The browser test files each call this as they start, two at once under jest's two workers: without
 * it both found no build, and the second's Vite emptied web/dist while the first's gateway was starting on it (or
 * serving it).
 */
function withBuildLock(dir, work) {
  const lock = join(dir, 'node_modules', '.web-build.lock');
  mkdirSync(join(dir, 'node_modules'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      if (leftOver(lock)) rmSync(lock, { recursive: true, force: true });
      else pause(200);
    }
  }
  try {
    writeFileSync(join(lock, 'pid'), String(process.pid));
    return work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function viteBuild(dir, quiet) {
  const vite = join(dir, 'node_modules', 'vite', 'bin', 'vite.js');
  return spawnSync(process.execPath, [vite, 'build', '--logLevel', quiet ? 'error' : 'warn'], {
    cwd: dir,
    stdio: 'inherit',
    // Jest sets NODE_ENV=test, which would make Vite emit the development JSX runtime (with source paths).
    env: { ...process.env, NODE_ENV: 'production' },
  });
}

/**
 * Builds the app unless its build is current; a process that finds another building waits for that build and uses it.
 * `dir` and `build` (a function answering spawnSync's result) are for the test of this script.
 */
export function ensureWebBuild({ quiet = false, dir = webDir, build = viteBuild } = {}) {
  if (webBuildIsCurrent(dir)) return;
  withBuildLock(dir, () => {
    // Built by the process this one waited for.
    if (webBuildIsCurrent(dir)) return;
    if (!quiet) console.log('Building the web app (web/dist)…');
    const result = build(dir, quiet);
    if (result.status !== 0) throw new Error(`web app build failed (exit ${result.status})`);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureWebBuild();
  } catch (err) {
    console.error(String(err));
    process.exit(1);
  }
}
