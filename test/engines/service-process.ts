import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { createGrpcClient } from '@cards/platform';
import { health } from '@cards/proto';
import { spawnNodeEntry } from '../support/node-process';
import { testTempDir } from '../support/cleanup';

const ROOT = resolve(__dirname, '..', '..');

export interface ServiceProcess {
  child: ChildProcess;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, SIGKILL after 10 s; removes the data directory. */
  stop(): Promise<void>;
}

/**
 * Runs one service alone as `node --import tsx services/<name>/src/main.ts` (the production entry point,
 * no wrapper), with its own DATA_DIR and the given environment.
 */
export function startServiceProcess(name: string, env: Record<string, string>): ServiceProcess {
  const dataDir = testTempDir(`cards-${name}-`);
  const { child, output, exited } = spawnNodeEntry(`services/${name}/src/main.ts`, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: dataDir, LOG_LEVEL: 'info', ...env },
    keepChars: 500_000,
  });
  return {
    child,
    output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The gRPC status code UNAVAILABLE (14), for assertions on refused calls. */
export const GRPC_UNAVAILABLE = 14;

/** Engine probes fast enough for an engine-loss test to see readiness change within seconds. */
export const FAST_READINESS = { READINESS_INTERVAL_MS: '500', READINESS_TIMEOUT_MS: '1500', READINESS_FAILURE_THRESHOLD: '2' };

/** grpc.health.v1 of one address, for service "" or a named one. */
export function healthOf(address: string): { status(service?: string): Promise<'SERVING' | 'NOT_SERVING' | 'UNREACHABLE' | string>; channel: { close(): void } } {
  const { client, channel } = createGrpcClient(health.HealthDefinition, address, { deadlineMs: 2000 });
  return {
    channel,
    async status(service = '') {
      try {
        const { status } = await client.check({ service });
        return health.HealthCheckResponse_ServingStatus[status] ?? String(status);
      } catch {
        return 'UNREACHABLE';
      }
    },
  };
}

/** Polls until condition() holds, failing with `what` after timeoutMs; answers how long it took. */
export async function waitFor(what: string, condition: () => Promise<boolean> | boolean, timeoutMs: number, process?: ServiceProcess): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await condition()) return Date.now() - started;
    if (process && process.child.exitCode !== null) throw new Error(`${what}: the service exited (code ${process.child.exitCode})\n${process.output().slice(-4000)}`);
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not reached within ${timeoutMs} ms${process ? `\n${process.output().slice(-4000)}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const RETRIES_RAN_OUT = /NumberOfRetriesExceeded|retries exceeded|Crash: KafkaJS\w*Error: Connection error/i;

/** The consumer group a log line names (the bus's `group`, kafkajs' `groupId`), if it is one of the service's JSON lines. */
function groupOf(line: string): string | undefined {
  try {
    const entry = JSON.parse(line) as { group?: unknown; groupId?: unknown };
    const group = entry.group ?? entry.groupId;
    return typeof group === 'string' ? group : undefined;
  } catch {
    return undefined;
  }
}

/**
 * kafkajs gave up the work of consumer group `group` itself: its retries ran out (an admin's, creating a dead-letter
 * topic, end in a consumer crash naming the refused connection). Only that group's lines count: during an outage the
 * process's other consumers give up their own reconnects after ~10 s and the bus restarts them, which says nothing of
 * the work under test (search's idle search-index consumer did so just as the verification test's dead letter began).
 */
export const kafkaRetriesRanOut = (output: string, group: string): boolean =>
  output.split('\n').some((line) => RETRIES_RAN_OUT.test(line) && groupOf(line) === group);

const refusals = (output: string) => output.split('ECONNREFUSED').length;

/**
 * For a service whose work in consumer group `group` is being retried by kafkajs against a broker that has just gone
 * away: waits until kafkajs logs a refused attempt after `attempt()` (which lets the work go on), sends SIGTERM, and
 * answers what came first: `exited <code>` or `kafkajs retries ran out` (for that group's work).
 */
export async function sigtermWhileKafkaRetries(service: ServiceProcess, group: string, what: string, attempt: () => void): Promise<string> {
  const refusedBefore = refusals(service.output());
  attempt();
  await waitFor(what, () => refusals(service.output()) > refusedBefore, 60_000, service);
  service.child.kill('SIGTERM');
  const stopped = service.exited.then((code) => `exited ${code}`);
  const gaveUp = (async () => {
    while (service.child.exitCode === null && !kafkaRetriesRanOut(service.output(), group)) await new Promise((r) => setTimeout(r, 50));
    return 'kafkajs retries ran out';
  })();
  return Promise.race([stopped, gaveUp]);
}
