import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Flags for Debian's chromium in a container: no sandbox, no GPU, no calls home. */
export const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => Boolean(p));

/**
 * Debian's chromium: found, or installed with apt-get when running as root in CI, or the reason why not.
 * Synchronous so a test file can choose `describe` or `describe.skip` while it loads.
 */
export function findOrInstallChromium(): { path: string } | { reason: string } {
  const found = CANDIDATES.find((p) => existsSync(p));
  if (found) return { path: found };
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!process.env.CI) return { reason: 'chromium is not installed (apt-get install -y chromium); set CI=true to let the suite install it' };
  if (!isRoot) return { reason: 'chromium is not installed and installing it needs root' };
  const hasApt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (!hasApt) return { reason: 'chromium is not installed and apt-get is not available' };
  console.log('Installing Debian chromium for the browser tests (apt-get install -y chromium)…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env, timeout: 180_000 });
  const installed = spawnSync('apt-get', ['install', '-y', '-qq', 'chromium'], { stdio: 'ignore', env, timeout: 420_000 });
  const path = CANDIDATES.find((p) => existsSync(p));
  if (path) return { path };
  return { reason: `apt-get install chromium failed (exit ${installed.status ?? installed.signal})` };
}

/**
 * A browser test file's start: `describe` when chromium is here (with its path to launch), else `describe.skip` and the
 * reason printed, so a skipped browser suite always says why.
 */
export function chromiumForSuite(): { describeInBrowser: typeof describe; executablePath: string } {
  const found = findOrInstallChromium();
  if ('reason' in found) {
    console.warn(`SKIPPED browser tests: ${found.reason}`);
    return { describeInBrowser: describe.skip, executablePath: '' };
  }
  return { describeInBrowser: describe, executablePath: found.path };
}
