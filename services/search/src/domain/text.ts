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

const rowsBuffer = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];

/** Optimal-string-alignment edit distance (insert, delete, substitute, swap neighbours), stopping early above `max`. */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  const cols = b.length + 1;
  if (rowsBuffer[0]!.length < cols) for (let i = 0; i < 3; i++) rowsBuffer[i] = new Int32Array(cols * 2);
  let prev2 = rowsBuffer[0]!;
  let prev = rowsBuffer[1]!;
  let cur = rowsBuffer[2]!;
  for (let j = 0; j < cols; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    cur[0] = i;
    let rowMin = i;
    const ca = a.charCodeAt(i - 1);
    for (let j = 1; j < cols; j++) {
      const cb = b.charCodeAt(j - 1);
      let d = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (ca === cb ? 0 : 1));
      if (i > 1 && j > 1 && ca === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === cb) d = Math.min(d, prev2[j - 2]! + 1);
      cur[j] = d;
      if (d < rowMin) rowMin = d;
    }
    if (rowMin > max) return max + 1;
    const spare = prev2;
    prev2 = prev;
    prev = cur;
    cur = spare;
  }
  return prev[cols - 1]!;
}

/** 1 - edits / longer length when at most `maxEdits` edits apart, else 0. */
export function editSimilarity(a: string, b: string, maxEdits = 2): number {
  const edits = editDistance(a, b, maxEdits);
  return edits > maxEdits ? 0 : 1 - edits / Math.max(a.length, b.length);
}

/**
 * How alike a misspelled word is to a vocabulary word: the better of pg_trgm similarity and an edit-distance
 * similarity (1 - edits / longer length), since trigrams punish typos in short words hard ("slepe" vs "sleep").
 */
export function spellingSimilarity(a: string, b: string): number {
  return Math.max(trigramSimilarity(a, b), editSimilarity(a, b));
}
