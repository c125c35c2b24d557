import { characterBigrams, isCjkCharacter, KNOWN_WORD_VARIANTS, UNKNOWN_WORD_VARIANTS, variantSimilarity, wordTrigrams } from '../../domain/text';

/** A vocabulary word found by trigram overlap with a query word, with how many root cards the caller may see hold it. */
export interface VocabularyCandidate {
  word: string;
  documentFrequency: number;
}

export interface WordMatch {
  word: string;
  similarity: number;
}

/**
 * Vocabulary words matching a query word: the word itself when some card the caller may see holds it, plus its
 * closest spellings. The same rule as the embedded index's lexicon (adapters/sqlite/lexicon.ts, both through
 * variantSimilarity), so both indexes rank alike: a known word takes only close variants (plural, inflection), an
 * unknown one looser ones (typos). Frequencies count only cards the caller may see, so a word of someone else's
 * private card is neither known nor a variant.
 */
export function matchWord(word: string, exactFrequency: number, candidates: readonly VocabularyCandidate[]): WordMatch[] {
  const known = exactFrequency > 0;
  const out: WordMatch[] = known ? [{ word, similarity: 1 }] : [];
  // One Chinese or Japanese character (书 "book") stands for the most frequent bigrams holding it, as the lexicon's.
  if (isCjkCharacter(word)) {
    const bigrams = characterBigrams(word, candidates.map((c) => ({ word: c.word, frequency: c.documentFrequency })));
    return out.concat(bigrams.map((b) => ({ word: b.word, similarity: 1 })));
  }
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
    const similarity = variantSimilarity(word, candidate.word, shared, trigrams.length, theirs.length, known);
    if (similarity > 0) variants.push({ word: candidate.word, similarity });
  }
  variants.sort((a, b) => b.similarity - a.similarity || (a.word < b.word ? -1 : a.word > b.word ? 1 : 0));
  return out.concat(variants.slice(0, known ? KNOWN_WORD_VARIANTS : UNKNOWN_WORD_VARIANTS));
}

/** Rare words tell more than common ones (idf); a word found nowhere still counts against every card. */
export function wordWeight(cards: number, matchedFrequency: number): number {
  return Math.log(1 + cards / (1 + Math.min(cards, matchedFrequency)));
}
