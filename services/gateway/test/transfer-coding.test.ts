import { createServer, type Server } from 'node:http';
import { appWithoutServices, closed, listening, rawExchange as exchange } from './app-without-services';

const chunkedSearch = (transferEncoding: string) => {
  const body = '{}';
  return `POST /api/card/search/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: ${transferEncoding}\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\nGET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`;
};

describe('Transfer-Encoding of a request body', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => ({ server, base } = await listening(createServer(appWithoutServices()))));
  afterAll(() => closed(server));

  it('reads a chunked body (any case) and serves the next request on the connection', async () => {
    for (const coding of ['chunked', 'Chunked']) {
      const answer = await exchange(base, chunkedSearch(coding));
      expect(answer).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer).toContain('{"message":"content: is required"}');
      expect(answer).toContain('{"status":"ok"}');
    }
  });

  // Node's parser dropped every coding but the last chunked, so a gzipped body was read as if plain.
  it('refuses a coding besides chunked with a JSON 400 naming it, reads nothing and closes the connection', async () => {
    for (const [field, named] of [
      ['gzip, chunked', '"gzip"'],
      ['x-custom, chunked', '"x-custom"'],
      ['identity, chunked', '"identity"'],
    ]) {
      const answer = await exchange(base, chunkedSearch(field!));
      const [head, body] = answer.split('\r\n\r\n');
      expect(head).toMatch(/^HTTP\/1\.1 400 /);
      expect(head).toMatch(/\r\nconnection: close/i);
      expect(JSON.parse(body!)).toEqual({ message: expect.stringContaining(`Transfer-Encoding ${named} is not supported`) });
      expect(answer).not.toContain('content: is required');
      expect(answer).not.toContain('{"status":"ok"}');
    }
  });

  it('refuses it when the codings come in two Transfer-Encoding fields', async () => {
    const request = 'POST /api/card/search/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n';
    const answer = await exchange(base, request);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toEqual({ message: expect.stringContaining('Transfer-Encoding "gzip" is not supported') });
  });
});
