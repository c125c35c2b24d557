import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startFiles } from '../src/main';
import { stopWhenFileEnds, testTempDir } from '../../../test/support/cleanup';

const root = join(__dirname, '../../..');

/** The files service's own entry point in a process of its own (node itself, no tsx wrapper), its output kept. */
function filesProcess(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'services/files/src/main.ts')], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  stopWhenFileEnds(child);
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, output: () => output };
}

describe('a second files process on the data dir of a running one (embedded store)', () => {
  let dir: string;
  beforeEach(() => (dir = testTempDir('files-second-process-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const env = () => ({
    DATA_DIR: dir,
    FILES_GRPC_HOST: '127.0.0.1',
    FILES_GRPC_PORT: '0',
    FILES_HTTP_HOST: '127.0.0.1',
    FILES_HTTP_PORT: '0',
    CARDS_SERVICE_ADDR: '127.0.0.1:1',
    FILES_INTERNAL_TOKEN: 't'.repeat(32),
    LOG_LEVEL: 'info',
  });

  it('refuses to start, naming the lock file and the pid holding it; starts once the first stopped, and gives the lock back at its stop', async () => {
    const running = await startFiles(env());
    const lockPath = join(dir, 'files.lock');
    try {
      const second = filesProcess(env());
      expect(await second.exited).toBe(1);
      expect(second.output()).toContain(`another files process (pid ${process.pid} on this host`);
      expect(second.output()).toContain(lockPath);
      expect(second.output()).toContain('files failed to start');
    } finally {
      await running.stop();
    }
    // Stopped: the lock is given back, and a new process takes it.
    expect(existsSync(lockPath)).toBe(false);
    const next = filesProcess(env());
    try {
      // Up (its last start step logged), so that SIGTERM finds its graceful stop installed.
      for (let i = 0; i < 1200 && !next.output().includes('internal download server listening'); i++) {
        if (next.child.exitCode !== null) throw new Error(`files exited: ${next.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(JSON.parse(readFileSync(lockPath, 'utf8'))).toMatchObject({ service: 'files', pid: next.child.pid });
    } finally {
      next.child.kill('SIGTERM');
      await next.exited;
    }
    // A graceful stop (SIGTERM) removes it too.
    expect(existsSync(lockPath)).toBe(false);
  }, 90_000);
});
