// A JSON body declared longer than JSON_BODY_LIMIT is answered 413 before it is read, and what the client still sends is
// read and dropped. body-parser read (at the client's pace) and dropped the whole body before its 413, so a client that
// sent only the head got no answer at all until it sent the body; closing the connection at the answer instead reset it
// under a client still writing its body, which then saw a broken pipe rather than the 413.
import { createServer, request, type Server } from 'node:http';
import { connect } from 'node:net';
import { hardenServer } from '../src/http/node-server';
import { appWithoutServices, closed, listening, rawExchange } from './app-without-services';

/** Writes `request` on a new connection; resolves with the first answer once it is whole, and whether writing all of it failed. */
function answerTo(base: string, request: Buffer | string): Promise<{ answer: string; writeFailed: boolean }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    let written: boolean | undefined;
    let answered = false;
    const settle = () => {
      if (!answered || written === undefined) return;
      socket.destroy();
      resolve({ answer: received, writeFailed: !written });
    };
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      const end = received.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(received)?.[1];
      answered = end >= 0 && length !== undefined && received.length >= end + 4 + Number(length);
      settle();
    });
    socket.on('error', (err) => (answered ? settle() : reject(err)));
    socket.on('close', () => (answered ? settle() : reject(new Error(`closed before a whole answer: ${JSON.stringify(received)}`))));
    socket.write(request, (err) => {
      written = !err;
      settle();
    });
  });
}

const head = (path: string, length: number, extra = '') => `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

describe('a JSON body declared over JSON_BODY_LIMIT', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    // As the gateway's server is (createGatewayServer): hardenServer answers `Expect: 100-continue` itself.
    const gateway = createServer(appWithoutServices({ jsonBodyLimit: '100kb' }));
    hardenServer(gateway);
    ({ server, base } = await listening(gateway));
  });
  afterAll(() => closed(server));

  it('is answered 413 {"message"} while the client has sent only the head', async () => {
    // Before, the answer came only once the client had sent the whole body.
    const { answer } = await answerTo(base, head('/api/card/search/1', 100 * 1024 + 1));
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer.slice(answer.indexOf('\r\n\r\n') + 4)).toBe(JSON.stringify({ message: 'The request body is too large' }));
  });

  it('reaches a client that writes its whole body (8 MB) before reading, on a kept-alive connection', async () => {
    // Closing the connection at the answer reset it under the client still writing: a broken pipe, no 413 (as Python's
    // http.client reported). Now the rest of the body is read and dropped, and the connection stays usable.
    const size = 8 * 1024 * 1024;
    const { answer, writeFailed } = await answerTo(base, Buffer.concat([Buffer.from(head('/api/card/search/1', size)), Buffer.alloc(size, 'x')]));
    expect(writeFailed).toBe(false);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).not.toMatch(/\r\nConnection: close\r\n/i);
  });

  it('is answered so on a route that reads no body too (DELETE /api/auth)', async () => {
    const { answer } = await answerTo(base, `DELETE /api/auth HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  });

  it('is not invited with `Expect: 100-continue`: the 413 is the only answer, and the connection is closed', async () => {
    // rawExchange resolves once the server has closed the connection: a client told no 100 sends no body to drop.
    const answer = await rawExchange(base, head('/api/card/search/1', 10_000_000, 'Expect: 100-continue\r\n'));
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/\r\nConnection: close\r\n/i);
    expect(answer).not.toContain('100 Continue');
  });

  it('a chunked body over the limit is still read and answered 413 by the parser', async () => {
    const chunk = `{"a":"${'x'.repeat(110 * 1024)}"}`;
    const request = `POST /api/card/search/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`;
    const answer = await rawExchange(base, request);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain(JSON.stringify({ message: 'The request body is too large' }));
  });

  it('a body declared within the limit is read as before', async () => {
    const body = JSON.stringify({ query: 'x' });
    const answer = await rawExchange(base, `POST /api/nothing HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    expect(answer).toMatch(/^HTTP\/1\.1 404 /);
  });
});

describe('`Expect: 100-continue` on the gateway server', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    const gateway = createServer(appWithoutServices({ jsonBodyLimit: '100kb' }));
    hardenServer(gateway);
    ({ server, base } = await listening(gateway));
  });
  afterAll(() => closed(server));

  it('a body within the limit is invited (100) once the app reads it, then answered', async () => {
    const body = JSON.stringify({ content: 5 });
    const { status, continued, text } = await new Promise<{ status?: number; continued: boolean; text: string }>((resolve, reject) => {
      let continued = false;
      const req = request(`${base}/api/card/search/1`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': body.length, expect: '100-continue' } });
      req.on('continue', () => {
        continued = true;
        req.end(body);
      });
      req.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode, continued, text }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    expect({ status, continued }).toEqual({ status: 400, continued: true });
    // The body was read: its content is refused for its type, not as missing.
    expect(JSON.parse(text)).toEqual({ message: expect.stringMatching(/^content: (?!is required)/) });
  });
});
