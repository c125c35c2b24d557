import { characterBigrams, isCjkBigram, isCjkCharacter, isCjkWord, isExtraIndexWord, isSymbolWord, KNOWN_WORD_VARIANTS, UNKNOWN_WORD_VARIANTS, variantSimilarity, wordTrigrams } from '../../domain/text';

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

/** Who reads: whose cards count in the statistics a query is matched and weighted with. */
export interface Reader {
  /** The caller's author number (as the index numbers authors), or -1 when anonymous or unknown to the index. */
  author: number;
}

/** The owner number of public cards: their words count for every reader. */
export const PUBLIC = -1;

/**
 * The vocabulary of the indexed texts: word -> cards holding it (postings), and trigram -> words, so a
 * misspelled query word is corrected to the vocabulary words most similar to it (pg_trgm similarity).
 *
 * Postings hold every card, but the statistics a query is matched and weighted with (whether a word is known, how
 * many cards hold it, which spellings exist) count only cards the reader may see: public ones and the reader's own
 * private ones. Otherwise a word of someone's private card would change what others get (its weight, whether a
 * typo of it is corrected), and a search could tell whether a private card holds a word.
 */
export class Lexicon {
  private readonly ids = new Map<string, number>();
  private readonly words: string[] = [];
  private readonly trigramCounts: number[] = [];
  private readonly postings: SlotList[] = [];
  private readonly byTrigram = new Map<string, number[]>();
  /** Han, Hiragana or Katakana character -> the vocabulary's bigrams holding it (a one-character query matches them). */
  private readonly bigramsByCharacter = new Map<string, number[]>();
  private shared = new Uint16Array(1024);
  /** Per word: how many public cards hold it. */
  private publicFrequency = new Int32Array(1024);
  /** Per author with private cards: word -> how many of the author's private cards hold it. */
  private readonly privateFrequency = new Map<number, Map<number, number>>();
  private publicCards = 0;
  private readonly privateCards = new Map<number, number>();

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
        if (id === this.publicFrequency.length) {
          const grown = new Int32Array(id * 2);
          grown.set(this.publicFrequency);
          this.publicFrequency = grown;
        }
        // An extra form of a Korean word (학교에서 of 학교, 집 of 집에), or a symbol (🌊), is matched only as itself: no
        // misspelling is corrected to it.
        const trigrams = isExtraIndexWord(token) || isSymbolWord(token) ? [] : wordTrigrams(token);
        this.trigramCounts.push(trigrams.length);
        for (const t of trigrams) {
          const list = this.byTrigram.get(t);
          if (list) list.push(id);
          else this.byTrigram.set(t, [id]);
        }
        if (isCjkBigram(token)) {
          for (const c of new Set(token)) {
            const list = this.bigramsByCharacter.get(c);
            if (list) list.push(id);
            else this.bigramsByCharacter.set(c, [id]);
          }
        }
      }
      ids[i] = id;
    });
    return ids;
  }

  /**
   * Lists the slot once under each distinct word of `wordIds` (as intern() returned them, repeats allowed), and counts
   * the card for its owner: PUBLIC, or the author of a private card.
   */
  addPostings(slot: number, wordIds: Int32Array, owner: number): void {
    const own = this.ownerFrequency(owner, true);
    for (const id of wordIds) {
      const list = this.postings[id]!;
      // A repeated word was pushed earlier in this call, and nothing else pushes in between: it is the last entry.
      if (list.length > 0 && list.items[list.length - 1] === slot) continue;
      list.push(slot);
      if (own) own.set(id, (own.get(id) ?? 0) + 1);
      else this.publicFrequency[id]!++;
    }
    if (owner === PUBLIC) this.publicCards++;
    else this.privateCards.set(owner, (this.privateCards.get(owner) ?? 0) + 1);
  }

  /** Undoes addPostings() of the slot with the same words and owner. */
  removePostings(slot: number, wordIds: Int32Array, owner: number): void {
    const own = this.ownerFrequency(owner, false);
    for (const id of new Set(wordIds)) {
      this.postings[id]!.remove(slot);
      if (owner === PUBLIC) this.publicFrequency[id]!--;
      else if (own) {
        const left = own.get(id)! - 1;
        if (left > 0) own.set(id, left);
        else own.delete(id);
      }
    }
    if (owner === PUBLIC) this.publicCards--;
    else {
      const left = this.privateCards.get(owner)! - 1;
      if (left > 0) this.privateCards.set(owner, left);
      else {
        this.privateCards.delete(owner);
        this.privateFrequency.delete(owner);
      }
    }
  }

  /** Cards holding a word, whoever may see them: a view valid until the next change. */
  postingsOf(wordId: number): Int32Array {
    const list = this.postings[wordId]!;
    return list.items.subarray(0, list.length);
  }

  /** How many cards the reader may see. */
  visibleCards(reader: Reader): number {
    return this.publicCards + (this.privateCards.get(reader.author) ?? 0);
  }

  /** How many cards the reader may see hold the word. */
  visibleFrequency(wordId: number, reader: Reader): number {
    return this.publicFrequency[wordId]! + (this.privateFrequency.get(reader.author)?.get(wordId) ?? 0);
  }

  /**
   * Vocabulary words matching a query word, among the words of cards the reader may see: the word itself when known,
   * plus its closest spellings (variantSimilarity). A known word takes only close variants (plural, inflection); an
   * unknown one takes looser ones (typos).
   */
  matches(word: string, reader: Reader): WordMatch[] {
    const publicFrequency = this.publicFrequency;
    const own = this.privateFrequency.get(reader.author);
    const exact = this.ids.get(word);
    const known = exact !== undefined && this.visibleFrequency(exact, reader) > 0;
    const out: WordMatch[] = known ? [{ wordId: exact, similarity: 1 }] : [];
    // One Chinese or Japanese character (书 "book") stands for the most frequent bigrams holding it, as found as itself.
    if (isCjkCharacter(word)) {
      const bigrams = (this.bigramsByCharacter.get(word) ?? []).map((id) => ({ id, word: this.words[id]!, frequency: this.visibleFrequency(id, reader) }));
      for (const b of characterBigrams(word, bigrams)) out.push({ wordId: b.id, similarity: 1 });
      return out;
    }
    // A Chinese or Japanese bigram has no variants (variantSimilarity): no trigram walk.
    if ((word.length < 3 && known) || isCjkWord(word)) return out;
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
      if (id === exact || (publicFrequency[id] === 0 && !own?.has(id))) continue;
      const similarity = variantSimilarity(word, this.words[id]!, s, trigrams.length, this.trigramCounts[id]!, known);
      if (similarity > 0) variants.push({ wordId: id, similarity });
    }
    // Ties go by spelling, not by word id: ids follow which card brought a word first, a card the reader may not see.
    const words = this.words;
    variants.sort((a, b) => b.similarity - a.similarity || (words[a.wordId]! < words[b.wordId]! ? -1 : 1));
    return out.concat(variants.slice(0, known ? KNOWN_WORD_VARIANTS : UNKNOWN_WORD_VARIANTS));
  }

  /** The id of a word that occurs in some card the reader may see. */
  idOf(word: string, reader: Reader): number | undefined {
    const id = this.ids.get(word);
    return id !== undefined && this.visibleFrequency(id, reader) > 0 ? id : undefined;
  }

  get size(): number {
    return this.words.length;
  }

  private ownerFrequency(owner: number, create: boolean): Map<number, number> | undefined {
    if (owner === PUBLIC) return undefined;
    let own = this.privateFrequency.get(owner);
    if (!own && create) this.privateFrequency.set(owner, (own = new Map()));
    return own;
  }
}
