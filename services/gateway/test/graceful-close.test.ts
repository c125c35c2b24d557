import { createServer, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { gracefulCloser } from '../src/http/graceful-close';

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
    let heldChanged: () => void = () => undefined;
    const server = createServer((req, res) => {
      if (req.url === '/') return void res.end('ok');
      if (req.url === '/streaming') {
        res.writeHead(200, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' });
        res.write('first part;');
      }
      held.set(req.url!, res);
      heldChanged();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const closeGracefully = gracefulCloser(server);
    const port = (server.address() as { port: number }).port;
    const until = async (check: () => boolean) => {
      while (!check()) await new Promise<void>((resolve) => (heldChanged = resolve));
    };

    const idle = openWith(port, get('/'));
    const waiting = openWith(port, get('/waiting'));
    const streaming = openWith(port, get('/streaming'));
    await until(() => held.size === 2);
    while (!idle.received().includes('ok') || !streaming.received().includes('first part;')) await new Promise((resolve) => setImmediate(resolve));

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
