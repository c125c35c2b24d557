import { join } from 'node:path';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGrpcClient, createLogger, enableInProcessCalls, grpcServerMetrics, isEngineUnavailableError, RetryableUnavailableError, startGrpcServer, UnavailableError } from '@cards/platform';
import { search } from '@cards/proto';
import { OpenAiEmbedder } from '../src/adapters/openai/openai-embedder';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { SearchService } from '../src/application/search-service';
import { searchHandlers } from '../src/grpc/search-handlers';
import { testTempDir } from '../../../test/support/cleanup';

/** The wire protocol of the OpenAI-compatible adapter, against a local HTTP server speaking /v1/embeddings. */
describe('OpenAiEmbedder protocol', () => {
  let server: Server;
  let base: string;
  let reply: (body: { model: string; input: string[] }, req: IncomingMessage) => { status: number; json: unknown };
  const seen: { auth?: string; path?: string; body?: { model: string; input: string[] } }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const body = JSON.parse(raw) as { model: string; input: string[] };
        seen.push({ auth: req.headers.authorization, path: req.url, body });
        const { status, json } = reply(body, req);
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(json));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => (seen.length = 0));

  const embedder = (batchSize = 64) =>
    new OpenAiEmbedder({ url: base, model: 'm-1', apiKey: 'k-123', dimensions: 3, duplicateThreshold: 0.95, shortDuplicateThreshold: 0.92, shortTextLength: 200, batchSize });

  test('posts model and inputs with the bearer key, orders by index and normalizes', async () => {
    reply = (body) => ({
      status: 200,
      json: { data: body.input.map((_, i) => ({ index: i, embedding: [3 * (i + 1), 4 * (i + 1), 0] })).reverse() },
    });
    const vectors = await embedder(2).embed(['a', 'b', 'c']);
    expect(seen.map((s) => [s.path, s.auth, s.body?.model, s.body?.input])).toEqual([
      ['/v1/embeddings', 'Bearer k-123', 'm-1', ['a', 'b']],
      ['/v1/embeddings', 'Bearer k-123', 'm-1', ['c']],
    ]);
    expect(vectors.map((v) => Array.from(v).map((x) => Number(x.toFixed(3))))).toEqual([
      [0.6, 0.8, 0],
      [0.6, 0.8, 0],
      [0.6, 0.8, 0],
    ]);
  });

  test('an error status, a wrong vector shape or an unreachable server is UNAVAILABLE', async () => {
    reply = () => ({ status: 500, json: { error: 'boom' } });
    await expect(embedder().embed(['x'])).rejects.toBeInstanceOf(UnavailableError);
    reply = () => ({ status: 200, json: { data: [{ index: 0, embedding: [1, 2] }] } });
    await expect(embedder().embed(['x'])).rejects.toThrow(/wrong shape/);
    const dead = new OpenAiEmbedder({ url: 'http://127.0.0.1:1', model: 'm', dimensions: 3, duplicateThreshold: 0.95, shortDuplicateThreshold: 0.92, shortTextLength: 200 });
    await expect(dead.embed(['x'])).rejects.toBeInstanceOf(UnavailableError);
  });

  test('an outage, overload, rate limit or refused key is retryable (events wait); an answer about the texts is not', async () => {
    const unreachable = new OpenAiEmbedder({ url: 'http://127.0.0.1:1', model: 'm', dimensions: 3, duplicateThreshold: 0.95, shortDuplicateThreshold: 0.92, shortTextLength: 200 });
    const outcomes: Record<string, boolean> = {};
    outcomes.unreachable = isEngineUnavailableError(await unreachable.embed(['x']).catch((e: unknown) => e));
    for (const status of [500, 503, 429, 401, 400, 413, 422]) {
      reply = () => ({ status, json: { error: 'no' } });
      const error = await embedder().embed(['x']).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnavailableError);
      outcomes[status] = error instanceof RetryableUnavailableError && isEngineUnavailableError(error);
    }
    reply = () => ({ status: 200, json: { data: [{ index: 0, embedding: [1, 2] }] } });
    outcomes.wrongShape = isEngineUnavailableError(await embedder().embed(['x']).catch((e: unknown) => e));
    expect(outcomes).toEqual({ unreachable: true, 500: true, 503: true, 429: true, 401: true, 400: false, 413: false, 422: false, wrongShape: false });
  });

  test('duplicate threshold depends on the text length', () => {
    expect(embedder().duplicateThreshold(120)).toBe(0.92);
    expect(embedder().duplicateThreshold(500)).toBe(0.95);
  });
});

