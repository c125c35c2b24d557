import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

export interface RunningSystem {
  baseUrl: string;
  dataDir: string;
  process: ChildProcess;
  /** Graceful stop (SIGTERM), waiting for exit. */
  stop(): Promise<void>;
  /** SIGKILL: no chance to flush anything. */
  kill(): Promise<void>;
  logs(): string;
}

export interface StartOptions {
  env?: Record<string, string>;
  /** Reuse a data directory (restart tests); a fresh temporary one otherwise. */
  dataDir?: string;
}

/** Defaults that make tests quick without changing behaviour under test. */
export const TEST_ENV: Record<string, string> = {
  PASSWORD_HASH_COST: '1024',
  RATE_LIMIT_AUTH_PER_IP: '100000',
  RATE_LIMIT_AUTH_PER_EMAIL: '1000',
  LOG_LEVEL: 'warn',
};

/** Starts the all-in-one service as a child process on a free port, the way the README's command does. */
export async function startSystem(options: StartOptions = {}): Promise<RunningSystem> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'cards-e2e-'));
  const child = spawn(process.execPath, [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(ROOT, 'packages/all-in-one/src/main.ts')], {
    cwd: ROOT,
    env: { ...process.env, ...TEST_ENV, LOG_LEVEL: 'info', PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const baseUrl = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start in 60 s:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > 2_000_000) output = output.slice(-1_000_000);
      const match = /"msg":"gateway listening"/.test(output) && /"service":"gateway"[^\n]*"port":(\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolveUrl(`http://127.0.0.1:${match[1]}`);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code}:\n${output}`));
    });
  });
  return {
    baseUrl,
    dataDir,
    process: child,
    logs: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
    async kill() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
