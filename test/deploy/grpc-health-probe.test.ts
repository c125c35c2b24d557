// The gRPC health probe the images carry (written inline in the Dockerfile, used by HEALTHCHECK and
// docker-compose) against a real service's gRPC server: exit 0 only while it reports SERVING.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { ROOT } from './helm';

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
    dir = mkdtempSync(join(tmpdir(), 'grpc-health-'));
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
