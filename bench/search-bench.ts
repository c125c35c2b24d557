// Search through the gateway (all-in-one: gateway -> search -> cards -> identity) versus the raw index operation
// alone (the same SqliteCardIndex in this process), at 10,000 and 100,000 cards, plus indexing throughput and the
// search service's resident memory (the search service started alone on the resulting data directory).
// Usage: pnpm exec tsx bench/search-bench.ts [sizes=10000,100000] [queries=300] [concurrency=8] [realCards=600]
// SEARCH_BENCH_KEEP=1 keeps the data directory; SEARCH_BENCH_DATA_DIR=<kept dir> measures the gateway and the raw
// operations again on it; GRPC_IN_PROCESS=false / SYSTEM_TOPOLOGY=distributed measure the other topologies.
//
// First size (the event pipeline): `realCards` cards are created through POST /api/card (cards stores them, asks
// search for near duplicates, emits the event) and the rest are published as CardCreated events into the system's
// event log the way the cards service publishes them; the search service consumes and indexes them (indexing
// throughput through the pipeline). Later sizes: with the system stopped, the cards are written straight into the
// search service's index file by the same SqliteCardIndex class (in-process indexing throughput), then the system
// is started again on that data directory and loads them. Injected cards are written into the cards service's
// store too, so responses present full pages (entriesPerResponse says how many cards a response presented). Wall-clock figures on a shared machine
// are inflated by other processes; the cpu figures are this process's own CPU time per raw operation.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, openSharedSqliteEventLog, Topics } from '@cards/platform';
import { events } from '@cards/proto';
import { Mailbox } from '../test/support/mailbox';
import { startSystem, type RunningSystem } from '../test/support/service';
import { signUp, type TestUser } from '../test/support/accounts';
import { SqliteCardIndex, WinkGloveEmbedder } from '../services/search/src';
import { storeFinishedCards } from './support/stored-cards';
import { syntheticCorpus } from './support/synthetic-corpus';

const sizes = (process.argv[2] ?? '10000,100000').split(',').map(Number);
const queryCount = Number(process.argv[3] ?? 300);
const concurrency = Number(process.argv[4] ?? 8);
const realCards = Number(process.argv[5] ?? 600);
const cacheDir = join(tmpdir(), 'card-library-word-vectors');