/**
 * A search's embeddings request ends with its call: the gateway cancels a search's call when its client goes away
 * (client-gone), and the search service's request to the embeddings API for that search's query is then aborted, its
 * connection closed before the answer, instead of running on (a model working, a paid API billing) for nobody. A real
 * search service (gRPC server, SearchService, SQLite index, OpenAiEmbedder) over the network and in process; the API is a
 * local server that holds every request until its connection closes.
 */
/** SemanticSearch calls this process's gRPC servers ended, by status (grpc_server_handled_total). */
async function semanticSearchesEnded(): Promise<Record<string, number>> {
  const handled = (await grpcServerMetrics.getMetricsAsJSON()).find((m) => m.name === 'grpc_server_handled_total');
  const ended: Record<string, number> = {};
  for (const { labels, value } of handled?.values ?? []) if (labels.grpc_method === 'SemanticSearch') ended[String(labels.grpc_code)] = value;
  return ended;
}

describe.each([
  ['over the network', false],
  ['in process', true],
])("a search's embeddings request ends with its cancelled call, %s", (_transport, inProcess) => {
  test('the embeddings request of a cancelled semantic search is closed unanswered; the call ends CANCELLED, not UNAVAILABLE as in an embeddings outage', async () => {
    let arrived: () => void = () => undefined;
    let closedUnanswered: (input: string) => void = () => undefined;
    const closed = new Promise<string>((resolve) => (closedUnanswered = resolve));
    const api = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => arrived());
      res.once('close', () => {
        if (!res.writableEnded) closedUnanswered((JSON.parse(raw) as { input: string[] }).input.join());
      });
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    const embedder = new OpenAiEmbedder({ url: `http://127.0.0.1:${(api.address() as AddressInfo).port}`, model: 'm', dimensions: 3, duplicateThreshold: 0.95, shortDuplicateThreshold: 0.92, shortTextLength: 200 });
    const index = new SqliteCardIndex({ path: join(testTempDir('search-embed-cancel-'), 'index.db'), dimensions: 3 });
    const logger = createLogger('search', 'silent');
    const server = await startGrpcServer({ name: 'search', logger, register: (s) => s.add(search.SearchServiceDefinition, searchHandlers(new SearchService(index, embedder))) });
    enableInProcessCalls(inProcess);
    const { client, channel } = createGrpcClient(search.SearchServiceDefinition, server.address);
    try {
      const before = await semanticSearchesEnded();
      const caller = new AbortController();
      const reached = new Promise<void>((resolve) => (arrived = resolve));
      const searching = client.semanticSearch({ query: 'herons in the reeds', page: 1, tags: [], links: [] }, { signal: caller.signal }).catch((err: unknown) => err);
      await reached;
      caller.abort();
      expect(await searching).toMatchObject({ name: 'AbortError' });
      // Before, the request stayed open until the API answered (here: never), for a search nobody waited for.
      expect(await closed).toBe('herons in the reeds');
      // The aborted request is the cancelled call's end, not an embeddings outage (UNAVAILABLE, as before the search
      // ended with the adapter's RetryableUnavailableError): the handler ends once the request is closed.
      const ended = async () => Object.entries(await semanticSearchesEnded()).filter(([code, n]) => n !== (before[code] ?? 0));
      while ((await ended()).length === 0) await new Promise((resolve) => setImmediate(resolve));
      expect(Object.fromEntries((await ended()).map(([code, n]) => [code, n - (before[code] ?? 0)]))).toEqual({ CANCELLED: 1 });
    } finally {
      enableInProcessCalls(false);
      channel.close();
      await server.shutdown(0);
      api.closeAllConnections();
      await new Promise<void>((r) => api.close(() => r()));
      await index.close();
    }
  });
});
