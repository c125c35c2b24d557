import { createServer, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { gracefulCloser } from '../src/http/graceful-close';
import { listening, until } from './app-without-services';

/** A connection that sends `request` and collects what comes back; `closed` resolves with all of it once the server closes it. */
function openWith(port: number, request: string): { socket: Socket; received: () => string; closed: Promise<string> } {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(text)));
  socket.write(request);
  return { socket, received: () => text, closed };
}

const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

describe('graceful close (SHUTDOWN_DRAIN_MS)', () => {
  it('closes idle connections at once, answers a request under way with Connection: close, lets an answer already started finish, then closes its connection too', async () => {
    const held = new Map<string, ServerResponse>();
    const server = createServer((req, res) => {
      if (req.url === '/') return void res.end('ok');
      if (req.url === '/streaming') {
        res.writeHead(200, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' });
        res.write('first part;');
      }
      held.set(req.url!, res);
    });
    // Closed when the file ends if a failing test never reached its own close (listening()).
    await listening(server);
    const closeGracefully = gracefulCloser(server);
    const port = (server.address() as { port: number }).port;

    const idle = openWith(port, get('/'));
    const waiting = openWith(port, get('/waiting'));
    const streaming = openWith(port, get('/streaming'));
    await until(() => held.size === 2);
    await until(() => idle.received().includes('ok') && streaming.received().includes('first part;'));

    const stopped = closeGracefully(60_000);
    expect(await idle.closed).toMatch(/^HTTP\/1\.1 200 [^]*\r\n\r\nok$/);

    held.get('/waiting')!.end('late answer');
    const waitingAnswer = await waiting.closed;
    expect(waitingAnswer).toMatch(/^HTTP\/1\.1 200 /);
    expect(waitingAnswer).toMatch(/\r\nConnection: close\r\n/i);
    expect(waitingAnswer).toMatch(/late answer$/);

    held.get('/streaming')!.end('last part');
    const streamed = await streaming.closed;
    expect(streamed).toMatch(/first part;[^]*last part/);

    await stopped;
    expect(server.listening).toBe(false);
  });
});

describe('graceful close with pipelined requests', () => {
  it('answers every request pipelined on a connection, those queued behind the one under way and those read during the drain, before closing it', async () => {
    const held = new Map<string, ServerResponse>();
    const server = createServer((req, res) => {
      if (req.url === '/quick') return void res.end('quick answer');
      held.set(req.url!, res);
    });
    await listening(server);
    const closeGracefully = gracefulCloser(server);
    const port = (server.address() as { port: number }).port;
    const answersIn = (text: string) => text.match(/HTTP\/1\.1 200 [^]*?\r\n\r\n[^H]*/g) ?? [];

    // Queued behind a held answer: one already answered by the app (its answer waits in Node's queue), one held too.
    const queuedAnswered = openWith(port, get('/held-a') + get('/quick'));
    const queuedHeld = openWith(port, get('/held-b') + get('/held-c'));
    const readDuringDrain = openWith(port, get('/held-d'));
    await until(() => ['/held-a', '/held-b', '/held-c', '/held-d'].every((url) => held.has(url)));

    const stopped = closeGracefully(60_000);
    readDuringDrain.socket.write(get('/held-e'));
    await until(() => held.has('/held-e'));
    for (const url of ['/held-a', '/held-b', '/held-c', '/held-d', '/held-e']) held.get(url)!.end(`answer to ${url}`);

    const [a, b, d] = await Promise.all([queuedAnswered.closed, queuedHeld.closed, readDuringDrain.closed]);
    expect(answersIn(a).map((answer) => answer.replace(/^[^]*\r\n\r\n/, ''))).toEqual(['answer to /held-a', 'quick answer']);
    expect(answersIn(b).map((answer) => answer.replace(/^[^]*\r\n\r\n/, ''))).toEqual(['answer to /held-b', 'answer to /held-c']);
    expect(answersIn(d).map((answer) => answer.replace(/^[^]*\r\n\r\n/, ''))).toEqual(['answer to /held-d', 'answer to /held-e']);
    // Only the last answer on a connection says it closes; the ones before it keep it open for the rest.
    expect(answersIn(b).map((answer) => /\r\nConnection: close\r\n/i.test(answer))).toEqual([false, true]);
    expect(answersIn(d).map((answer) => /\r\nConnection: close\r\n/i.test(answer))).toEqual([false, true]);
    await stopped;
    expect(server.listening).toBe(false);
  });
});

describe('a request read after the drain’s closing answer has started', () => {
  it('is not run (RFC 9112 §9.6: no further requests once an answer said Connection: close); the answer under way ends and the connection closes', async () => {
    const parsed: string[] = [];
    const run: string[] = [];
    let streaming: ServerResponse | undefined;
    const server = createServer((req, res) => {
      run.push(`${req.method} ${req.url}`);
      if (req.url === '/streaming') streaming = res;
    });
    await listening(server);
    const closeGracefully = gracefulCloser(server);
    // Node's parser read the request: this listener runs first, whatever the closer does with the request.
    server.prependListener('request', (req) => {
      parsed.push(`${req.method} ${req.url}`);
    });
    const port = (server.address() as { port: number }).port;

    const draining = openWith(port, get('/streaming'));
    await until(() => streaming !== undefined);
    const stopped = closeGracefully(60_000);
    // The drain's closing answer starts (Connection: close), then the client pipelines another request.
    streaming!.write('first part;');
    draining.socket.write('POST /after-close HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    await until(() => parsed.includes('POST /after-close'));
    streaming!.end('last part');

    expect(await draining.closed).toMatch(/\r\nConnection: close\r\n[^]*first part;[^]*last part\r\n0\r\n\r\n$/i);
    await stopped;
    expect(run).toEqual(['GET /streaming']);
  });
});
