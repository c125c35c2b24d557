// Search through the gateway (all-in-one: gateway -> search -> cards -> identity) versus the raw index operation
// alone (the same SqliteCardIndex in this process), at 10,000 and 100,000 cards, plus indexing throughput and the
// search service's resident memory (the search service started alone on the resulting data directory).
// Usage: pnpm exec tsx bench/search-bench.ts [sizes=10000,100000] [queries=300] [concurrency=8] [realCards=1000]
//
// The first `realCards` cards are created through POST /api/card (cards stores them, asks search for near
// duplicates, emits the event); the rest are published as CardCreated events straight into the system's event
// log, the way the cards service publishes them, so the search service indexes them exactly as in production.
// Creating 100,000 cards through the cards service takes hours on a shared 2-core machine. The cards service does
// not know the injected cards, so getCardGroups drops them from responses: the gateway figures include the full
// search at that size, and the entries column says how many cards a response presented on average.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp } from '../test/support/accounts';
import { createLogger, openSharedSqliteEventLog, Topics } from '@cards/platform';
import { events } from '@cards/proto';
import { loadWordVectors, SqliteCardIndex, WinkGloveEmbedder } from '../services/search/src';

const sizes = (process.argv[2] ?? '10000,100000').split(',').map(Number);
const queryCount = Number(process.argv[3] ?? 300);
const concurrency = Number(process.argv[4] ?? 8);
const realCards = Number(process.argv[5] ?? 1000);
const cacheDir = join(tmpdir(), 'card-library-word-vectors');

