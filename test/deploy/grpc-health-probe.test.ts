// The gRPC health probe the images carry (written inline in the Dockerfile, used by HEALTHCHECK and
// docker-compose) against a real service's gRPC server: exit 0 only while it reports SERVING; and the
// container health checks themselves, run against a service whose engine is down.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createLogger, EngineReadinessMonitor, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { ROOT } from './helm';
import { COMPONENTS } from './service-config';
import { testTempDir } from '../support/cleanup';

/** The probe's source: the `COPY <<'EOF' /usr/local/lib/grpc-health.cjs` heredoc of the Dockerfile. */
function probeSource(): string {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const match = /^COPY <<'EOF' \/usr\/local\/lib\/grpc-health\.cjs\n([\s\S]*?)\nEOF$/m.exec(dockerfile);
  if (!match) throw new Error('Dockerfile has no grpc-health.cjs heredoc');
  return match[1]!;
}

describe('grpc-health.cjs (image health probe)', () => {
  let dir: string;
  let probe: string;
  let server: GrpcServerHandle;
  // Asynchronous: the server under test lives in this process and must keep answering meanwhile.
  const run = (...args: string[]) =>
    new Promise<{ status: number | null; output: string }>((resolve) => {
      execFile(process.execPath, [probe, ...args], { encoding: 'utf8', timeout: 10_000 }, (error, stdout, stderr) => {
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}` });
      });
    });

  beforeAll(async () => {
    dir = testTempDir('grpc-health-');
    probe = join(dir, 'grpc-health.cjs');
    writeFileSync(probe, probeSource());
    server = await startGrpcServer({ name: 'probe.v1.ProbeService', host: '127.0.0.1', port: 0, logger: createLogger('probe-test', 'silent'), register: () => undefined });
  });
  afterAll(async () => {
    await server?.shutdown(1000);
    rmSync(dir, { recursive: true, force: true });
  });

  it('exits 0 while the server is SERVING, given a port or host:port, for the whole server or a named service', async () => {
    expect(await run(String(server.port))).toMatchObject({ status: 0, output: expect.stringContaining('SERVING') });
    expect((await run(`127.0.0.1:${server.port}`)).status).toBe(0);
    expect((await run(String(server.port), 'probe.v1.ProbeService')).status).toBe(0);
  });

  it('exits 1 for a service the server does not know (NOT_FOUND)', async () => {
    const result = await run(String(server.port), 'nope.v1.Nothing');
    expect(result.status).toBe(1);
    expect(result.output).toContain('grpc-status 5');
  });

  it('exits 1 when the server reports NOT_SERVING (draining)', async () => {
    server.health.setStatus('unhealthy');
    try {
      const result = await run(String(server.port));
      expect(result.status).toBe(1);
      expect(result.output).toContain('status 2');
    } finally {
      server.health.setStatus('healthy');
    }
  });

  it('exits 1 when nothing listens', async () => {
    const closed = await startGrpcServer({ name: 'gone.v1.Gone', host: '127.0.0.1', port: 0, logger: createLogger('probe-test', 'silent'), register: () => undefined });
    await closed.shutdown(1000);
    expect((await run(String(closed.port))).status).toBe(1);
  });
});

/** What a container health check runs: the compose `healthcheck.test` and the image `HEALTHCHECK CMD` of every service. */
function containerHealthChecks(): Array<{ where: string; command: string[] }> {
  const compose = parse(readFileSync(join(ROOT, 'docker-compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, { healthcheck?: { test: string[] } }> };
  const checks = COMPONENTS.map((component) => ({ where: `docker-compose.yaml ${component}`, command: compose.services[component]!.healthcheck!.test.slice(1) }));
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  let target = '';
  for (const line of dockerfile.split('\n')) {
    target = /^FROM\s+\S+\s+AS\s+(\S+)/.exec(line)?.[1] ?? target;
    const command = /^HEALTHCHECK\s.*?\sCMD\s+(.*)$/.exec(line)?.[1];
    if (command && target !== 'all-in-one') checks.push({ where: `Dockerfile ${target}`, command: command.match(/"[^"]*"|\S+/g)!.map((word) => word.replace(/^"(.*)"$/, '$1')) });
  }
  return checks;
}

describe('container health checks (compose and images): alive, not ready', () => {
  let dir: string;
  let probe: string;
  let stub: Server;
  let stubPort: number;
  let engineDown: GrpcServerHandle;

  /** Runs a health check's command here: the image's probe path becomes this copy, its port the server under test. */
  const runCheck = (command: string[], grpcPort: number, httpPort: number) =>
    new Promise<number | null>((resolve) => {
      const [program, ...args] = command.map((word) =>
        word
          .replace('/usr/local/lib/grpc-health.cjs', probe)
          .replace(/^\$[A-Z]+_GRPC_PORT$|^5005\d$/, String(grpcPort))
          .replace('127.0.0.1:8090', `127.0.0.1:${httpPort}`),
      );
      expect(program).toBe('node');
      execFile(process.execPath, args, { timeout: 10_000, env: { ...process.env, PORT: String(httpPort) } }, (error) => resolve(error ? (typeof error.code === 'number' ? error.code : null) : 0));
    });

  beforeAll(async () => {
    dir = testTempDir('container-health-');
    probe = join(dir, 'grpc-health.cjs');
    writeFileSync(probe, probeSource());
    const logger = createLogger('probe-test', 'silent');
    const readiness = new EngineReadinessMonitor({ checks: [{ name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => Promise.reject(new Error('connection refused')) }], logger, intervalMs: 100, failureThreshold: 1 });
    engineDown = await startGrpcServer({ name: 'probe.v1.ProbeService', host: '127.0.0.1', port: 0, logger, readiness, register: () => undefined });
    // The gateway while a peer is not ready: /healthz answers 503, /livez (the process alone) 200.
    stub = createServer((req, res) =>
      req.url === '/livez'
        ? res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
        : res.writeHead(503, { 'content-type': 'application/json' }).end('{"status":"unavailable"}'),
    );
    await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
    stubPort = (stub.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await engineDown?.shutdown(1000);
    await new Promise((resolve) => stub?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('every service has one in compose and in its image', () => {
    const where = containerHealthChecks().map((c) => c.where);
    for (const component of COMPONENTS) expect(where).toEqual(expect.arrayContaining([`docker-compose.yaml ${component}`, `Dockerfile ${component}`]));
  });

  it('stays healthy while an engine is unreachable (a restart cures no engine outage), and fails once nothing answers', async () => {
    for (let notReady = false; !notReady; ) notReady = (await new Promise<boolean>((resolve) => execFile(process.execPath, [probe, String(engineDown.port)], (error) => resolve(error !== null))));
    const closed = await startGrpcServer({ name: 'gone.v1.Gone', host: '127.0.0.1', port: 0, logger: createLogger('probe-test', 'silent'), register: () => undefined });
    await closed.shutdown(1000);
    for (const { where, command } of containerHealthChecks()) {
      expect([where, await runCheck(command, engineDown.port, stubPort)]).toEqual([where, 0]);
      expect([where, await runCheck(command, closed.port, closed.port)]).toEqual([where, 1]);
    }
  });
});
