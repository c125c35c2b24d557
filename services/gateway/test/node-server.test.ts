import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { hardenServer } from '../src/http/node-server';

async function listening(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return (server.address() as { port: number }).port;
}

/** Connects, writes `bytes` if given, and resolves with what the server sent once it closes the connection. */
function answerUntilClosed(port: number, bytes?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    if (bytes !== undefined) socket.write(bytes);
  });
}

describe('the gateway HTTP server (hardenServer)', () => {
  let server: Server;
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('answers a request head that does not arrive in time with a JSON 408 and closes the connection', async () => {
    // Node checks the timeouts at this interval (30 s by default); only createServer takes it.
    server = createServer({ connectionsCheckingInterval: 20 }, (_req, res) => res.end());
    hardenServer(server, { headers: 100, request: 1_000, keepAlive: 1_000 });
    const port = await listening(server);
    for (const partial of ['', 'GET / HTTP/1.1\r\nHost: x\r\n']) {
      const answer = await answerUntilClosed(port, partial);
      expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toEqual({ message: 'The request did not arrive in time' });
    }
  });

  it('answers requests the HTTP parser rejects with a JSON {"message"}', async () => {
    server = createServer((_req, res) => res.end());
    hardenServer(server);
    const port = await listening(server);
    const malformed = await answerUntilClosed(port, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n');
    expect(malformed).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(malformed).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/);
    expect(JSON.parse(malformed.split('\r\n\r\n')[1]!)).toEqual({ message: 'Malformed HTTP request' });
    const oversized = await answerUntilClosed(port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(oversized).toMatch(/^HTTP\/1\.1 431 /);
    expect(JSON.parse(oversized.split('\r\n\r\n')[1]!)).toEqual({ message: 'The request URL or headers are too large' });
  });
});
