import { editSimilarity, wordTrigrams } from '../../domain/text';

/** A vocabulary word found by trigram overlap with a query word, with how many indexed root cards hold it. */
export interface VocabularyCandidate {
  word: string;
  documentFrequency: number;
}

export interface WordMatch {
  word: string;
  similarity: number;
}

/**
 * Vocabulary words matching a query word: the word itself when some card holds it, plus its closest spellings by
 * pg_trgm similarity. The same rule as the embedded index's lexicon (adapters/sqlite/lexicon.ts), so both indexes
 * rank alike: a known word takes only close variants (plural, inflection), an unknown one looser ones (typos), and
 * for an unknown word an edit-distance similarity (at most 2 edits) may beat the trigram one.
 */
export function matchWord(word: string, exactFrequency: number, candidates: readonly VocabularyCandidate[]): WordMatch[] {
  const known = exactFrequency > 0;
  const minSimilarity = known ? 0.6 : 0.45;
  const maxVariants = known ? 3 : 6;
  const out: WordMatch[] = known ? [{ word, similarity: 1 }] : [];
  if (word.length < 3 && known) return out;
  const trigrams = wordTrigrams(word);
  const own = new Set(trigrams);
  const variants: WordMatch[] = [];
  for (const candidate of candidates) {
    if (candidate.word === word || candidate.documentFrequency === 0) continue;
    const theirs = wordTrigrams(candidate.word);
    let shared = 0;
    for (const t of theirs) if (own.has(t)) shared++;
    if (shared === 0) continue;
    let similarity = shared / (trigrams.length + theirs.length - shared);
    if (!known && similarity < 0.7 && shared >= trigrams.length - 8) {
      const longer = Math.max(candidate.word.length, word.length);
      if (Math.abs(candidate.word.length - word.length) <= 2 && 1 - 1 / longer > Math.max(similarity, minSimilarity)) {
        similarity = Math.max(similarity, editSimilarity(word, candidate.word));
      }
    }
    if (similarity >= minSimilarity) variants.push({ word: candidate.word, similarity });
  }
  variants.sort((a, b) => b.similarity - a.similarity || (a.word < b.word ? -1 : a.word > b.word ? 1 : 0));
  return out.concat(variants.slice(0, maxVariants));
}

/** Rare words tell more than common ones (idf); a word found nowhere still counts against every card. */
export function wordWeight(cards: number, matchedFrequency: number): number {
  return Math.log(1 + cards / (1 + Math.min(cards, matchedFrequency)));
}
