import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import express from 'express';
import { createLogger } from '@cards/platform';
import { createGatewayServer, hardenServer } from '../src/http/node-server';
import { routeMethodIndex, serverWideOptions } from '../src/http/unmatched';

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

describe('CONNECT (createGatewayServer)', () => {
  let server: Server;
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it("is answered 405 with the methods of the app's routes in Allow, as OPTIONS * lists them", async () => {
    const app = express();
    const routes = routeMethodIndex(app.router);
    app.use(serverWideOptions(routes));
    app.get('/shelf', (_req, res) => void res.end());
    app.patch('/shelf/:id', (_req, res) => void res.end());
    server = createGatewayServer(app, { maxConnections: 0, logger: createLogger('gateway', 'silent'), serverMethods: routes.serverMethods });
    const port = await listening(server);
    const allowOf = (answer: string) => /\r\nAllow: ([^\r]*)\r\n/i.exec(answer)?.[1];
    const options = await answerUntilClosed(port, 'OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(allowOf(options)).toBe('GET, PATCH, HEAD, OPTIONS');
    const refused = await answerUntilClosed(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(refused).toMatch(/^HTTP\/1\.1 405 /);
    expect(allowOf(refused)).toBe(allowOf(options));
    expect(JSON.parse(refused.split('\r\n\r\n')[1]!)).toEqual({ message: 'CONNECT is not supported: this server is not a proxy' });
  });
});

describe('the connection cap (createGatewayServer, HTTP_MAX_CONNECTIONS)', () => {
  let server: Server;
  const clients: Socket[] = [];
  afterEach(async () => {
    for (const socket of clients) socket.destroy();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** Opens a connection and sends one keep-alive request; resolves with the first bytes of the answer, or '' when closed unanswered. */
  function ask(port: number): Promise<{ socket: Socket; answer: Promise<string>; head: string }> {
    return new Promise((resolve) => {
      const socket = connect(port, '127.0.0.1');
      clients.push(socket);
      let received = '';
      const answer = new Promise<string>((done) => socket.on('close', () => done(received)));
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        resolve({ socket, answer, head: received });
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve({ socket, answer, head: received }));
      socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    });
  }

  it('answers a connection over the cap with a JSON 503 and Retry-After, closes it, warns, and serves again once a place is free', async () => {
    const warnings: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        warnings.push(chunk.toString());
        done();
      },
    });
    server = createGatewayServer((_req, res) => res.end('ok'), { maxConnections: 1, logger: createLogger('gateway', 'warn', sink) });
    const port = await listening(server);

    const kept = await ask(port);
    expect(kept.head).toMatch(/^HTTP\/1\.1 200 /);
    const over = await ask(port);
    const refusal = await over.answer;
    expect(refusal).toMatch(/^HTTP\/1\.1 503 Service Unavailable\r\n/);
    expect(refusal).toMatch(/\r\nRetry-After: 1\r\n/);
    expect(refusal).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/);
    expect(JSON.parse(refusal.split('\r\n\r\n')[1]!)).toEqual({ message: expect.stringMatching(/too many open connections/) });
    expect(warnings.join('')).toContain('connection cap reached');

    kept.socket.destroy();
    let again = await ask(port);
    while (!again.head.startsWith('HTTP/1.1 200 ')) again = await ask(port);
    expect(again.head).toMatch(/^HTTP\/1\.1 200 /);
  });

  it('closes a refused connection whose client keeps sending after the 503, so it cannot hold one of the few refusal places', async () => {
    server = createGatewayServer((_req, res) => res.end('ok'), { maxConnections: 1, logger: createLogger('gateway', 'silent') });
    const port = await listening(server);
    const kept = await ask(port);
    expect(kept.head).toMatch(/^HTTP\/1\.1 200 /);

    // Half-open allowed: the client does not end its side when the server ends its own, and goes on sending.
    const trickling = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    clients.push(trickling);
    let received = '';
    trickling.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    trickling.on('error', () => undefined);
    // A byte now and then, each well inside an idle timeout: only a limit counted from the answer ends it.
    const sending = setInterval(() => trickling.writable && trickling.write('x'), 100);
    // Stopped with the connection, which afterEach destroys too: a test timing out here never reaches a finally, and the
    // interval would keep jest from exiting.
    await new Promise((resolve) =>
      trickling.on('close', () => {
        clearInterval(sending);
        resolve(undefined);
      }),
    );
    expect(received).toMatch(/^HTTP\/1\.1 503 /);
  });
});
