import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSystem, type RunningSystem } from '../support/service';

/**
 * A semantic search whose client goes away while the search service waits on the embeddings API for the query's
 * vector: the API's request is closed unanswered. The whole chain, as an operator runs it with EMBEDDINGS_URL: the
 * gateway cancels the search's call on the client's 'close' (client-gone), the search service's handler sees its
 * call's signal aborted, and OpenAiEmbedder aborts its HTTP request with it. Before, the request stayed open until the
 * API answered (a model working, a paid API billing, for nobody). The API is a local stand-in for an OpenAI-compatible
 * endpoint: it answers every text with one fixed vector, and holds the request that embeds this test's query.
 */
const QUERY = 'grey herons standing still in the reeds at dawn';
const DIMENSIONS = 8;

let api: Server;
let system: RunningSystem;
let queryArrived: () => void = () => undefined;
let queryClosedUnanswered: () => void = () => undefined;
const arrived = new Promise<void>((resolve) => (queryArrived = resolve));
const closedUnanswered = new Promise<void>((resolve) => (queryClosedUnanswered = resolve));

beforeAll(async () => {
  api = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      const { input } = JSON.parse(raw) as { input: string[] };
      if (input.includes(QUERY)) {
        res.once('close', () => {
          if (!res.writableEnded) queryClosedUnanswered();
        });
        queryArrived();
        return;
      }
      const vector = Array.from({ length: DIMENSIONS }, (_, i) => (i === 0 ? 1 : 0));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: vector })) }));
    });
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  system = await startSystem({ env: { EMBEDDINGS_URL: url, EMBEDDINGS_MODEL: 'held-query', EMBEDDINGS_DIMENSIONS: String(DIMENSIONS) } });
}, 180_000);
afterAll(async () => {
  await system?.stop();
  api?.closeAllConnections();
  await new Promise<void>((resolve) => (api ? api.close(() => resolve()) : resolve()));
});

test("a semantic search's request to the embeddings API is closed unanswered once its client goes away", async () => {
  const client = new AbortController();
  const answer = fetch(`${system.baseUrl}/api/card/search/1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ content: QUERY }),
    signal: client.signal,
  }).catch((err: unknown) => err);
  await arrived;
  client.abort();
  expect(await answer).toMatchObject({ name: 'AbortError' });
  // Waits for the API to see its request closed (before the change: never, the request held open for nobody).
  await closedUnanswered;
  // The service goes on answering: a search of another text is served.
  const next = await fetch(`${system.baseUrl}/api/card/search/1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'kingfishers' }) });
  expect(next.status).toBe(200);
});
