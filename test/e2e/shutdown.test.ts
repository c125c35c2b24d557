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
});
