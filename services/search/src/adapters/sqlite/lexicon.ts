import { editSimilarity, wordTrigrams } from '../../domain/text';

/** A growable list of int32 slots. */
class SlotList {
  items = new Int32Array(4);
  length = 0;
  push(slot: number): void {
    if (this.length === this.items.length) {
      const grown = new Int32Array(this.items.length * 2);
      grown.set(this.items);
      this.items = grown;
    }
    this.items[this.length++] = slot;
  }
  remove(slot: number): void {
    const i = this.items.subarray(0, this.length).indexOf(slot);
    if (i < 0) return;
    this.items[i] = this.items[--this.length]!;
  }
}

export interface WordMatch {
  wordId: number;
  similarity: number;
}

/**
 * The vocabulary of the indexed texts: word -> cards holding it (postings), and trigram -> words, so a
 * misspelled query word is corrected to the vocabulary words most similar to it (pg_trgm similarity).
 */
export class Lexicon {
  private readonly ids = new Map<string, number>();
  private readonly words: string[] = [];
  private readonly trigramCounts: number[] = [];
  private readonly postings: SlotList[] = [];
  private readonly byTrigram = new Map<string, number[]>();
  private shared = new Uint16Array(1024);

  /** Word ids of a text's words in text order (repeats kept), adding new words to the vocabulary. */
  intern(tokens: readonly string[]): Int32Array {
    const ids = new Int32Array(tokens.length);
    tokens.forEach((token, i) => {
      let id = this.ids.get(token);
      if (id === undefined) {
        id = this.words.length;
        this.ids.set(token, id);
        this.words.push(token);
        this.postings.push(new SlotList());
        const trigrams = wordTrigrams(token);
        this.trigramCounts.push(trigrams.length);
        for (const t of trigrams) {
          const list = this.byTrigram.get(t);
          if (list) list.push(id);
          else this.byTrigram.set(t, [id]);
        }
      }
      ids[i] = id;
    });
    return ids;
  }

  /** Lists the slot once under each distinct word of `wordIds` (as intern() returned them, repeats allowed). */
  addPostings(slot: number, wordIds: Int32Array): void {
    for (const id of wordIds) {
      const list = this.postings[id]!;
      // A repeated word was pushed earlier in this call, and nothing else pushes in between: it is the last entry.
      if (list.length === 0 || list.items[list.length - 1] !== slot) list.push(slot);
    }
  }

  removePostings(slot: number, wordIds: Int32Array): void {
    for (const id of new Set(wordIds)) this.postings[id]!.remove(slot);
  }

  /** Cards holding a word: a view valid until the next change. */
  postingsOf(wordId: number): Int32Array {
    const list = this.postings[wordId]!;
    return list.items.subarray(0, list.length);
  }

  documentFrequency(wordId: number): number {
    return this.postings[wordId]!.length;
  }

  /**
   * Vocabulary words matching a query word: the word itself when known, plus its closest spellings by trigram
   * similarity. A known word takes only close variants (plural, inflection); an unknown one takes looser ones (typos).
   */
  matches(word: string): WordMatch[] {
    const exact = this.ids.get(word);
    const known = exact !== undefined && this.documentFrequency(exact) > 0;
    const minSimilarity = known ? 0.6 : 0.45;
    const maxVariants = known ? 3 : 6;
    const out: WordMatch[] = known ? [{ wordId: exact, similarity: 1 }] : [];
    if (word.length < 3 && known) return out;
    if (this.shared.length < this.words.length) this.shared = new Uint16Array(this.words.length * 2);
    const shared = this.shared;
    const touched: number[] = [];
    const trigrams = wordTrigrams(word);
    for (const t of trigrams) {
      const list = this.byTrigram.get(t);
      if (!list) continue;
      for (const id of list) {
        if (shared[id] === 0) touched.push(id);
        shared[id]!++;
      }
    }
    const variants: WordMatch[] = [];
    for (const id of touched) {
      const s = shared[id]!;
      shared[id] = 0;
      if (id === exact || this.documentFrequency(id) === 0) continue;
      let similarity = s / (trigrams.length + this.trigramCounts[id]! - s);
      // Unknown words are likely typos: also try edit distance (at most 2 edits) on words of about the same length.
      // Each edit breaks at most 4 trigrams, so a word sharing fewer cannot be that close.
      if (!known && similarity < 0.7 && s >= trigrams.length - 8) {
        const candidate = this.words[id]!;
        const longer = Math.max(candidate.length, word.length);
        if (Math.abs(candidate.length - word.length) <= 2 && 1 - 1 / longer > Math.max(similarity, minSimilarity)) similarity = Math.max(similarity, editSimilarity(word, candidate));
      }
      if (similarity >= minSimilarity) variants.push({ wordId: id, similarity });
    }
    variants.sort((a, b) => b.similarity - a.similarity || a.wordId - b.wordId);
    return out.concat(variants.slice(0, maxVariants));
  }

  /** The id of a word that occurs in some indexed card. */
  idOf(word: string): number | undefined {
    const id = this.ids.get(word);
    return id !== undefined && this.documentFrequency(id) > 0 ? id : undefined;
  }

  get size(): number {
    return this.words.length;
  }
}
