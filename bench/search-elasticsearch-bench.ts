// The Elasticsearch search index (ElasticsearchCardIndex) on the Maven Central engine of test/engines:
// sequential upserts (what the indexer does, one event at a time), then semantic and full-text query latency.
// Usage: pnpm exec tsx bench/search-elasticsearch-bench.ts [cards=500] [queries=100]; BENCH_ES_URL=<url> uses a running
// cluster, BENCH_ES_REFRESH sets the refresh interval (default 200ms).
import { randomUUID } from 'node:crypto';
import { ElasticsearchCardIndex } from '../services/search/src/adapters/elasticsearch/elasticsearch-card-index';
import { startElasticsearchSync } from '../test/engines/elasticsearch';

const cards = Number(process.argv[2] ?? 500);
const queries = Number(process.argv[3] ?? 100);
const DIMS = 100;
const vocabulary = Array.from({ length: 3000 }, (_, i) => `w${(i * 7919).toString(36)}x${i % 97}`);
let seed = 42;
const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const text = (n: number) => Array.from({ length: n }, () => vocabulary[Math.floor(random() ** 2 * vocabulary.length)]).join(' ');
const vector = () => {
  const v = Float32Array.from({ length: DIMS }, () => random() - 0.5);
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
};
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function main(): Promise<void> {
  const engine = process.env.BENCH_ES_URL ? { url: process.env.BENCH_ES_URL, stop: async () => undefined } : startElasticsearchSync();
  const index = new ElasticsearchCardIndex({ url: engine.url, dimensions: DIMS, indexPrefix: `bench-${Date.now()}`, replicas: 0, refreshInterval: process.env.BENCH_ES_REFRESH ?? '200ms' });
  try {
    await index.ready();
    const authors = Array.from({ length: 20 }, () => randomUUID());
    const started = Date.now();
    for (let i = 0; i < cards; i++) {
      await index.upsert({ cardId: randomUUID(), authorId: authors[i % 20]!, content: text(120), tags: [`t${i % 10}`], link: `https://example.org/${i}`, private: i % 7 === 0, collectionIds: [], vector: vector(), vectorPointId: randomUUID(), updatedAt: new Date() });
    }
    const upsertSeconds = (Date.now() - started) / 1000;
    const semantic: number[] = [];
    const fullText: number[] = [];
    for (let q = 0; q < queries; q++) {
      const scope = { callerId: authors[q % 20], tags: [], links: [] };
      let t = performance.now();
      await index.nearest(vector(), scope, { offset: 0, limit: 25 });
      semantic.push(performance.now() - t);
      const words = text(3).split(' ').map((w, i) => (i === 0 ? w.slice(0, -1) : w)); // one typo
      t = performance.now();
      await index.matchText(words.join(' '), scope, { offset: 0, limit: 25 });
      fullText.push(performance.now() - t);
    }
    console.log(`cards ${cards}: sequential upserts ${(cards / upsertSeconds).toFixed(1)} cards/s (refresh_interval ${process.env.BENCH_ES_REFRESH ?? '200ms'}, wait_for)`);
    console.log(`nearest p50 ${percentile(semantic, 50).toFixed(1)} ms, p95 ${percentile(semantic, 95).toFixed(1)} ms (${queries} queries)`);
    console.log(`matchText (3 words, one typo) p50 ${percentile(fullText, 50).toFixed(1)} ms, p95 ${percentile(fullText, 95).toFixed(1)} ms`);
  } finally {
    await index.close();
    await engine.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
