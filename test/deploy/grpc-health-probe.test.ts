// The gRPC health probe the images carry (written inline in the Dockerfile, used by HEALTHCHECK and
// docker-compose) against a real service's gRPC server: exit 0 only while it reports SERVING; the
// container health checks themselves, run against a service whose engine is down; and the gateway's
// (livez.cjs) against a real gateway whose HTTP port is full.
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createLogger, EngineReadinessMonitor, freePort, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { startGateway } from '../../services/gateway/src/main';
import { ROOT } from './helm';
import { COMPONENTS } from './service-config';
import { testTempDir } from '../support/cleanup';
import { holdAnsweredConnections } from '../support/held-connections';

/** A script the images carry: the `COPY <<'EOF' /usr/local/lib/<name>` heredoc of the Dockerfile. */
function imageScript(name: 'grpc-health.cjs' | 'livez.cjs'): string {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const match = new RegExp(`^COPY <<'EOF' /usr/local/lib/${name.replace('.', '\\.')}\\n([\\s\\S]*?)\\nEOF$`, 'm').exec(dockerfile);
  if (!match) throw new Error(`Dockerfile has no ${name} heredoc`);
  return match[1]!;
}
const probeSource = () => imageScript('grpc-health.cjs');

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
    if (command) checks.push({ where: `Dockerfile ${target}`, command: command.match(/"[^"]*"|\S+/g)!.map((word) => word.replace(/^"(.*)"$/, '$1')) });
  }
  return checks;
}

