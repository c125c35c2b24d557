import { createGrpcClient } from '@cards/platform';
import { search } from '@cards/proto';
import { startElasticsearchSync } from './elasticsearch';
import { freePortsSync } from './engine-support';
import { FAST_READINESS, GRPC_UNAVAILABLE, healthOf, startServiceProcess, waitFor, type ServiceProcess } from './service-process';
import { describeOnEngine, engineForSuite, report } from './suite';

// Issue #8: search on Elasticsearch whose node goes away turns not ready (grpc.health.v1 NOT_SERVING),
// answers searches UNAVAILABLE at once, does not crash, and serves again once the node is back on the same
// address (same data directory) — without a restart.
const { engine, skipReason } = engineForSuite('elasticsearch', startElasticsearchSync);

describeOnEngine('engine loss on Elasticsearch (search alone, the node halted and resumed)', skipReason, () => {
  const [grpcPort, deadPort] = freePortsSync(2) as [number, number];
  const address = `127.0.0.1:${grpcPort}`;
  let service: ServiceProcess;
  const probe = healthOf(address);
  const { client, channel } = createGrpcClient(search.SearchServiceDefinition, address, { deadlineMs: 10_000 });
  const fullText = () => client.fullTextSearch({ query: 'brokers', tags: [], links: [], page: 1, pageSize: 25 });

  beforeAll(async () => {
    service = startServiceProcess('search', {
      ELASTICSEARCH_URL: engine!.url,
      ELASTICSEARCH_INDEX_PREFIX: 'engine-loss',
      // Full-text search needs no embeddings; a configured endpoint keeps the 1 GB word-vector model from loading.
      EMBEDDINGS_URL: `http://127.0.0.1:${deadPort}/v1`,
      EMBEDDINGS_DIMENSIONS: '8',
      SEARCH_GRPC_HOST: '127.0.0.1',
      SEARCH_GRPC_PORT: String(grpcPort),
      ...FAST_READINESS,
      READINESS_TIMEOUT_MS: '2000',
    });
    await waitFor('search SERVING', async () => (await probe.status()) === 'SERVING', 90_000, service);
  }, 120_000);

  afterAll(async () => {
    channel.close();
    probe.channel.close();
    await service?.stop();
  }, 60_000);

  it('turns NOT_SERVING and refuses searches UNAVAILABLE while the node is gone, then serves again', async () => {
    expect((await fullText()).hits).toEqual([]);

    await engine!.halt();
    const notReadyMs = await waitFor('search NOT_SERVING', async () => (await probe.status()) === 'NOT_SERVING', 30_000, service);
    expect(await probe.status('search.v1.SearchService')).toBe('NOT_SERVING');
    expect(await probe.status('engine:elasticsearch')).toBe('NOT_SERVING');
    expect(await probe.status('liveness')).toBe('SERVING');
    report(`[engine loss] Elasticsearch halted: search NOT_SERVING after ${notReadyMs} ms`);
    const refused = await fullText().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).toMatchObject({ code: GRPC_UNAVAILABLE, details: expect.stringContaining('Elasticsearch (ELASTICSEARCH_URL) is unreachable') });

    const resumed = Date.now();
    engine!.resume();
    const readyMs = await waitFor('search SERVING again', async () => (await probe.status()) === 'SERVING', 90_000, service);
    expect(await probe.status('engine:elasticsearch')).toBe('SERVING');
    report(`[engine loss] Elasticsearch resumed (listening after ${Date.now() - resumed - readyMs} ms): search SERVING ${readyMs} ms later`);
    await waitFor('a search answering again', async () => (await fullText().then(() => true).catch(() => false)), 30_000, service);
    expect(service.child.exitCode).toBeNull();
    expect(service.output()).toContain('Elasticsearch (ELASTICSEARCH_URL) is unreachable: not ready until it answers again');
  }, 240_000);
});
