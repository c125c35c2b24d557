// A request no route answers (an unknown /api path, a method the path does not take, OPTIONS) is told so whatever its
// body: before, the body check ran first, so `PATCH /api/card/count` with a text body was 415 "must be JSON" and
// OPTIONS with a malformed JSON body 400, and a client that fixed the body only then learnt the route does not exist.
import { createServer, type Server } from 'node:http';
import { appWithoutServices, closed, listening, rawExchange } from './app-without-services';

/** Sends `request` and then a pipelined GET /livez with Connection: close; resolves with everything answered. */
const exchange = (base: string, request: string) => rawExchange(base, `${request}GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);

const withBody = (method: string, path: string, contentType: string, body: string) =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${contentType}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

describe('a request no /api route answers, with a body', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => ({ server, base } = await listening(createServer(appWithoutServices()))));
  afterAll(() => closed(server));

  it.each([
    ['PATCH /api/card/count, text', withBody('PATCH', '/api/card/count', 'text/plain', 'hello'), 405, 'PATCH is not allowed here; allowed: GET, HEAD, OPTIONS'],
    ['POST /api/card/count, malformed JSON', withBody('POST', '/api/card/count', 'application/json', '{oops'), 405, 'POST is not allowed here; allowed: GET, HEAD, OPTIONS'],
    ['PUT /api/vote, a form', withBody('PUT', '/api/vote', 'application/x-www-form-urlencoded', 'a=1'), 405, 'PUT is not allowed here; allowed: POST, OPTIONS'],
    ['POST /api/nothing, text', withBody('POST', '/api/nothing', 'text/plain', 'hello'), 404, 'No such route'],
    ['DELETE /api/nothing/at/all, latin1 JSON', withBody('DELETE', '/api/nothing/at/all', 'application/json; charset=latin1', '{}'), 404, 'No such route'],
  ])('%s: answers 404/405 with the route message, then serves the next request', async (_name, request, status, message) => {
    const answer = await exchange(base, request);
    expect(answer).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(answer).toContain(JSON.stringify({ message }));
    expect(answer).toContain('{"status":"ok"}');
  });

  it('answers OPTIONS 204 with Allow whatever its body', async () => {
    for (const request of [withBody('OPTIONS', '/api/card/count', 'text/plain', 'hello'), withBody('OPTIONS', '/api/card/count', 'application/json', '{oops')]) {
      const answer = await exchange(base, request);
      expect(answer).toMatch(/^HTTP\/1\.1 204 /);
      expect(answer).toMatch(/\r\nAllow: GET, HEAD, OPTIONS\r\n/);
      expect(answer).toContain('{"status":"ok"}');
    }
  });

  it('still checks the body of a request a route answers', async () => {
    const answer = await exchange(base, withBody('POST', '/api/card/search/1', 'text/plain', 'hello'));
    expect(answer).toMatch(/^HTTP\/1\.1 415 /);
  });
});
