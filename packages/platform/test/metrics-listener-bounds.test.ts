// The metrics listener's own bounds (METRICS_LISTENER_BOUNDS), through the real listener with raw sockets: a client that
// never finishes its request is cut (408) instead of holding its socket for good, /livez answers meanwhile, and past the
// connection cap a new socket is closed unanswered. Nothing here measures time: each test waits for the server to act.
import { connect, type Socket } from 'node:net';
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

  it(`holds at most ${METRICS_LISTENER_BOUNDS.maxConnections} connections: one more is closed unanswered, and a freed place answers again`, async () => {
    const cap = METRICS_LISTENER_BOUNDS.maxConnections;
    expect(cap).toBeLessThanOrEqual(32);
    // The held sockets are cut after headersTimeoutMs: a round where one was cut before the extra one's fate was known
    // proves nothing (a stalled machine), so it is tried again.
    let outcome: { extraAnswered: string; heldCutFirst: number } | undefined;
    for (let round = 0; round < 3 && (outcome === undefined || outcome.heldCutFirst > 0); round++) {
      for (const h of held.splice(0)) h.socket.destroy();
      for (let i = 0; i < cap; i++) {
        const h = await open(metrics.port);
        h.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n');
        held.push(h);
      }
      const extra = await open(metrics.port);
      extra.socket.write('GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      const extraAnswered = await extra.closed;
      outcome = { extraAnswered, heldCutFirst: held.filter((h) => h.isClosed()).length };
    }
    expect(outcome).toEqual({ extraAnswered: '', heldCutFirst: 0 });

    // One place freed: the next probe is answered (once the server has seen the close).
    held.shift()!.socket.destroy();
    let status = 0;
    while (status !== 200) status = await fetch(`http://127.0.0.1:${metrics.port}/livez`).then((r) => r.status, () => 0);
    expect(status).toBe(200);
  }, 30_000);
});
