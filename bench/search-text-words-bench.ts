// What full-text search's reading of a text costs per call (services/search/src/domain/text.ts): indexWords of a
// paragraph without names written with signs and of one holding several (node.js, .NET, C++, F#, C#, example.com,
// "e.g."), and queryTerms of three plain words, of "C++ templates", of five names and of "C++17". Both indexes (SQLite, Elasticsearch) call these
// once per card written and once per search.
// Usage: pnpm exec tsx bench/search-text-words-bench.ts [calls=100000]
import { indexWords, queryTerms } from '../services/search/src/domain/text';

const calls = Number(process.argv[2] ?? 100_000);
const prose =
  'The index was rebuilt overnight. Every card was read again, and the words of each were listed. Nothing else changed: ' +
  'the queries ran as before, the pages matched, and the figures were kept for the next session to compare against.';
const names =
  'We moved the service from node.js to .NET last year. The C++ core stayed, e.g. the parser, and F# scripts replaced ' +
  'the C# tools; see example.com for notes.';

function time(kind: string, call: () => unknown, n: number): { kind: string; microseconds: number } {
  for (let i = 0; i < 2_000; i++) call();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) call();
  return { kind, microseconds: Math.round(Number(process.hrtime.bigint() - start) / n / 10) / 100 };
}

console.table([
  time('indexWords, prose without names', () => indexWords(prose), calls),
  time('indexWords, a paragraph with 7 names', () => indexWords(names), calls),
  time('queryTerms, 3 plain words', () => queryTerms('volcano eruption lava'), calls * 2),
  time('queryTerms, "C++ templates"', () => queryTerms('C++ templates'), calls * 2),
  time('queryTerms, "C++ C# F# .NET node.js"', () => queryTerms('C++ C# F# .NET node.js'), calls * 2),
  time('queryTerms, "C++17"', () => queryTerms('C++17'), calls * 2),
]);
