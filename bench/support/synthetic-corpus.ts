import { loadWordVectors } from '../../services/search/src';

/**
 * The search benchmarks' synthetic corpus: cards of 85 words, half drawn from the 3,000 most frequent GloVe words by
 * Zipf's law and half from one of 300 topics (the 80 words nearest a random anchor word). One seeded random stream
 * makes every draw (topics, cards, queries) repeatable from run to run.
 */
export function syntheticCorpus(cacheDir: string, seed = 20261122) {
  let state = seed;
  const random = () => ((state = (state * 48271) % 2147483647) / 2147483647);
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
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const zipfCommon = () => common[Math.min(common.length - 1, Math.floor(Math.exp(random() * Math.log(common.length))) - 1)]!;
  /** A word with one inner letter dropped (words under 5 letters stay as they are). */
  const typo = (word: string) => {
    if (word.length < 5) return word;
    const i = 1 + Math.floor(random() * (word.length - 2));
    return word.slice(0, i) + word.slice(i + 1);
  };
  /** n words of one random topic. */
  const topicWords = (n: number) => {
    const t = pick(topics);
    return Array.from({ length: n }, () => pick(t));
  };
  return {
    random,
    pick,
    common,
    topics,
    typo,
    topicWords,
    cardText(): { text: string; topic: number } {
      const topic = Math.floor(random() * topics.length);
      const words: string[] = [];
      for (let i = 0; i < 85; i++) words.push(random() < 0.5 ? zipfCommon() : pick(topics[topic]!));
      return { text: words.join(' '), topic };
    },
    /** Semantic queries: 6 words of one topic. */
    semanticQuery: () => topicWords(6).join(' '),
    /** Full-text queries with typos: 3 topic words, each with a letter dropped. */
    fullTextQuery: () => topicWords(3).map(typo).join(' '),
    /** Correctly spelled, as most queries are: every word is known, so the exact-phrase check runs too. */
    fullTextCorrectQuery: () => topicWords(3).join(' '),
  };
}
