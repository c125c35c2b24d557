// What full-text queries of names written with signs cost on the embedded index (SqliteCardIndex.matchText, in
// process), on a library whose cards name them: `cards` cards of 12 words drawn from a skewed vocabulary, 30% naming
// one of C++, C#, F#, .NET, node.js, vue.js, asp.net (or saying C, net, node alone) and 10% one more. Queries of five
// and of three names (namesFloor), a name beside a word, and three plain words: ms per query and each one's total,
// which must not change between versions of the scoring code (pages are the index's answer, not timing).
// Usage: pnpm exec tsx bench/search-names-bench.ts [cards=10000] [queries=200]
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { SqliteCardIndex } from '../services/search/src/adapters/sqlite/sqlite-card-index';
import { aCard, CONTRACT_DIMENSIONS } from '../services/search/test/card-index.contract';

const cards = Number(process.argv[2] ?? 10_000);
const queries = Number(process.argv[3] ?? 200);
const names = ['C++', 'C#', 'F#', '.NET', 'node.js', 'vue.js', 'asp.net', 'C', 'net', 'node'];
let seed = 7;
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const vocabulary = Array.from({ length: 3000 }, (_, i) => 'w' + i.toString(36));

async function main(): Promise<void> {
  const path = join(tmpdir(), `search-names-bench-${process.pid}.db`);
  const index = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
  try {
    for (let i = 0; i < cards; i++) {
      const words = Array.from({ length: 12 }, () => vocabulary[Math.floor(random() ** 2 * vocabulary.length)]!);
      if (random() < 0.3) words.push(names[Math.floor(random() * names.length)]!);
      if (random() < 0.1) words.push(names[Math.floor(random() * names.length)]!);
      await index.upsert(aCard().saying(words.join(' ')).build());
    }
    const rows: { query: string; msPerQuery: number; total: number }[] = [];
    for (const query of ['C++ C# F# .NET node.js', 'C++ C# F#', 'C++ templates', 'w1 w2 w3']) {
      const scope = { tags: [], links: [] };
      const page = { offset: 0, limit: 25 };
      for (let i = 0; i < 20; i++) await index.matchText(query, scope, page);
      let total = 0;
      const start = process.hrtime.bigint();
      for (let i = 0; i < queries; i++) total = (await index.matchText(query, scope, page)).total;
      rows.push({ query, msPerQuery: Math.round(Number(process.hrtime.bigint() - start) / queries / 1e3) / 1e3, total });
    }
    console.table(rows);
  } finally {
    await index.close();
    rmSync(path, { force: true });
  }
}

void main();
