import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { freePort } from '@cards/platform';
import { startDistributedSystem, type DistributedControls, type DistributedStart } from './distributed';
import { spawnNodeEntry } from './node-process';
import { testTempDir } from './cleanup';

const ROOT = resolve(__dirname, '../..');

/** killService/restartService: SYSTEM_TOPOLOGY=distributed only (one process per service). */
export interface RunningSystem extends Partial<DistributedControls> {
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
  /** Variables for one service's process only, over `env` (e.g. a gateway and files holding different tokens): needs SYSTEM_TOPOLOGY=distributed. */
  serviceEnv?: DistributedStart['serviceEnv'];
}

/** Defaults that make tests quick without changing behaviour under test. */
export const TEST_ENV: Record<string, string> = {
  PASSWORD_HASH_COST: '1024',
  RATE_LIMIT_AUTH_PER_IP: '100000',
  RATE_LIMIT_AUTH_PER_EMAIL: '1000',
  RATE_LIMIT_MAIL_PER_IP: '100000',
  // The gateway's admission line (fb59e0b): a test's burst (100 voters at once, reads of every card of a document) waits
  // its turn instead of being answered 503 after the line's wait (5 s) on a loaded machine, or 429 past 64 requests of one client.
  HTTP_REQUEST_QUEUE_WAIT_MS: '120000',
  HTTP_REQUESTS_PER_CLIENT: '100000',
  LOG_LEVEL: 'warn',
};

/**
 * When the suite runs against shared engines (KAFKA_BROKERS / MONGO_URL in the environment), each
 * system gets its own Kafka topic/group namespace and MongoDB database prefix, named after its data
 * directory, so systems started in parallel do not consume each other's events or share databases.
 */
export function sharedEngineNamespace(dataDir: string): Record<string, string> {
  if (!process.env.KAFKA_BROKERS && !process.env.MONGO_URL && !process.env.ELASTICSEARCH_URL) return {};
  const ns = dataDir.split(/[\\/]/).pop()!.replace(/[^A-Za-z0-9]/g, '');
  return { KAFKA_NAMESPACE: ns, MONGO_DATABASE_PREFIX: ns, ELASTICSEARCH_INDEX_PREFIX: ns.toLowerCase() };
}

export { freePort };

/** Starts the all-in-one service as a child process on a free port, the way the README's command does. */
export async function startSystem(options: StartOptions = {}): Promise<RunningSystem> {
  // A free port can be taken by a parallel test between choosing and binding it: retry on a new one.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startSystemOnce(options);
    } catch (err) {
      const portTaken = err instanceof Error && /EADDRINUSE/.test(err.message);
      if (!portTaken || options.env?.PORT || attempt >= 3) throw err;
    }
  }
}

async function startSystemOnce(options: StartOptions): Promise<RunningSystem> {
  // A data directory made here is removed by stop() or, whatever happened, when the test file ends (kill(), a failed start).
  const dataDir = options.dataDir ?? testTempDir('cards-e2e-');
  // A caller that needs the address up front (PUBLIC_URL in e-mail links) passes PORT itself.
  const port = options.env?.PORT ? Number(options.env.PORT) : await freePort();
  const systemEnv: Record<string, string | undefined> = { ...process.env, ...TEST_ENV, ...sharedEngineNamespace(dataDir), PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, ...options.env };
  // SYSTEM_TOPOLOGY=distributed: every service its own process (test/support/distributed.ts).
  if (systemEnv.SYSTEM_TOPOLOGY === 'distributed') {
    return startDistributedSystem({ root: ROOT, dataDir, port, env: systemEnv, serviceEnv: options.serviceEnv, removeDataDirOnStop: !options.dataDir });
  }
  if (options.serviceEnv) throw new Error('serviceEnv needs SYSTEM_TOPOLOGY=distributed: the all-in-one gives every service one environment');
  const { child, output: logs, exited } = spawnNodeEntry(join(ROOT, 'packages/all-in-one/src/main.ts'), { cwd: ROOT, env: systemEnv });
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`service exited with ${child.exitCode}:\n${logs()}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      throw new Error(`service did not become healthy in 90 s:\n${logs()}`);
    }
    const healthy = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (healthy) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    baseUrl,
    dataDir,
    process: child,
    logs,
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
