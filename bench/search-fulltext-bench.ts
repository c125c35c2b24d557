// Full-text search of the embedded index alone: an in-memory SqliteCardIndex filled with the synthetic corpus of
// bench/search-bench.ts (cards of 85 words, half Zipf-drawn from the 3,000 most frequent GloVe words, half from one
// of 300 topics), then `matchText` timed per kind of query, one query at a time.
// Usage: node --expose-gc --import tsx bench/search-fulltext-bench.ts [cards=100000] [queries=300]
// Three kinds are pastes (a card whole, half of one, two joined): queries of more than 32 distinct words;
// `sourcesFirst` counts the pastes whose first hits are the cards they came from.
// SEARCH_FULLTEXT_BENCH_DUMP=<file> also writes every query's page (card ids, scores) and total, to compare runs.
// The same queries also run on a second index built with `pruneTextCandidates: false` (every card holding a matched
// word a candidate, as before the MaxScore pruning): its times are the baseline, and its pages must be the same.
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteCardIndex } from '../services/search/src';
import { syntheticCorpus } from './support/synthetic-corpus';

const cardCount = Number(process.argv[2] ?? 100_000);
const queryCount = Number(process.argv[3] ?? 300);
const dumpPath = process.env.SEARCH_FULLTEXT_BENCH_DUMP;

const { random, pick, common, typo, topicWords, cardText } = syntheticCorpus(join(tmpdir(), 'card-library-word-vectors'));

const texts = Array.from({ length: cardCount }, () => cardText().text);
const heldPhrase = () => {
  const words = pick(texts).split(' ');
  const at = Math.floor(random() * (words.length - 3));
  return words.slice(at, at + 3).join(' ');
};
const queryKinds: Record<string, () => string> = {
  'typos, 3 topic words': () => topicWords(3).map(typo).join(' '),
  'correct, 2 topic words': () => topicWords(2).join(' '),
  'correct, 3 topic words': () => topicWords(3).join(' '),
  'correct, 4 topic words': () => topicWords(4).join(' '),
  '"the" + 3 correct topic words': () => `the ${topicWords(3).join(' ')}`,
  '3 consecutive words of a card': heldPhrase,
  '2 of the 20 commonest words': () => [pick(common.slice(0, 20)), pick(common.slice(0, 20))].join(' '),
  '3 of the 20 commonest words': () => [pick(common.slice(0, 20)), pick(common.slice(0, 20)), pick(common.slice(0, 20))].join(' '),
  '"the of and"': () => 'the of and',
  // Pastes: a card's whole text (85 words), the second half of one, and two cards' texts joined.
  'a card pasted whole': () => pasted([pastedCard()], (t) => t),
  'the second half of a card': () => pasted([pastedCard()], (t) => t.split(' ').slice(42).join(' ')),
  'two cards pasted together': () => pasted([pastedCard(), pastedCard()], (t) => t),
  // Last, so the kinds above draw the same queries as before it was added: a word no card holds (nor a typo of one)
  // beside held words, written with commas (each word is then read again to tell it apart from joined ones).
  '2 topic words, a word no card holds': () => `${topicWords(2).join(', ')}, ${unheldWord()}`,
};
/** A word no card holds, nor one within typo reach: "zq" and letters of base 36. */
function unheldWord(): string {
  return `zq${Math.floor(random() * 36 ** 6).toString(36)}`;
}
/** The cards each paste came from (`sourcesFirst`: how often they are the first hits). */
const pastedFrom = new Map<string, number[]>();
function pastedCard(): number {
  return Math.floor(random() * texts.length);
}
function pasted(sources: number[], part: (text: string) => string): string {
  const query = sources.map((i) => part(texts[i]!)).join(' ');
  pastedFrom.set(query, sources);
  return query;
}

