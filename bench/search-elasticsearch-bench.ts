// The Elasticsearch search index (ElasticsearchCardIndex) on the Maven Central engine of test/engines:
// 1. the indexing pipeline as the search service runs it: card-created events published to the embedded event log,
//    consumed by IndexProjector subscribed exactly as services/search/src/main.ts does (runs of events through
//    batchHandler, each run made searchable before it is committed), embedded by the bundled word-vector model,
//    announced on search.index.v1; timed from the publish until every card is announced (an announced card is
//    searchable). Then a steady trickle (20 events/s, each published alone) through the same pipeline: latency from
//    publish to announcement. Then runs turned off (one event at a time) for comparison;
// 2. bare sequential upserts (one at a time, each searchable before it returns);
// 3. semantic and full-text query latency over what was indexed.
// Every indexing case also reports what it cost Elasticsearch on the cards index (index stats): refreshes, segments
// left, merges. Usage: pnpm exec tsx bench/search-elasticsearch-bench.ts [cards=500] [queries=100]; BENCH_ES_URL=<url>
// uses a running cluster, BENCH_ES_REFRESH sets the periodic refresh interval (default 1s).
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, SqliteEventLog, Topics } from '@cards/platform';
import { events } from '@cards/proto';
import { ElasticsearchCardIndex } from '../services/search/src/adapters/elasticsearch/elasticsearch-card-index';
import { WinkGloveEmbedder } from '../services/search/src/adapters/wink/wink-glove-embedder';
import { IndexProjector } from '../services/search/src/application/index-projector';
import { LABELLED_CARDS } from '../services/search/test/fixtures/labelled-cards';
import { startElasticsearchSync } from '../test/engines/elasticsearch';

const cards = Number(process.argv[2] ?? 500);
const queries = Number(process.argv[3] ?? 100);
const refresh = process.env.BENCH_ES_REFRESH ?? '1s';
// Real English words (the labelled fixture cards), so the word-vector model gives real vectors.
const vocabulary = [...new Set(LABELLED_CARDS.flatMap((c) => c.content.toLowerCase().match(/[a-z]{3,}/g) ?? []))];
let seed = 42;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const text = (n: number) => Array.from({ length: n }, () => vocabulary[Math.floor(random() ** 2 * vocabulary.length)]).join(' ');
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const logger = createLogger('bench', 'silent');
const authors = Array.from({ length: 20 }, () => randomUUID());

function createdEvent(i: number): { topic: string; key: string; payload: Uint8Array } {
  const id = randomUUID();
  const at = new Date();
  const card: events.CardSnapshot = {
    id,
    authorId: authors[i % 20]!,
    content: `${text(120)} unique${i.toString(36)}`,
    tags: [`t${i % 10}`],
    link: `https://example.org/${i}`,
    private: i % 7 === 0,
    createdAt: at,
    updatedAt: at,
    collectionIds: [],
  };
  return { topic: Topics.card, key: id, payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: at, kind: { $case: 'created', value: { card } } }).finish() };
}

/** What indexing cost Elasticsearch on a cards index: refreshes (periodic and forced), segments left, merges. */
async function cardsIndexCost(url: string, prefix: string): Promise<string> {
  const index = `${prefix}-cards`;
  const body = (await (await fetch(`${url}/${index}/_stats/refresh,segments,merge`)).json()) as {
    indices: Record<string, { primaries: { refresh: { total: number }; segments: { count: number }; merges: { total: number } } }>;
  };
  const stats = body.indices[index]!.primaries;
  return `cards index: ${stats.refresh.total} refreshes, ${stats.segments.count} segments left, ${stats.merges.total} merges`;
}

/**
 * Publishes `count` card-created events (all at once, or one every `gapMs`) and answers the seconds until the
 * projector has announced all of them, each event's latency from its publish to its card's announcement, and the cost.
 */
async function pipeline(url: string, embedder: WinkGloveEmbedder, count: number, runs: boolean, gapMs = 0): Promise<{ seconds: number; latencies: number[]; cost: string; index: ElasticsearchCardIndex }> {
  const dir = mkdtempSync(join(tmpdir(), 'es-bench-'));
  const bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger });
  const prefix = `bench-${runs ? 'runs' : 'single'}-${gapMs}-${Date.now()}`;
  const index = new ElasticsearchCardIndex({ url, dimensions: embedder.dimensions, embedderId: embedder.id, indexPrefix: prefix, replicas: 0, refreshInterval: refresh });
  await index.ready();
  const projector = new IndexProjector(index, embedder, bus, logger);
  const publishedAt = new Map<string, number>();
  const latencies: number[] = [];
  await bus.subscribe({
    group: 'bench-observer',
    topics: [Topics.index],
    handler: async (event) => void latencies.push(performance.now() - publishedAt.get(events.CardIndexed.decode(event.payload).cardId)!),
  });
  const outgoing = Array.from({ length: count }, (_, i) => createdEvent(i));
  const started = performance.now();
  // Subscribed like services/search/src/main.ts (runs), or one event at a time (runs off).
  const subscribing = () =>
    bus.subscribe({
      group: 'search-index',
      topics: [Topics.card, Topics.bookmark],
      handler: (event) => projector.handle(event),
      ...(runs ? { batchHandler: (batch: Parameters<IndexProjector['handleBatch']>[0]) => projector.handleBatch(batch) } : {}),
    });
  let indexing: Awaited<ReturnType<typeof subscribing>>;
  if (gapMs === 0) {
    for (const e of outgoing) publishedAt.set(e.key, performance.now());
    await bus.publish(outgoing);
    indexing = await subscribing();
  } else {
    indexing = await subscribing();
    for (const e of outgoing) {
      publishedAt.set(e.key, performance.now());
      await bus.publish([e]);
      await new Promise((r) => setTimeout(r, gapMs));
    }
  }
  while (latencies.length < count) await new Promise((r) => setTimeout(r, 5));
  const seconds = (performance.now() - started) / 1000;
  await indexing.close();
  await bus.close();
  rmSync(dir, { recursive: true, force: true });
  return { seconds, latencies, cost: await cardsIndexCost(url, prefix), index };
}

