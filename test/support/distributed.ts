// The production topology for the end-to-end suite: every service in its own process, talking gRPC
// (and events over whatever bus the environment selects), the gateway in front. Chosen by
// SYSTEM_TOPOLOGY=distributed (see startSystem in ./service.ts); the default stays the all-in-one.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { stopWhenFileEnds } from './cleanup';
import type { RunningSystem } from './service';
import { loopbackTopologyEnv } from '@cards/platform';

/** Start order: the gateway last (its /healthz answers 200 only when every peer does). */
const SERVICES = ['identity', 'cards', 'search', 'files', 'notifications', 'gateway'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** One service at a time, for crash tests in the production topology. */
export interface DistributedControls {
  /** SIGKILL one service's process and wait for its exit (the others keep running). */
  killService(name: ServiceName): Promise<void>;
  /** Start a killed service again with the same environment and wait until the gateway's /healthz is 200. */
  restartService(name: ServiceName): Promise<void>;
}

export interface DistributedStart {
  root: string;
  dataDir: string;
  /** The gateway's HTTP port. */
  port: number;
  /** Everything startSystem would give the all-in-one (TEST_ENV, namespaces, caller's env). */
  env: Record<string, string | undefined>;
  /** Variables for one service's process only, over `env`. */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  removeDataDirOnStop: boolean;
}

interface Child {
  name: ServiceName;
  process: ChildProcess;
  exited: Promise<void>;
  /** Killed by killService (a test's own crash), so its exit is not reported as unexpected. */
  killedOnPurpose?: boolean;
}

/**
 * Spawns the six processes (`node --import tsx services/<svc>/src/main.ts`, no tsx wrapper process,
 * so a SIGKILL reaches the service itself) and waits until the gateway's /healthz is 200.
 * stop() sends SIGTERM to all (gateway first) and waits; kill() SIGKILLs all; logs() concatenates
 * every process's output, each line prefixed with the service name.
 */
export async function startDistributedSystem(start: DistributedStart): Promise<RunningSystem & DistributedControls> {
  const { root, dataDir, port } = start;
  const env = {
    ...start.env,
    DATA_DIR: dataDir,
    ...(await loopbackTopologyEnv()),
    PORT: String(port),
    HOST: '127.0.0.1',
    // files refuses downloads without one; gateway and files share it, as the all-in-one's per-start token.
    FILES_INTERNAL_TOKEN: start.env.FILES_INTERNAL_TOKEN || randomBytes(32).toString('base64url'),
  };
  const logs: string[] = [];
  let logLength = 0;
  let stopping = false;
  const spawnService = (name: ServiceName): Child => {
    const entry = join(root, 'services', name, 'src', 'main.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: root, env: { ...env, ...start.serviceEnv?.[name] }, stdio: ['ignore', 'pipe', 'pipe'] });
    stopWhenFileEnds(child);
    let partial = '';
    const onData = (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) {
        logs.push(`[${name}] ${line}\n`);
        logLength += line.length;
      }
      while (logLength > 2_000_000 && logs.length > 1) logLength -= logs.shift()!.length;
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const result: Child = { name, process: child, exited };
    // A service that dies while the tests run leaves only ECONNREFUSED or UNAVAILABLE in the failures: say which and why.
    child.once('exit', (code, signal) => {
      if (stopping || result.killedOnPurpose) return;
      const own = logs.filter((line) => line.startsWith(`[${name}] `)).slice(-40).join('');
      process.stderr.write(`[distributed] ${name} exited unexpectedly (${code ?? signal}); its last log lines:\n${own}`);
    });
    return result;
  };
  const children: Child[] = SERVICES.map(spawnService);
  const output = () => logs.join('');
  const killAll = async () => {
    stopping = true;
    for (const c of children) if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
  };

  const baseUrl = `http://127.0.0.1:${port}`;
  // Six Node processes compiling TypeScript at once on two cores: allow more than the all-in-one's 90 s.
  const deadline = Date.now() + 150_000;
  for (;;) {
    const dead = children.find((c) => c.process.exitCode !== null || c.process.signalCode !== null);
    if (dead) {
      await killAll();
      const text = output();
      // startSystem retries on a new set of ports when one was taken in between.
      const portTaken = /EADDRINUSE|No address added out of total/.test(text) ? ' (EADDRINUSE)' : '';
      throw new Error(`${dead.name} exited with ${dead.process.exitCode ?? dead.process.signalCode}${portTaken}:\n${text}`);
    }
    if (Date.now() > deadline) {
      await killAll();
      throw new Error(`distributed system did not become healthy in 150 s:\n${output()}`);
    }
    const healthy = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (healthy) break;
    await new Promise((r) => setTimeout(r, 200));
  }

  const gateway = children.find((c) => c.name === 'gateway')!;
  const system: RunningSystem & DistributedControls = {
    baseUrl,
    dataDir,
    process: gateway.process,
    logs: output,
    async stop() {
      stopping = true;
      // The gateway first (no new requests), then the services, each given a graceful shutdown.
      for (const c of [...children].reverse()) {
        if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGTERM');
        if (c.name === 'gateway') await c.exited;
      }
      // A service that does not finish its graceful shutdown in 20 s is killed (and it shows in logs()).
      const timer = setTimeout(() => {
        for (const c of children) if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGKILL');
      }, 20_000);
      await Promise.all(children.map((c) => c.exited));
      clearTimeout(timer);
      if (start.removeDataDirOnStop) rmSync(dataDir, { recursive: true, force: true });
    },
    kill: killAll,
    async killService(name: ServiceName) {
      const c = children.find((child) => child.name === name)!;
      c.killedOnPurpose = true;
      if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGKILL');
      await c.exited;
    },
    async restartService(name: ServiceName) {
      const index = children.findIndex((child) => child.name === name);
      const old = children[index]!;
      if (old.process.exitCode === null && old.process.signalCode === null) throw new Error(`${name} is still running: killService first`);
      const fresh = spawnService(name);
      children[index] = fresh;
      if (name === 'gateway') system.process = fresh.process;
      // The gateway's /healthz is 200 only when every peer serves again.
      const restartDeadline = Date.now() + 120_000;
      for (;;) {
        if (fresh.process.exitCode !== null || fresh.process.signalCode !== null) throw new Error(`${name} exited on restart:\n${output()}`);
        if (Date.now() > restartDeadline) throw new Error(`${name} restarted but the gateway's /healthz was not 200 within 120 s:\n${output()}`);
        const healthy = await fetch(`${baseUrl}/healthz`, { signal: AbortSignal.timeout(1000) })
          .then((r) => r.status === 200)
          .catch(() => false);
        if (healthy) return;
        await new Promise((r) => setTimeout(r, 200));
      }
    },
  };
  return system;
}
