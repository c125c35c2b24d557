// SIGTERM during a rolling update: the gateway stops accepting, answers what is under way (a slow upload, a call
// waiting on a peer), and only then exits. Kubernetes gives the pod terminationGracePeriodSeconds (30 s in the
// chart, 5 s of it the preStop pause) before it kills it.
import { connect, type Socket } from 'node:net';
import { startSystem, type RunningSystem } from '../support/service';

let system: RunningSystem;

beforeAll(async () => {
  system = await startSystem();
});
afterAll(async () => {
  await system?.kill();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Everything the server sends on the socket until it closes it. */
function readUntilClosed(socket: Socket): Promise<string> {
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
  return new Promise((resolve) => socket.on('close', () => resolve(received)));
}

describe('SIGTERM', () => {
  it('answers a request still arriving when it comes, closes that connection, then exits 0', async () => {
    const port = Number(new URL(system.baseUrl).port);
    const body = JSON.stringify({ email: 'slow-client@example.com', password: 'not the password' });
    const socket = connect(port, '127.0.0.1');
    const answer = readUntilClosed(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST /api/auth HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`);
    await sleep(300);
    const exited = new Promise<number | null>((resolve) => system.process.once('exit', (code) => resolve(code)));
    system.process.kill('SIGTERM');
    // New connections are refused once shutdown has begun.
    while (await fetch(`${system.baseUrl}/healthz`).then(() => true, () => false)) await sleep(100);
    // A slow client (a large upload on a poor line) is still sending several seconds later.
    await sleep(4000);
    socket.write(body.slice(10));
    const response = await answer;
    expect(response).toMatch(/^HTTP\/1\.1 401 /);
    expect(response).toMatch(/\r\nconnection: close\r\n/i);
    expect(JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4))).toEqual({ message: expect.any(String) });
    expect(await exited).toBe(0);
  });

  it('answers the requests pipelined behind one still arriving, the last one saying Connection: close, then exits 0', async () => {
    const own = await startSystem();
    try {
      const port = Number(new URL(own.baseUrl).port);
      const body = JSON.stringify({ email: 'pipelining-client@example.com', password: 'not the password' });
      const socket = connect(port, '127.0.0.1');
      const answer = readUntilClosed(socket);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write(`POST /api/auth HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`);
      await sleep(300);
      const exited = new Promise<number | null>((resolve) => own.process.once('exit', (code) => resolve(code)));
      own.process.kill('SIGTERM');
      while (await fetch(`${own.baseUrl}/healthz`).then(() => true, () => false)) await sleep(100);
      // The rest of the body and, behind it on the same connection, two more requests: Node reads them at once.
      const count = 'GET /api/card/count HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
      socket.write(`${body.slice(10)}${count}${count}`);
      const response = await answer;
      const heads = response.split(/\r\n\r\n[^]*?(?=HTTP\/1\.1 |$)/).filter(Boolean);
      expect(heads.map((head) => head.split('\r\n')[0])).toEqual(['HTTP/1.1 401 Unauthorized', 'HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
      expect(heads.map((head) => /\r\nconnection: close/i.test(head))).toEqual([false, false, true]);
      expect(await exited).toBe(0);
    } finally {
      await own.kill();
    }
  });
});
