import { ClientError, Status } from 'nice-grpc';
import { notifications } from '@cards/proto';
import { createGrpcClient } from '../src/grpc-client';
import { grpcServerSettingsFrom, startGrpcServer, type GrpcServerHandle, type StartGrpcServerOptions } from '../src/grpc-server';
import { createLogger } from '../src/logger';
import { NotFoundError } from '../src/errors';

const logger = createLogger('metrics-test', 'silent');

/** Resolved when a slow call has reached its handler, by caller id. */
const started = new Map<string, () => void>();
const handlerStarted = (callerId: string) => new Promise<void>((resolve) => started.set(callerId, resolve));

/** A notifications server whose ListNotifications answers per caller id: "missing" is NOT_FOUND, "slow:<ms>" waits first. */
function startServer(settings: Partial<StartGrpcServerOptions> = {}): Promise<GrpcServerHandle> {
  return startGrpcServer({
    name: 'notifications.v1.NotificationService',
    logger,
    ...settings,
    register: (server) =>
      server.add(notifications.NotificationServiceDefinition, {
        async listNotifications(req) {
          if (req.callerId === 'missing') throw new NotFoundError('no such user');
          const slow = /^slow:(\d+)$/.exec(req.callerId);
          if (slow) {
            started.get(req.callerId)?.();
            await new Promise((resolve) => setTimeout(resolve, Number(slow[1])));
          }
          return { notifications: [] };
        },
        async markRead() {
          return {};
        },
        async markAllRead() {
          return {};
        },
        async getListVersion() {
          return { version: '' };
        },
      }),
  });
}

