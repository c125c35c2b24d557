import { randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import express from 'express';
import { createLogger } from '@cards/platform';
import { base64UrlChunks, base64UrlLength } from '../src/http/base64url-chunks';
import { errorHandler } from '../src/http/error-handler';
import { sendJsonWithBase64UrlMember } from '../src/http/json-with-streamed-content';

async function* inPieces(bytes: Buffer, sizes: number[]): AsyncGenerator<Uint8Array> {
  let offset = 0;
  for (const size of sizes) {
    yield bytes.subarray(offset, offset + size);
    offset += size;
  }
  if (offset < bytes.length) yield bytes.subarray(offset);
}

async function joined(pieces: AsyncIterable<string>): Promise<string> {
  let text = '';
  for await (const piece of pieces) text += piece;
  return text;
}

describe('base64UrlChunks', () => {
  const bytes = randomBytes(1000);
  it.each([
    ['one chunk', []],
    ['chunks of 1 byte', Array(40).fill(1)],
    ['chunks of 2 bytes', Array(40).fill(2)],
    ['chunks that are not multiples of 3', [1, 4, 5, 7, 256, 262]],
    ['empty chunks between', [0, 2, 0, 0, 1, 0, 3]],
  ])('encodes %s exactly as the bytes joined, unpadded', async (_name, sizes) => {
    for (const length of [0, 1, 2, 3, 4, 5, 999, 1000]) {
      const part = bytes.subarray(0, length);
      expect(await joined(base64UrlChunks(inPieces(part, sizes)))).toBe(part.toString('base64url'));
      expect(base64UrlLength(length)).toBe(part.toString('base64url').length);
    }
  });
});

describe('sendJsonWithBase64UrlMember', () => {
  let server: Server;
  let content: () => AsyncIterable<Uint8Array>;
  let announced: number;
  let baseUrl: string;
  const fields = { id: 'f', file_name: 'café.pdf', size: 7 };

  beforeAll(async () => {
    const app = express();
    app.get('/file', async (_req, res) => {
      await sendJsonWithBase64UrlMember(res, fields, 'base64url_content', announced, content());
    });
    app.use(errorHandler(createLogger('test', 'silent')));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('sends what res.json of the whole object would, with its Content-Length, for any chunking', async () => {
    const bytes = randomBytes(100_003);
    announced = bytes.length;
    content = () => inPieces(bytes, [1, 2, 65_536, 5, 1]);
    const res = await fetch(`${baseUrl}/file`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(text).toBe(JSON.stringify({ ...fields, base64url_content: bytes.toString('base64url') }));
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(text));

    const head = await fetch(`${baseUrl}/file`, { method: 'HEAD' });
    expect(head.headers.get('content-length')).toBe(res.headers.get('content-length'));
  });

  it('cuts the connection, never ending valid JSON, when the bytes fail after the answer began', async () => {
    announced = 10;
    content = async function* () {
      yield Buffer.from('abcd');
      throw new Error('the stream broke');
    };
    const res = await fetch(`${baseUrl}/file`);
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
  });

  it.each([
    ['fewer', 3],
    ['more', 30],
  ])('cuts the connection when %s bytes arrive than announced', async (_name, count) => {
    announced = 10;
    content = () => inPieces(randomBytes(count), [2]);
    const res = await fetch(`${baseUrl}/file`);
    await expect(res.text()).rejects.toThrow();
  });
});