async function main(): Promise<void> {
  const engine = process.env.BENCH_ES_URL ? { url: process.env.BENCH_ES_URL, stop: async () => undefined } : startElasticsearchSync();
  const opened: ElasticsearchCardIndex[] = [];
  try {
    const embedder = new WinkGloveEmbedder({ cacheDir: process.env.WORD_VECTORS_CACHE_DIR ?? join(tmpdir(), 'card-library-word-vectors') });
    await embedder.ready();
    const batched = await pipeline(engine.url, embedder, cards, true);
    opened.push(batched.index);
    const trickleCount = Math.min(cards, 200);
    const trickle = await pipeline(engine.url, embedder, trickleCount, true, 50);
    opened.push(trickle.index);
    const singleCount = Math.min(cards, 50);
    const single = await pipeline(engine.url, embedder, singleCount, false);
    opened.push(single.index);

    const barePrefix = `bench-bare-${Date.now()}`;
    const bare = new ElasticsearchCardIndex({ url: engine.url, dimensions: embedder.dimensions, embedderId: embedder.id, indexPrefix: barePrefix, replicas: 0, refreshInterval: refresh });
    opened.push(bare);
    await bare.ready();
    const bareCount = Math.min(cards, 50);
    const contents = Array.from({ length: bareCount }, () => text(120));
    const vectors = await embedder.embed(contents);
    let started = performance.now();
    for (let i = 0; i < bareCount; i++) {
      await bare.upsert({ cardId: randomUUID(), authorId: authors[i % 20]!, content: contents[i]!, tags: [`t${i % 10}`], link: `https://example.org/${i}`, private: i % 7 === 0, vector: vectors[i]!, vectorPointId: randomUUID(), updatedAt: new Date() });
    }
    const bareSeconds = (performance.now() - started) / 1000;
    const bareCost = await cardsIndexCost(engine.url, barePrefix);

    const semantic: number[] = [];
    const fullText: number[] = [];
    for (let q = 0; q < queries; q++) {
      const scope = { callerId: authors[q % 20], tags: [], links: [] };
      const [vector] = await embedder.embed([text(5)]);
      started = performance.now();
      await batched.index.nearest(vector!, scope, { offset: 0, limit: 25 });
      semantic.push(performance.now() - started);
      const words = text(3).split(' ').map((w, i) => (i === 0 ? w.slice(0, -1) : w)); // one typo
      started = performance.now();
      await batched.index.matchText(words.join(' '), scope, { offset: 0, limit: 25 });
      fullText.push(performance.now() - started);
    }
    console.log(`background refresh_interval ${refresh}; ${vocabulary.length}-word vocabulary, 120-word cards, ${embedder.dimensions}-dim word vectors`);
    console.log(`pipeline, runs of events (as the service runs): ${cards} card events in ${batched.seconds.toFixed(1)} s = ${(cards / batched.seconds).toFixed(1)} events/s; ${batched.cost}`);
    const lag = trickle.latencies;
    console.log(`pipeline, trickle of ${trickleCount} events at 20/s (runs): publish -> announced p50 ${percentile(lag, 50).toFixed(0)} ms, p95 ${percentile(lag, 95).toFixed(0)} ms, max ${Math.max(...lag).toFixed(0)} ms; ${trickle.cost}`);
    console.log(`pipeline, one event at a time: ${singleCount} card events in ${single.seconds.toFixed(1)} s = ${(singleCount / single.seconds).toFixed(1)} events/s; ${single.cost}`);
    console.log(`bare sequential upserts (each searchable when it returns): ${(bareCount / bareSeconds).toFixed(1)} cards/s (${bareCount} cards); ${bareCost}`);
    console.log(`nearest p50 ${percentile(semantic, 50).toFixed(1)} ms, p95 ${percentile(semantic, 95).toFixed(1)} ms (${queries} queries over ${cards} cards)`);
    console.log(`matchText (3 words, one typo) p50 ${percentile(fullText, 50).toFixed(1)} ms, p95 ${percentile(fullText, 95).toFixed(1)} ms`);
  } finally {
    await Promise.all(opened.map((i) => i.close()));
    await engine.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