describe('container health checks (compose and images): alive, not ready', () => {
  let dir: string;
  let probe: string;
  let livez: string;
  let stub: Server;
  let stubPort: number;
  let engineDown: GrpcServerHandle;

  /**
   * Runs a health check's command here: the image's scripts become these copies, its ports the server under test (the
   * gateway's stub stands for both its HTTP port and its metrics listener).
   */
  const runCheck = (command: string[], grpcPort: number, httpPort: number) =>
    new Promise<number | null>((resolve) => {
      const [program, ...args] = command.map((word) =>
        word
          .replace('/usr/local/lib/grpc-health.cjs', probe)
          .replace('/usr/local/lib/livez.cjs', livez)
          .replace(/^\$[A-Z]+_GRPC_PORT$|^5005\d$/, String(grpcPort)),
      );
      expect(program).toBe('node');
      const env = { ...process.env, PORT: String(httpPort), METRICS_PORT: String(httpPort), HOST: '127.0.0.1', METRICS_HOST: '127.0.0.1' };
      execFile(process.execPath, args, { timeout: 10_000, env }, (error) => resolve(error ? (typeof error.code === 'number' ? error.code : null) : 0));
    });

  beforeAll(async () => {
    dir = testTempDir('container-health-');
    probe = join(dir, 'grpc-health.cjs');
    writeFileSync(probe, probeSource());
    livez = join(dir, 'livez.cjs');
    writeFileSync(livez, imageScript('livez.cjs'));
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

  it("stays healthy while an engine is unreachable (a restart cures no engine outage), the all-in-one's excepted, and fails once nothing answers", async () => {
    for (let notReady = false; !notReady; ) notReady = (await new Promise<boolean>((resolve) => execFile(process.execPath, [probe, String(engineDown.port)], (error) => resolve(error !== null))));
    const closed = await startGrpcServer({ name: 'gone.v1.Gone', host: '127.0.0.1', port: 0, logger: createLogger('probe-test', 'silent'), register: () => undefined });
    await closed.shutdown(1000);
    for (const { where, command } of containerHealthChecks()) {
      // The all-in-one's asks readiness: its services are in its own process, and one not ready is the container's own
      // state to show (before, it asked /livez alone and stayed healthy).
      expect([where, await runCheck(command, engineDown.port, stubPort)]).toEqual([where, where === 'Dockerfile all-in-one' ? 1 : 0]);
      expect([where, await runCheck(command, closed.port, closed.port)]).toEqual([where, 1]);
    }
  });
});

/** The environment of each container running the gateway (its image's ENV; compose's environment), with its health check. */
function gatewayContainers(): Array<{ where: string; env: Record<string, string>; command: string[] }> {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
  const checks = containerHealthChecks();
  const imageEnv = (target: string) => {
    const stage = dockerfile.split(/^FROM\s+/m).find((text) => new RegExp(`^\\S+\\s+AS\\s+${target}\\n`).test(text)) ?? '';
    const lines = stage.split('\n').filter((line) => line.startsWith('ENV '));
    return Object.fromEntries(lines.flatMap((line) => [...line.matchAll(/ (\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])));
  };
  const compose = parse(readFileSync(join(ROOT, 'docker-compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, { environment: Record<string, unknown> }> };
  const composeEnv = Object.fromEntries(Object.entries(compose.services.gateway!.environment).map(([k, v]) => [k, String(v)]));
  const commandOf = (where: string) => checks.find((c) => c.where === where)!.command;
  return [
    { where: 'Dockerfile gateway', env: imageEnv('gateway'), command: commandOf('Dockerfile gateway') },
    { where: 'Dockerfile all-in-one', env: imageEnv('all-in-one'), command: commandOf('Dockerfile all-in-one') },
    { where: 'docker-compose.yaml gateway', env: composeEnv, command: commandOf('docker-compose.yaml gateway') },
  ];
}

describe("the gateway's container health checks against a real gateway whose HTTP port is full", () => {
  let dir: string;
  let livez: string;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let metricsPort: number;
  let peer: GrpcServerHandle;
  const held: Socket[] = [];
  /** What each container's check says when it passes: the gateway's asks liveness, the all-in-one's readiness. */
  const passed = (where: string) => (where === 'Dockerfile all-in-one' ? `ready (GET /healthz on 127.0.0.1:${metricsPort})` : `alive (GET /livez on 127.0.0.1:${metricsPort})`);

  /** Runs a container's check here with that container's environment, its ports those of the gateway under test. */
  const runCheck = (container: { env: Record<string, string>; command: string[] }, overrides: Record<string, string | undefined> = {}) =>
    new Promise<{ status: number | null; output: string }>((resolve) => {
      const [program, ...args] = container.command.map((word) => word.replace('/usr/local/lib/livez.cjs', livez));
      expect(program).toBe('node');
      const env: Record<string, string | undefined> = { PATH: process.env.PATH, ...container.env, PORT: String(gateway.port) };
      // A container with a metrics listener has it where the gateway under test has its own.
      if (container.env.METRICS_PORT) env.METRICS_PORT = String(metricsPort);
      Object.assign(env, overrides);
      execFile(process.execPath, args, { encoding: 'utf8', timeout: 10_000, env }, (error, stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: `${stdout}${stderr}` }),
      );
    });

  beforeAll(async () => {
    dir = testTempDir('gateway-health-');
    livez = join(dir, 'livez.cjs');
    writeFileSync(livez, imageScript('livez.cjs'));
    metricsPort = await freePort();
    // One gRPC server answering health stands for every peer: /livez asks none, /healthz (the all-in-one's check) all.
    peer = await startGrpcServer({ name: 'peer.v1.Peer', host: '127.0.0.1', port: 0, logger: createLogger('probe-test', 'silent'), register: () => undefined });
    const peers = Object.fromEntries(['IDENTITY', 'CARDS', 'SEARCH', 'FILES', 'NOTIFICATIONS'].map((name) => [`${name}_SERVICE_ADDR`, `127.0.0.1:${peer.port}`]));
    gateway = await startGateway({ ...peers, PORT: '0', HOST: '127.0.0.1', METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1', HTTP_MAX_CONNECTIONS: '2', FILES_INTERNAL_TOKEN: 'health-check-test-token', LOG_LEVEL: 'silent', ACCESS_LOG_LEVEL: 'silent' });
  });
  afterAll(async () => {
    for (const socket of held) socket.destroy();
    await gateway?.stop();
    await peer?.shutdown(1000);
    rmSync(dir, { recursive: true, force: true });
  });

  it('asks GET /livez (the all-in-one: /healthz) on the metrics listener each of them turns on, so they stay healthy; with METRICS_PORT unset, on PORT', async () => {
    const containers = gatewayContainers();
    // Port free: every check passes, the one asking PORT too.
    for (const container of containers) expect([container.where, (await runCheck(container)).status]).toEqual([container.where, 0]);
    expect((await runCheck(containers[0]!, { METRICS_PORT: undefined })).output).toContain(`GET /livez on 127.0.0.1:${gateway.port}`);

    // Every connection HTTP_MAX_CONNECTIONS allows is held (each counted once its first answer is back; kept alive).
    await holdAnsweredConnections(gateway.port, 2, held);
    expect((await fetch(`http://127.0.0.1:${gateway.port}/livez`)).status).toBe(503);

    for (const container of containers) {
      const result = await runCheck(container);
      expect([container.where, result.status, result.output.trim()]).toEqual([container.where, 0, passed(container.where)]);
    }
    // Without the listener the same check asks PORT, and a full port fails it.
    const onPort = await runCheck(containers[0]!, { METRICS_PORT: undefined });
    expect([onPort.status, onPort.output]).toEqual([1, expect.stringContaining('answered 503')]);
  });

  it("the all-in-one's check fails, naming them, while services behind the gateway are not ready; the gateway's stay healthy", async () => {
    // (The port is still full from the test above: the answer comes from the metrics listener.)
    peer.health.setStatus('unhealthy');
    try {
      for (const container of gatewayContainers()) {
        const result = await runCheck(container);
        if (container.where !== 'Dockerfile all-in-one') expect([container.where, result.status]).toEqual([container.where, 0]);
        // Before, it asked /livez alone: healthy while every card request was answered 503.
        else expect([result.status, result.output]).toEqual([1, expect.stringMatching(/GET \/healthz on 127\.0\.0\.1:\d+ answered 503 .*not answering: identity, cards, search, files, notifications/)]);
      }
    } finally {
      peer.health.setStatus('healthy');
    }
    const again = gatewayContainers().find((c) => c.where === 'Dockerfile all-in-one')!;
    expect((await runCheck(again)).status).toBe(0);
  });

  it('fails once nothing answers on the metrics listener', async () => {
    const closed = await freePort();
    for (const container of gatewayContainers()) expect([container.where, (await runCheck(container, { METRICS_PORT: String(closed) })).status]).toEqual([container.where, 1]);
  });
});
