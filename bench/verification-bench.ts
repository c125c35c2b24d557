// Content verification: cost of token_set_ratio by page size, and the worker's throughput and latency
// (card event published -> CardVerified published) against a local page server, at two concurrencies.
// Usage: pnpm exec tsx bench/verification-bench.ts [cards=200]
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Topics, createLogger, openSharedSqliteEventLog } from '@cards/platform';
import { events } from '@cards/proto';
import { tokenSetRatio } from '../services/search/src/verification/adapters/fuzzball/fuzzball-scorer';
import { verificationConfigSchema } from '../services/search/src/verification/config';
import { startVerificationWorker } from '../services/search/src/verification';

const cards = Number(process.argv[2] ?? 200);

const VOCABULARY = Array.from({ length: 60_000 }, (_, i) => `w${(i * 2654435761 % 4294967296).toString(36)}`);
const words = (from: number, count: number) => VOCABULARY.slice(from, from + count).join(' ');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

function scoringCost() {
  console.log('\ntoken_set_ratio (fuzzball, one thread), median of 3 runs');
  console.log('card words | page unique words | page chars | ms (quoting) | ms (unrelated)');
  for (const cardWords of [80, 500]) {
    for (const pageWords of [1_000, 3_000, 10_000]) {
      const page = words(0, pageWords);
      const quoting = words(100, cardWords);
      const unrelated = words(40_000, cardWords);
      const time = (card: string) =>
        median(
          [0, 1, 2].map(() => {
            const t = performance.now();
            tokenSetRatio(card, page);
            return performance.now() - t;
          }),
        );
      console.log(`${cardWords} | ${pageWords} | ${page.length} | ${time(quoting).toFixed(0)} | ${time(unrelated).toFixed(0)}`);
    }
  }
}

async function pipeline(concurrency: number) {
  const article = `<html><body><article><p>${words(0, 1_500)}</p></article></body></html>`;
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(article));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const dataDir = mkdtempSync(join(tmpdir(), 'verification-bench-'));
  const logger = createLogger('bench', 'warn');
  const bus = openSharedSqliteEventLog({ path: join(dataDir, 'events', 'events.db'), logger });
  const config = verificationConfigSchema.parse({ VERIFY_ALLOW_HOSTS: `127.0.0.1:${port}`, VERIFY_CONCURRENCY: String(concurrency) });
  const worker = await startVerificationWorker({ config, dataDir, bus, logger });
  const publishedAt = new Map<string, number>();
  const latencies: number[] = [];
  let done: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const results = await bus.subscribe({
    group: 'bench',
    topics: [Topics.verification],
    handler: async (e) => {
      const v = events.CardVerified.decode(e.payload);
      latencies.push(performance.now() - publishedAt.get(v.cardId)!);
      if (latencies.length === cards) done();
    },
  });
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const start = performance.now();
  for (let i = 0; i < cards; i++) {
    const id = randomUUID();
    publishedAt.set(id, performance.now());
    const card = { id, authorId: randomUUID(), content: words((i * 37) % 1_400, 100), tags: [], link: `http://127.0.0.1:${port}/a/${i}`, private: false, collectionIds: [] };
    await bus.publish([{ topic: Topics.card, key: id, payload: events.CardEvent.encode({ eventId: randomUUID(), kind: { $case: 'created', value: { card } } }).finish() }]);
  }
  await finished;
  const seconds = (performance.now() - start) / 1000;
  loop.disable();
  console.log(
    `${concurrency} | ${cards} | ${(cards / seconds).toFixed(1)} | ${percentile(latencies, 50).toFixed(0)} | ${percentile(latencies, 95).toFixed(0)} | ${(loop.max / 1e6).toFixed(0)}`,
  );
  await results.close();
  await worker.stop();
  await bus.close();
  server.close();
  rmSync(dataDir, { recursive: true, force: true });
}

async function main() {
  console.log(`Node ${process.version}, ${(await import('node:os')).cpus().length} cpus`);
  scoringCost();
  console.log('\nworker pipeline: 100-word cards, 1,500-word page on 127.0.0.1 (fetch + htmlparser2 + token_set_ratio in worker threads + outbox)');
  console.log('concurrency | cards | verifications/s | p50 ms (event -> CardVerified) | p95 ms | max event-loop delay ms');
  for (const concurrency of [1, 4]) await pipeline(concurrency);
}

void main();