const corpus = syntheticCorpus(cacheDir);
const { cardText, semanticQuery, fullTextQuery, fullTextCorrectQuery } = corpus;
const progress = (message: string) => process.stderr.write(`[${new Date().toISOString()}] ${message}\n`);
progress(`corpus model ready: ${corpus.topics.length} topics`);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
function summary(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: Number(percentile(s, 50).toFixed(2)), p99: Number(percentile(s, 99).toFixed(2)) };
}
/** Wall-clock ms per item, and this process's mean CPU ms per item. */
async function timeEach<T>(items: T[], run: (item: T) => Promise<unknown>): Promise<{ p50: number; p99: number; cpuMs: number }> {
  const out: number[] = [];
  const cpu = process.cpuUsage();
  for (const item of items) {
    const started = process.hrtime.bigint();
    await run(item);
    out.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  const used = process.cpuUsage(cpu);
  return { ...summary(out), cpuMs: Number(((used.user + used.system) / 1000 / items.length).toFixed(2)) };
}

const scope = { tags: [], links: [] };
const page = { offset: 0, limit: 25 };

// node:http with one kept-alive connection: undici's fetch spends ~1.8 ms of this process's CPU per 25-card
// response (measured), which would be counted as the gateway's latency.
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function send(system: RunningSystem, path: string, body: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const { hostname, port } = new URL(system.baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: hostname, port, path, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown> }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function post(system: RunningSystem, path: string, body: unknown) {
  const text = JSON.stringify(body);
  // A kept-alive connection the server has just closed fails once; the request is idempotent, so resend it.
  const { status, json } = await send(system, path, text).catch(() => send(system, path, text));
  if (status !== 200) throw new Error(`${path}: ${status} ${JSON.stringify(json)}`);
  return json as { total_pages?: number; score_cards?: unknown[] };
}

async function waitForIndex(system: RunningSystem, size: number): Promise<void> {
  while (true) {
    const res = await post(system, '/api/card/search/1', { content: 'the' }).catch(() => ({ total_pages: 0 }));
    if ((res.total_pages ?? 0) * 25 >= size - 25) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function measureGateway(system: RunningSystem) {
  const semanticQueries = Array.from({ length: queryCount }, semanticQuery);
  const textQueries = Array.from({ length: queryCount }, fullTextQuery);
  const correctQueries = Array.from({ length: queryCount }, fullTextCorrectQuery);
  for (const q of semanticQueries.slice(0, 20)) await post(system, '/api/card/search/1', { content: q });
  for (const q of textQueries.slice(0, 20)) await post(system, '/api/card/fulltextsearch/1', { content: q });
  let entries = 0;
  const semantic = await timeEach(semanticQueries, async (q) => (entries += (await post(system, '/api/card/search/1', { content: q })).score_cards!.length));
  const fullText = await timeEach(textQueries, async (q) => (entries += (await post(system, '/api/card/fulltextsearch/1', { content: q })).score_cards!.length));
  const correct = await timeEach(correctQueries, async (q) => (entries += (await post(system, '/api/card/fulltextsearch/1', { content: q })).score_cards!.length));
  // As rawMatchTextWithStopword: the typo queries with a word every card holds in front.
  const stopword = await timeEach(textQueries, async (q) => (entries += (await post(system, '/api/card/fulltextsearch/1', { content: `the ${q}` })).score_cards!.length));
  return {
    gatewaySemantic: { p50: semantic.p50, p99: semantic.p99 },
    gatewayFullText: { p50: fullText.p50, p99: fullText.p99 },
    gatewayFullTextCorrect: { p50: correct.p50, p99: correct.p99 },
    gatewayFullTextWithStopword: { p50: stopword.p50, p99: stopword.p99 },
    entriesPerResponse: Number((entries / (4 * queryCount)).toFixed(1)),
  };
}

async function measureRaw(index: SqliteCardIndex, embedder: WinkGloveEmbedder) {
  await index.ready();
  const semanticQueries = Array.from({ length: queryCount }, semanticQuery);
  const textQueries = Array.from({ length: queryCount }, fullTextQuery);
  const queryVectors = await embedder.embed(semanticQueries);
  for (const v of queryVectors.slice(0, 20)) await index.nearest(v, scope, page);
  const rawNearest = await timeEach(queryVectors, (v) => index.nearest(v, scope, page));
  const rawEmbedPlusNearest = await timeEach(semanticQueries, async (q) => index.nearest((await embedder.embed([q]))[0]!, scope, page));
  const rawExactScan = await timeEach(queryVectors, async (v) => index.exactNearest(v, scope, 25));
  const rawMatchText = await timeEach(textQueries, (q) => index.matchText(q, scope, page));
  const rawMatchTextCorrect = await timeEach(Array.from({ length: queryCount }, fullTextCorrectQuery), (q) => index.matchText(q, scope, page));
  const rawMatchTextWithStopword = await timeEach(textQueries, (q) => index.matchText(`the ${q}`, scope, page));
  let agree = 0;
  for (const v of queryVectors.slice(0, 100)) {
    const approx = new Set((await index.nearest(v, scope, page)).hits.map((h) => h.cardId));
    agree += index.exactNearest(v, scope, 25).filter((h) => approx.has(h.cardId)).length;
  }
  return { rawNearest, rawEmbedPlusNearest, rawExactScan, rawMatchText, rawMatchTextCorrect, rawMatchTextWithStopword, signCodeRecallAt25: Number((agree / (100 * 25)).toFixed(3)) };
}

async function indexInProcess(index: SqliteCardIndex, embedder: WinkGloveEmbedder, texts: string[], authorId: string, ids: string[] = texts.map(() => randomUUID())): Promise<number> {
  const started = Date.now();
  for (let i = 0; i < texts.length; i += 256) {
    const batch = texts.slice(i, i + 256);
    const vectors = await embedder.embed(batch);
    for (let j = 0; j < batch.length; j++) {
      await index.upsert({ cardId: ids[i + j]!, authorId, content: batch[j]!, tags: [], link: '', private: false, vector: vectors[j]!, vectorPointId: randomUUID(), updatedAt: new Date() });
    }
    if ((i / 256) % 40 === 0) progress(`indexed ${i + batch.length} of ${texts.length} in process`);
  }
  return Math.round(texts.length / ((Date.now() - started) / 1000));
}

/** The search service alone on a data directory: time until it listens, until every card is loaded, and its resident memory. */
async function measureServiceAlone(dataDir: string, created: number): Promise<void> {
  const startedAt = Date.now();
  // node --import tsx (not the tsx CLI, which runs the service in a child process) so child.pid is the service.
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '../services/search/src/main.ts')], {
    cwd: join(__dirname, '..'),
    env: { ...process.env, DATA_DIR: dataDir, SEARCH_GRPC_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let listening = 0;
  await new Promise<void>((resolve) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      if (!listening && buf.includes('gRPC server listening')) listening = (Date.now() - startedAt) / 1000;
      if (buf.includes('search index loaded')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
  });
  const loaded = (Date.now() - startedAt) / 1000;
  await new Promise((r) => setTimeout(r, 2000));
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
  console.log(JSON.stringify({ searchServiceAlone: { cards: created, listeningSeconds: listening, loadedSeconds: loaded, rssMB: Math.round(Number(rss) / 1024) } }));
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
}

/** SEARCH_BENCH_DATA_DIR=<a kept data directory>: the raw and gateway measurements again on the cards already there. */
async function measureKept(dataDir: string): Promise<void> {
  const embedder = new WinkGloveEmbedder({ cacheDir });
  await embedder.ready();
  // Raw first, with the system stopped, as the full run does from its second size on.
  const index = new SqliteCardIndex({ path: join(dataDir, 'search', 'index.db'), dimensions: 100, embedderId: embedder.id });
  const rawOps = await measureRaw(index, embedder);
  const cards = await index.count();
  await index.close();
  const system = await startSystem({ dataDir, env: { LOG_LEVEL: 'warn' } });
  try {
    await waitForIndex(system, cards);
    const gateway = await measureGateway(system);
    console.log(JSON.stringify({ cards, keptDataDir: dataDir, inProcessCalls: process.env.GRPC_IN_PROCESS !== 'false', ...gateway, ...rawOps }));
  } finally {
    await system.stop();
  }
}

async function main() {
  if (process.env.SEARCH_BENCH_DATA_DIR) return measureKept(process.env.SEARCH_BENCH_DATA_DIR);
  const memoryOnly = Number(process.env.SEARCH_BENCH_MEMORY_ONLY ?? 0);
  if (memoryOnly > 0) {
    // SEARCH_BENCH_MEMORY_ONLY=N: an index file of N cards written in process, raw operations, then the service alone.
    const dataDir = mkdtempSync(join(tmpdir(), 'search-bench-'));
    const embedder = new WinkGloveEmbedder({ cacheDir });
    await embedder.ready();
    const index = new SqliteCardIndex({ path: join(dataDir, 'search', 'index.db'), dimensions: 100, embedderId: embedder.id });
    const rawIndexPerSecond = await indexInProcess(index, embedder, Array.from({ length: memoryOnly }, () => cardText().text), randomUUID());
    console.log(JSON.stringify({ cards: memoryOnly, rawIndexPerSecond, ...(await measureRaw(index, embedder)) }));
    await index.close();
    await measureServiceAlone(dataDir, memoryOnly);
    rmSync(dataDir, { recursive: true, force: true });
    return;
  }
  const mailbox = new Mailbox();
  await mailbox.start();
  const dataDir = mkdtempSync(join(tmpdir(), 'search-bench-'));
  const env = { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' };
  let system = await startSystem({ dataDir, env });
  const embedder = new WinkGloveEmbedder({ cacheDir });
  await embedder.ready();
  const user: TestUser = await signUp(system.baseUrl, mailbox, 'bench');
  let created = 0;
  try {
    for (const [phase, size] of sizes.entries()) {
      const texts: string[] = [];
      while (texts.length < size - created) texts.push(cardText().text);
      if (phase === 0) {
        const startedCreating = Date.now();
        const viaGateway = Math.min(texts.length, realCards);
        let next = 0;
        await Promise.all(
          Array.from({ length: concurrency }, async () => {
            while (next < viaGateway) {
              const text = texts[next++]!;
              const res = await user.client.post('/api/card', { card_html: `<p>${text}</p>`, link: '', private: false });
              if (res.status !== 200) throw new Error(`create: ${res.status} ${res.text}`);
            }
          }),
        );
        const gatewayCreateSeconds = (Date.now() - startedCreating) / 1000;
        const bus = openSharedSqliteEventLog({ path: join(dataDir, 'events', 'events.db'), logger: createLogger('bench', 'warn') });
        const injected = texts.slice(viaGateway).map((text) => ({ id: randomUUID(), text }));
        await storeFinishedCards(dataDir, injected, user.id);
        const startedInjecting = Date.now();
        for (let i = 0; i < injected.length; i += 500) {
          const batch = injected.slice(i, i + 500).map(({ id, text }) => {
            const now = new Date();
            const card = { id, authorId: user.id, content: text, tags: [], link: '', private: false, createdAt: now, updatedAt: now, collectionIds: [] };
            return { topic: Topics.card, key: id, payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: now, kind: { $case: 'created', value: { card } } }).finish() };
          });
          await bus.publish(batch);
        }
        await bus.close();
        progress(`created ${viaGateway} cards through the gateway in ${gatewayCreateSeconds} s, published ${texts.length - viaGateway} events; waiting for the index`);
        await waitForIndex(system, size);
        const pipelineSeconds = (Date.now() - startedInjecting) / 1000;
        created = size;
        const gateway = await measureGateway(system);
        const raw = new SqliteCardIndex({ path: ':memory:', dimensions: 100, embedderId: embedder.id });
        const rawIndexPerSecond = await indexInProcess(raw, embedder, texts, user.id);
        const rawOps = await measureRaw(raw, embedder);
        await raw.close();
        console.log(JSON.stringify({ cards: size, viaGateway, gatewayCreatesPerSecond: Math.round(viaGateway / gatewayCreateSeconds), pipelineEventsPerSecond: Math.round((texts.length - viaGateway) / pipelineSeconds), rawIndexPerSecond, ...gateway, ...rawOps }));
      } else {
        await system.stop();
        const direct = new SqliteCardIndex({ path: join(dataDir, 'search', 'index.db'), dimensions: 100, embedderId: embedder.id });
        await direct.ready();
        const ids = texts.map(() => randomUUID());
        const rawIndexPerSecond = await indexInProcess(direct, embedder, texts, user.id, ids);
        await storeFinishedCards(dataDir, texts.map((text, i) => ({ id: ids[i]!, text })), user.id);
        created = size;
        const rawOps = await measureRaw(direct, embedder);
        await direct.close();
        const restarted = Date.now();
        system = await startSystem({ dataDir, env });
        await waitForIndex(system, size);
        const loadSeconds = (Date.now() - restarted) / 1000;
        const gateway = await measureGateway(system);
        console.log(JSON.stringify({ cards: size, rawIndexPerSecond, restartUntilSearchableSeconds: loadSeconds, ...gateway, ...rawOps }));
      }
    }
  } finally {
    await system.stop();
    await mailbox.stop();
  }
  await measureServiceAlone(dataDir, created);
  // SEARCH_BENCH_KEEP=1 keeps the data directory (e.g. to profile the system on it afterwards).
  if (process.env.SEARCH_BENCH_KEEP) progress(`data directory kept: ${dataDir}`);
  else rmSync(dataDir, { recursive: true, force: true });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
