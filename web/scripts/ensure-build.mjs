// Builds the web app (vite build -> web/dist) unless the build is newer than every source file.
// Used by the root `start` script and by the browser tests, so a fresh clone serves the app at /.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const built = join(webDir, 'dist', 'index.html');

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return Math.max(stat.mtimeMs, ...readdirSync(path).map((name) => newestMtime(join(path, name))));
}

export function webBuildIsCurrent() {
  if (!existsSync(built)) return false;
  // The shared card rules are bundled too: a changed limit must rebuild the app.
  const sources = ['src', 'index.html', 'vite.config.ts', 'package.json', '../packages/card-rules/src'].map((p) => join(webDir, p)).filter(existsSync);
  return statSync(built).mtimeMs >= Math.max(...sources.map(newestMtime));
}

export function ensureWebBuild({ quiet = false } = {}) {
  if (webBuildIsCurrent()) return;
  if (!quiet) console.log('Building the web app (web/dist)…');
  const vite = join(webDir, 'node_modules', 'vite', 'bin', 'vite.js');
  const result = spawnSync(process.execPath, [vite, 'build', '--logLevel', quiet ? 'error' : 'warn'], {
    cwd: webDir,
    stdio: 'inherit',
    // Jest sets NODE_ENV=test, which would make Vite emit the development JSX runtime (with source paths).
    env: { ...process.env, NODE_ENV: 'production' },
  });
  if (result.status !== 0) throw new Error(`web app build failed (exit ${result.status})`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    ensureWebBuild();
  } catch (err) {
    console.error(String(err));
    process.exit(1);
  }
}
