// The metrics listener's own bounds (METRICS_LISTENER_BOUNDS), through the real listener with raw sockets: a client that
// never finishes its request is cut (408) instead of holding its socket for good, /livez answers meanwhile, and past the
// connection cap the oldest socket not being answered is closed for the new one (the new one only when all are answered).
// Nothing here measures time: each test waits for the server to act.
import { connect, type Socket } from 'node:net';
import type { Registry } from 'prom-client';
import { createLogger } from '../src/logger';
import { METRICS_LISTENER_BOUNDS, startMetricsServer, type MetricsServerHandle } from '../src/grpc-metrics';

const logger = createLogger('metrics-bounds-test', 'silent');

interface Held {
  socket: Socket;
  /** Everything the server sent on it. */
  received: () => string;
  /** Resolves with what the server sent once the socket is closed (by either side). */
  closed: Promise<string>;
  isClosed: () => boolean;
}

/** A raw connection, resolved once connected, that keeps what the server sends. */
function open(port: number): Promise<Held> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    let done = false;
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    // A socket closed by the server's cap may see ECONNRESET: what counts is that it closed.
    socket.on('error', () => undefined);
    const closed = new Promise<string>((resolveClosed) =>
      socket.once('close', () => {
        done = true;
        resolveClosed(data);
      }),
    );
    socket.once('connect', () => resolve({ socket, received: () => data, closed, isClosed: () => done }));
    socket.once('error', reject);
  });
}

describe('the metrics listener bounds its clients (METRICS_LISTENER_BOUNDS)', () => {
  let metrics: MetricsServerHandle;
  const held: Held[] = [];
  beforeEach(async () => {
    metrics = await startMetricsServer({ host: '127.0.0.1', port: 0, logger });
  });
  afterEach(async () => {
    for (const h of held.splice(0)) h.socket.destroy();
    await metrics.close();
  });

  it('answers GET /livez while another client holds a half-sent request, and cuts that client with a 408', async () => {
    const slow = await open(metrics.port);
    held.push(slow);
    // Headers begun, never ended: a slow-loris.
    slow.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');

    const live = await fetch(`http://127.0.0.1:${metrics.port}/livez`);
    expect({ status: live.status, body: await live.json() }).toEqual({ status: 200, body: { status: 'ok' } });

    // The server itself closes it (Node's default would hold it a minute and more), answering 408 first.
    expect(await slow.closed).toMatch(/^HTTP\/1\.1 408 /);
  }, 30_000);

  it('closes a connection that sends nothing at all', async () => {
    const silent = await open(metrics.port);
    held.push(silent);
    await silent.closed;
    expect(silent.isClosed()).toBe(true);
  }, 30_000);

  it(`holds at most ${METRICS_LISTENER_BOUNDS.maxConnections} connections: one more with a complete request (a probe) closes the oldest half-sent one and is answered`, async () => {
    const cap = METRICS_LISTENER_BOUNDS.maxConnections;
    expect(cap).toBeLessThanOrEqual(32);
    const closedInOrder: number[] = [];
    for (let i = 0; i < cap; i++) {
      const h = await open(metrics.port);
      h.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      void h.closed.then(() => closedInOrder.push(i));
      held.push(h);
    }
    // The kubelet's probe: a complete request at once. Before, Node's cap closed it unanswered, and a client re-opening
    // its half-sent requests every few seconds kept /livez unanswered for good (a healthy pod restarted).
    const probe = await open(metrics.port);
    probe.socket.write('GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(await probe.closed).toMatch(/^HTTP\/1\.1 200 [^]*\{"status":"ok"\}/);
    // Its place was the oldest half-sent socket's, closed unanswered (the others are cut by the headers timeout later).
    expect(await held[0]!.closed).toBe('');
    expect(closedInOrder[0]).toBe(0);
  }, 30_000);

  it('when every socket is being answered, one more is closed unanswered; a place freed answers again', async () => {
    await metrics.close();
    // A registry whose collection waits until the test lets it: the requests for /metrics are being answered till then.
    let collections = 0;
    let collect!: () => void;
    const collected = new Promise<void>((resolve) => (collect = resolve));
    const registry = {
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      metrics: async () => {
        collections += 1;
        await collected;
        return '# held\n';
      },
    } as unknown as Registry;
    metrics = await startMetricsServer({ host: '127.0.0.1', port: 0, logger, registry });
    const cap = METRICS_LISTENER_BOUNDS.maxConnections;
    for (let i = 0; i < cap; i++) {
      const h = await open(metrics.port);
      h.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      held.push(h);
    }
    while (collections < cap) await new Promise((resolve) => setImmediate(resolve));
    const extra = await open(metrics.port);
    extra.socket.write('GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(await extra.closed).toBe('');
    expect(held.filter((h) => h.isClosed())).toEqual([]);
    // The answers go out; their places are free, and the next probe is answered.
    collect();
    for (const h of held) expect(await h.closed).toMatch(/^HTTP\/1\.1 200 [^]*# held\n/);
    const live = await fetch(`http://127.0.0.1:${metrics.port}/livez`);
    expect(live.status).toBe(200);
  }, 30_000);
});