function heapMB(): number {
  // Twice: one collection leaves some of the build's garbage behind.
  for (let i = 0; i < 2; i++) (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return Math.round((m.heapUsed + m.arrayBuffers) / 1024 / 1024);
}

async function main() {
  const before = heapMB();
  const index = new SqliteCardIndex({ path: ':memory:', dimensions: 8 });
  const started = Date.now();
  const vector = new Float32Array(8).fill(Math.SQRT1_2 / 2);
  const fill = async (target: SqliteCardIndex) => {
    for (let i = 0; i < texts.length; i++) {
      await target.upsert({ cardId: `card-${i}`, authorId: 'author', content: texts[i]!, tags: [], link: '', private: false, vector, vectorPointId: `point-${i}`, updatedAt: new Date(0) });
    }
  };
  await fill(index);
  const indexSeconds = (Date.now() - started) / 1000;
  const jsHeapMB = heapMB() - before;
  const baseline = new SqliteCardIndex({ path: ':memory:', dimensions: 8, pruneTextCandidates: false });
  await fill(baseline);
  const scope = { tags: [], links: [] };
  const page = { offset: 0, limit: 25 };
  const results: Record<string, { query: string; total: number; hits: string[] }[]> = {};
  const rows: Record<string, unknown>[] = [];
  for (const [kind, make] of Object.entries(queryKinds)) {
    const queries = Array.from({ length: queryCount }, make);
    for (const q of queries.slice(0, 20)) await baseline.matchText(q, scope, page);
    const baseTimes: number[] = [];
    const basePages: string[] = [];
    for (const q of queries) {
      const t = process.hrtime.bigint();
      const result = await baseline.matchText(q, scope, page);
      baseTimes.push(Number(process.hrtime.bigint() - t) / 1e6);
      basePages.push(JSON.stringify(result));
    }
    baseTimes.sort((a, b) => a - b);
    for (const q of queries.slice(0, 20)) await index.matchText(q, scope, page);
    const times: number[] = [];
    let differingPages = 0;
    const cpu = process.cpuUsage();
    results[kind] = [];
    for (const q of queries) {
      const t = process.hrtime.bigint();
      const result = await index.matchText(q, scope, page);
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      if (JSON.stringify(result) !== basePages[results[kind]!.length]) differingPages++;
      results[kind]!.push({ query: q, total: result.total, hits: result.hits.map((h) => `${h.cardId} ${h.score.toFixed(6)}`) });
    }
    const used = process.cpuUsage(cpu);
    const pastes = results[kind]!.filter((r) => pastedFrom.has(r.query));
    const sourcesFirst = pastes.filter((r) => {
      const sources = pastedFrom.get(r.query)!.map((i) => `card-${i}`);
      return r.hits.slice(0, sources.length).every((h) => sources.includes(h.split(' ')[0]!));
    }).length;
    times.sort((a, b) => a - b);
    const at = (p: number) => Number(times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(2));
    const meanTotal = Math.round(results[kind]!.reduce((s, r) => s + r.total, 0) / queries.length);
    const baseP50 = baseTimes[Math.floor(0.5 * baseTimes.length)]!;
    const baseP99 = baseTimes[Math.min(baseTimes.length - 1, Math.floor(0.99 * baseTimes.length))]!;
    rows.push({
      kind, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1 - 1e-9), cpuMs: Number(((used.user + used.system) / 1000 / queries.length).toFixed(2)), meanTotal,
      unprunedP50: Number(baseP50.toFixed(2)), unprunedP99: Number(baseP99.toFixed(2)), p50Ratio: Number((baseP50 / at(0.5)).toFixed(1)), differingPages,
      ...(pastes.length > 0 ? { sourcesFirst: `${sourcesFirst}/${pastes.length}` } : {}),
    });
  }
  console.log(JSON.stringify({ cards: cardCount, queriesPerKind: queryCount, indexSeconds, jsHeapMB, rssMB: Math.round(process.memoryUsage().rss / 1024 / 1024) }));
  console.table(rows);
  if (dumpPath) writeFileSync(dumpPath, JSON.stringify(results));
  await index.close();
  await baseline.close();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
