import { createServer, type Server } from 'node:http';

/** Vector size the fake endpoint answers; the search process is told the same through EMBEDDINGS_DIMENSIONS. */
export const FAKE_EMBEDDING_DIMENSIONS = 8;

/**
 * An OpenAI-compatible embeddings endpoint for a search service run as its own process. With `holdFor`, it holds its
 * answer for a text containing it until released (`held` resolves when it starts holding).
 */
export async function fakeEmbeddingsEndpoint(holdFor?: string): Promise<{ url: string; held: Promise<void>; release(): void; server: Server }> {
  let heldNow: () => void = () => undefined;
  const held = new Promise<void>((r) => (heldNow = r));
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => (release = r));
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', async () => {
      const input = (JSON.parse(body) as { input: string[] }).input;
      if (holdFor !== undefined && input.some((text) => text.includes(holdFor))) {
        heldNow();
        await released;
      }
      res.setHeader('content-type', 'application/json');
      const dims = FAKE_EMBEDDING_DIMENSIONS;
      res.end(JSON.stringify({ data: input.map((_, index) => ({ index, embedding: Array.from({ length: dims }, (__, i) => (i === index % dims ? 1 : 0.1)) })) }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/v1`, held, release, server };
}

/** The environment of a search service process on Kafka with the fake embeddings endpoint. */
export function searchProcessEnv(dataDir: string, brokers: string, embeddingsUrl: string, grpcPort: number): Record<string, string> {
  return {
    DATA_DIR: dataDir,
    KAFKA_BROKERS: brokers,
    EMBEDDINGS_URL: embeddingsUrl,
    EMBEDDINGS_DIMENSIONS: String(FAKE_EMBEDDING_DIMENSIONS),
    SEARCH_GRPC_HOST: '127.0.0.1',
    SEARCH_GRPC_PORT: String(grpcPort),
  };
}