/** The value of one sample line of a Prometheus text exposition, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = match[2]!.split(',');
    if (wanted.every((pair) => present.includes(pair))) return Number(match[3]);
  }
  return 0;
}

describe('gRPC server metrics (METRICS_PORT)', () => {
  let server: GrpcServerHandle;
  let client: ReturnType<typeof createGrpcClient<typeof notifications.NotificationServiceDefinition>>;
  beforeAll(async () => {
    server = await startServer({ metricsPort: 0, metricsHost: '127.0.0.1' });
    client = createGrpcClient(notifications.NotificationServiceDefinition, server.address, { deadlineMs: 5000 });
  });
  afterAll(async () => {
    client.channel.close();
    await server.shutdown();
  });
  const scrape = () => fetch(`http://127.0.0.1:${server.metricsPort}/metrics`);
  const method = { grpc_service: 'notifications.v1.NotificationService', grpc_method: 'ListNotifications', grpc_type: 'unary' };

  it('answers /metrics with the process metrics and the calls served, by method and status code', async () => {
    for (const userId of ['a', 'b']) await client.client.listNotifications({ callerId: userId });
    await expect(client.client.listNotifications({ callerId: 'missing' })).rejects.toMatchObject({ code: Status.NOT_FOUND });
    await client.client.markAllRead({ callerId: 'a' });
    const res = await scrape();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(sample(text, 'grpc_server_handled_total', { ...method, grpc_code: 'OK' })).toBe(2);
    expect(sample(text, 'grpc_server_handled_total', { ...method, grpc_code: 'NOT_FOUND' })).toBe(1);
    expect(sample(text, 'grpc_server_handled_total', { ...method, grpc_method: 'MarkAllRead', grpc_code: 'OK' })).toBe(1);
    expect(sample(text, 'grpc_server_handling_seconds_count', method)).toBe(3);
    expect(sample(text, 'grpc_server_handling_seconds_bucket', { ...method, le: '+Inf' })).toBe(3);
  });

  it('answers GET /livez 200 {"status":"ok"} as the gateway\'s HTTP port does (the chart\'s liveness probe asks it here)', async () => {
    const live = await fetch(`http://127.0.0.1:${server.metricsPort}/livez`);
    expect({ status: live.status, type: live.headers.get('content-type'), cache: live.headers.get('cache-control'), body: await live.json() }).toEqual({
      status: 200,
      type: 'application/json; charset=utf-8',
      cache: 'no-store',
      body: { status: 'ok' },
    });
    const head = await fetch(`http://127.0.0.1:${server.metricsPort}/livez`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    const post = await fetch(`http://127.0.0.1:${server.metricsPort}/livez`, { method: 'POST' });
    expect({ status: post.status, allow: post.headers.get('allow') }).toEqual({ status: 405, allow: 'GET, HEAD' });
  });

  it('answers other paths 404 and other methods 405, as JSON {"message"}', async () => {
    const other = await fetch(`http://127.0.0.1:${server.metricsPort}/`);
    expect(other.status).toBe(404);
    expect(Object.keys((await other.json()) as object)).toEqual(['message']);
    const post = await fetch(`http://127.0.0.1:${server.metricsPort}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(Object.keys((await post.json()) as object)).toEqual(['message']);
  });

  it('serves no metrics listener without a metrics port, and closes it at shutdown', async () => {
    const plain = await startServer();
    expect(plain.metricsPort).toBeUndefined();
    await plain.shutdown();
    const withMetrics = await startServer({ metricsPort: 0 });
    const port = withMetrics.metricsPort!;
    expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(200);
    await withMetrics.shutdown();
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
  });
});

describe('gRPC server settings from the environment', () => {
  it('defaults to a 5 s drain and no metrics listener, and reads SHUTDOWN_DRAIN_MS, METRICS_PORT and METRICS_HOST', () => {
    expect(grpcServerSettingsFrom({})).toMatchObject({ shutdownDrainMs: 5000, metricsPort: undefined, metricsHost: '127.0.0.1' });
    expect(grpcServerSettingsFrom({ SHUTDOWN_DRAIN_MS: '', METRICS_PORT: '', METRICS_HOST: '' })).toMatchObject({ shutdownDrainMs: 5000, metricsPort: undefined, metricsHost: '127.0.0.1' });
    expect(grpcServerSettingsFrom({ SHUTDOWN_DRAIN_MS: '20000', METRICS_PORT: '9464', METRICS_HOST: '0.0.0.0' })).toMatchObject({ shutdownDrainMs: 20000, metricsPort: 9464, metricsHost: '0.0.0.0' });
  });

  it.each([
    ['METRICS_PORT', 'metrics'],
    ['METRICS_PORT', '0'],
    ['METRICS_PORT', '65536'],
    ['SHUTDOWN_DRAIN_MS', '-1'],
    ['SHUTDOWN_DRAIN_MS', '2.5'],
    ['SHUTDOWN_DRAIN_MS', 'soon'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => grpcServerSettingsFrom({ [name]: value })).toThrow(new RegExp(`${name}:`));
  });
});

describe('shutdown drain (SHUTDOWN_DRAIN_MS)', () => {
  it('cuts a call still under way when the drain ends, and lets one that ends within it answer', async () => {
    const short = await startServer(grpcServerSettingsFrom({ SHUTDOWN_DRAIN_MS: '100' }));
    const shortClient = createGrpcClient(notifications.NotificationServiceDefinition, short.address, { deadlineMs: 10_000 });
    const long = await startServer(grpcServerSettingsFrom({ SHUTDOWN_DRAIN_MS: '10000' }));
    const longClient = createGrpcClient(notifications.NotificationServiceDefinition, long.address, { deadlineMs: 10_000 });
    try {
      // Both calls are under way (in their handlers) when shutdown starts.
      const underWay = [handlerStarted('slow:2000'), handlerStarted('slow:300')];
      const cut = shortClient.client.listNotifications({ callerId: 'slow:2000' }).then(
        () => 'answered',
        (err: unknown) => (err instanceof ClientError ? Status[err.code] : String(err)),
      );
      const finished = longClient.client.listNotifications({ callerId: 'slow:300' }).then(
        () => 'answered',
        (err: unknown) => (err instanceof ClientError ? Status[err.code] : String(err)),
      );
      await Promise.all(underWay);
      await Promise.all([short.shutdown(), long.shutdown()]);
      expect(await cut).toBe('UNAVAILABLE');
      expect(await finished).toBe('answered');
    } finally {
      shortClient.channel.close();
      longClient.channel.close();
    }
  });
});