// ---- A synthetic corpus with topical structure: 500 topics, each the 80 words nearest an anchor word. ----
let seed = 20261122;
const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
const model = loadWordVectors(cacheDir);
const byRank: string[] = [];
for (const [word, row] of model.index) if (model.ranks[row]! < 30_000 && /^[a-z]+$/.test(word)) byRank[model.ranks[row]!] = word;
const common = byRank.filter(Boolean).slice(0, 3000);
const content = byRank.filter((w, r) => w && r >= 300 && r < 30_000);
const vectorOf = (word: string) => {
  const row = model.index.get(word)!;
  const v = new Float32Array(model.dimensions);
  for (let j = 0; j < model.dimensions; j++) v[j] = model.values[row * model.dimensions + j]! * model.scales[row]!;
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
};
const flat = new Float32Array(content.length * model.dimensions);
content.forEach((w, i) => flat.set(vectorOf(w), i * model.dimensions));
const topics: string[][] = [];
for (let t = 0; t < 300; t++) {
  const a = Math.floor(random() * content.length) * model.dimensions;
  const scores = new Float32Array(content.length);
  for (let i = 0, o = 0; i < content.length; i++, o += model.dimensions) {
    let s = 0;
    for (let j = 0; j < model.dimensions; j++) s += flat[o + j]! * flat[a + j]!;
    scores[i] = s;
  }
  const cut = Float32Array.from(scores).sort()[content.length - 80]!;
  topics.push(content.filter((_, i) => scores[i]! >= cut).slice(0, 80));
}
const progress = (message: string) => process.stderr.write(`[${new Date().toISOString()}] ${message}\n`);
progress(`corpus model ready: ${topics.length} topics`);
const zipfCommon = () => common[Math.min(common.length - 1, Math.floor(Math.exp(random() * Math.log(common.length))) - 1)]!;
function cardText(): { text: string; topic: number } {
  const topic = Math.floor(random() * topics.length);
  const words: string[] = [];
  for (let i = 0; i < 85; i++) words.push(random() < 0.5 ? zipfCommon() : topics[topic]![Math.floor(random() * topics[topic]!.length)]!);
  return { text: words.join(' '), topic };
}
function typo(word: string): string {
  if (word.length < 5) return word;
  const i = 1 + Math.floor(random() * (word.length - 2));
  return word.slice(0, i) + word.slice(i + 1);
}
const semanticQuery = () => {
  const t = topics[Math.floor(random() * topics.length)]!;
  return Array.from({ length: 6 }, () => t[Math.floor(random() * t.length)]!).join(' ');
};
const fullTextQuery = () => {
  const t = topics[Math.floor(random() * topics.length)]!;
  return Array.from({ length: 3 }, () => typo(t[Math.floor(random() * t.length)]!)).join(' ');
};

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
function summary(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: Number(percentile(s, 50).toFixed(2)), p99: Number(percentile(s, 99).toFixed(2)) };
}
async function timeEach<T>(items: T[], run: (item: T) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (const item of items) {
    const started = process.hrtime.bigint();
    await run(item);
    out.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return out;
}

async function main() {
  const mailbox = new Mailbox();
  await mailbox.start();
  const system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' } });
  const dataDir = system.dataDir;
  const user = await signUp(system.baseUrl, mailbox, 'bench');
  const bus = openSharedSqliteEventLog({ path: join(dataDir, 'events', 'events.db'), logger: createLogger('bench', 'warn') });
  const raw = new SqliteCardIndex({ path: ':memory:', dimensions: 100 });
  const embedder = new WinkGloveEmbedder({ cacheDir });
  await embedder.ready();
  const results: Record<string, unknown>[] = [];
  let created = 0;
  const post = async (path: string, body: unknown) => {
    const send = () => fetch(`${system.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    // A kept-alive connection the server has just closed fails once; the request is idempotent, so resend it.
    const res = await send().catch(send);
    const json = (await res.json()) as { total_pages?: number; score_cards?: unknown[] };
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  try {
    for (const size of sizes) {
      const startedCreating = Date.now();
      const texts: string[] = [];
      while (texts.length < size - created) texts.push(cardText().text);
      const viaGateway = Math.max(0, Math.min(texts.length, realCards - created));
      let next = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (next < viaGateway) {
            const text = texts[next++]!;
            const res = await user.client.post('/api/card', { card_html: `<p>${text}</p>`, link: '', private: false });
            if (res.status !== 200) throw new Error(`create: ${res.status} ${res.text}`);
            if (next % 250 === 0) progress(`created ${created + next} cards through the gateway`);
          }
        }),
      );
      const gatewayCreateSeconds = (Date.now() - startedCreating) / 1000;
      const startedInjecting = Date.now();
      for (let i = viaGateway; i < texts.length; i += 500) {
        const batch = texts.slice(i, i + 500).map((text) => {
          const id = randomUUID();
          const now = new Date();
          const card = { id, authorId: user.id, content: text, tags: [], link: '', private: false, createdAt: now, updatedAt: now, collectionIds: [] };
          return { topic: Topics.card, key: id, payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: now, kind: { $case: 'created', value: { card } } }).finish() };
        });
        await bus.publish(batch);
      }
      const injectSeconds = (Date.now() - startedInjecting) / 1000;
      progress(`created ${viaGateway} cards through the gateway in ${gatewayCreateSeconds} s, injected ${texts.length - viaGateway} events in ${injectSeconds} s; waiting for the index`);
      created = size;
      // Wait until every card is searchable: an empty-ish full-text query over a word every card has is too broad,
      // so count through a semantic search (every visible root card matches).
      let total = 0;
      while (true) {
        const res = await post('/api/card/search/1', { content: 'the' });
        total = (res.total_pages ?? 0) * 25;
        if (total >= size - 25) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      const indexedSeconds = (Date.now() - startedInjecting) / 1000;
      // The same texts in the in-process index, for the raw operation alone.
      const startedRaw = Date.now();
      const vectors = await embedder.embed(texts);
      for (let i = 0; i < texts.length; i++) {
        await raw.upsert({ cardId: randomUUID(), authorId: user.id, content: texts[i]!, tags: [], link: '', private: false, collectionIds: [], vector: vectors[i]!, vectorPointId: randomUUID(), updatedAt: new Date() });
      }
      const rawIndexSeconds = (Date.now() - startedRaw) / 1000;
      progress(`indexed in process in ${rawIndexSeconds} s; measuring`);

      const semanticQueries = Array.from({ length: queryCount }, semanticQuery);
      const textQueries = Array.from({ length: queryCount }, fullTextQuery);
      const scope = { tags: [], links: [] };
      const page = { offset: 0, limit: 25 };
      // Warm up both paths.
      for (const q of semanticQueries.slice(0, 20)) await post('/api/card/search/1', { content: q });
      for (const q of textQueries.slice(0, 20)) await post('/api/card/fulltextsearch/1', { content: q });
      let entryCount = 0;
      const gatewaySemantic = await timeEach(semanticQueries, async (q) => (entryCount += (await post('/api/card/search/1', { content: q })).score_cards!.length));
      const gatewayText = await timeEach(textQueries, async (q) => (entryCount += (await post('/api/card/fulltextsearch/1', { content: q })).score_cards!.length));
      const queryVectors = await embedder.embed(semanticQueries);
      const rawSemantic = await timeEach(queryVectors, (v) => raw.nearest(v, scope, page));
      const rawEmbedAndNearest = await timeEach(semanticQueries, async (q) => raw.nearest((await embedder.embed([q]))[0]!, scope, page));
      const exactScan = await timeEach(queryVectors, async (v) => raw.exactNearest(v, scope, 25));
      const rawText = await timeEach(textQueries, (q) => raw.matchText(q, scope, page));
      // Recall of the sign-code candidate pass against the exact scan.
      let agree = 0;
      for (const v of queryVectors.slice(0, 100)) {
        const approx = new Set((await raw.nearest(v, scope, page)).hits.map((h) => h.cardId));
        agree += raw.exactNearest(v, scope, 25).filter((h) => approx.has(h.cardId)).length;
      }
      const row = {
        cards: size,
        viaGateway,
        gatewayCreatesPerSecond: viaGateway ? Math.round(viaGateway / gatewayCreateSeconds) : null,
        injected: texts.length - viaGateway,
        indexedEventsPerSecond: Math.round((texts.length - viaGateway) / indexedSeconds),
        entriesPerResponse: Number((entryCount / (2 * queryCount)).toFixed(1)),
        rawIndexPerSecond: Math.round(texts.length / rawIndexSeconds),
        gatewaySemantic: summary(gatewaySemantic),
        gatewayFullText: summary(gatewayText),
        rawNearest: summary(rawSemantic),
        rawEmbedPlusNearest: summary(rawEmbedAndNearest),
        rawExactScan: summary(exactScan),
        rawMatchText: summary(rawText),
        signCodeRecallAt25: Number((agree / (100 * 25)).toFixed(3)),
      };
      results.push(row);
      console.log(JSON.stringify(row));
    }
  } finally {
    await raw.close();
    await bus.close();
    await system.kill();
    await mailbox.stop();
  }
  // The search service alone on the final data directory: start-up (index rebuild) time and resident memory.
  const startedAt = Date.now();
  const child = spawn(process.execPath, [join(__dirname, '../node_modules/tsx/dist/cli.mjs'), join(__dirname, '../services/search/src/main.ts')], {
    env: { ...process.env, DATA_DIR: dataDir, SEARCH_GRPC_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve) => {
    let buf = '';
    const onData = (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('gRPC server listening')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
  });
  const startSeconds = (Date.now() - startedAt) / 1000;
  await new Promise((r) => setTimeout(r, 3000));
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1];
  console.log(JSON.stringify({ searchServiceAlone: { cards: created, startSeconds, rssMB: Math.round(Number(rss) / 1024) } }));
  child.kill('SIGTERM');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
