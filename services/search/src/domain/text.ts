/** Text rules shared by the embedders and the full-text index: one tokenizer, pg_trgm-style trigrams. */

const WORD = /[\p{L}\p{N}]+(?:'[\p{L}]+)?/gu;

/** Lower-cased words of a text (letters and digits, an inner apostrophe kept), in order. */
export function words(text: string): string[] {
  const out: string[] = [];
  for (const match of text.toLowerCase().matchAll(WORD)) {
    const word = match[0];
    if (word.length <= 40) out.push(word);
  }
  return out;
}

/** The text as its words joined by single spaces: what phrase matching compares. */
export function normalizedText(text: string): string {
  return words(text).join(' ');
}

/** Trigrams of one word as pg_trgm makes them: padded with two spaces in front and one behind. */
export function wordTrigrams(word: string): string[] {
  const padded = `  ${word} `;
  const set = new Set<string>();
  for (let i = 0; i + 3 <= padded.length; i++) set.add(padded.slice(i, i + 3));
  return [...set];
}

/** pg_trgm similarity of two words: shared trigrams over the union of both sets. */
export function trigramSimilarity(a: string, b: string): number {
  if (a === b) return 1;
  const ta = new Set(wordTrigrams(a));
  const tb = wordTrigrams(b);
  let shared = 0;
  for (const t of tb) if (ta.has(t)) shared++;
  return shared / (ta.size + tb.length - shared);
}

/** Word-shingle Jaccard similarity (k words per shingle), the near-copy measure of DESIGN.md. */
export function shingleJaccard(a: string, b: string, k = 3): number {
  const shingles = (text: string) => {
    const w = words(text);
    const set = new Set<string>();
    if (w.length < k) set.add(w.join(' '));
    for (let i = 0; i + k <= w.length; i++) set.add(w.slice(i, i + k).join(' '));
    return set;
  };
  const sa = shingles(a);
  const sb = shingles(b);
  let shared = 0;
  for (const s of sb) if (sa.has(s)) shared++;
  const union = sa.size + sb.size - shared;
  return union === 0 ? 1 : shared / union;
}
