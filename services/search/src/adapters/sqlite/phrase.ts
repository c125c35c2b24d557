/** 32-bit words per card filter: 512 bits. */
const FILTER_WORDS = 16;

/** A phrase prepared for WordSequences.holds(): its word ids, and the filter bits a card holding it has set. */
export interface Phrase {
  readonly words: Int32Array;
  /** (filter word, mask) pairs. */
  readonly bits: Int32Array;
}

/**
 * Each card's word ids in text order, to tell whether it holds a phrase (the words in a row), plus a 512-bit
 * Bloom filter of the card's word pairs, two bits per pair. Cards of ~85 words set ~30% of the bits, so a pair
 * the card lacks passes ~8% of the time: a phrase of common words that most cards hold but few hold in a row is
 * ruled out for most of them by a few bit tests instead of a walk through their words.
 */
export class WordSequences {
  private readonly sequences: (Int32Array | undefined)[] = [];
  private filters = new Uint32Array(1024 * FILTER_WORDS);

  set(slot: number, words: Int32Array): void {
    this.sequences[slot] = words;
    if ((slot + 1) * FILTER_WORDS > this.filters.length) {
      let length = this.filters.length;
      while (length < (slot + 1) * FILTER_WORDS) length *= 2;
      const grown = new Uint32Array(length);
      grown.set(this.filters);
      this.filters = grown;
    }
    const base = slot * FILTER_WORDS;
    const filters = this.filters;
    filters.fill(0, base, base + FILTER_WORDS);
    pairBits(words, (word, mask) => {
      filters[base + word]! |= mask;
    });
  }

  get(slot: number): Int32Array | undefined {
    return this.sequences[slot];
  }

  delete(slot: number): void {
    this.sequences[slot] = undefined;
  }

  phrase(words: Int32Array): Phrase {
    const masks = new Map<number, number>();
    pairBits(words, (word, mask) => masks.set(word, (masks.get(word) ?? 0) | mask));
    return { words, bits: Int32Array.from([...masks].flat()) };
  }

  /** Whether the card in `slot` holds the phrase's words in a row. */
  holds(slot: number, phrase: Phrase): boolean {
    const base = slot * FILTER_WORDS;
    const bits = phrase.bits;
    for (let i = 0; i < bits.length; i += 2) {
      const mask = bits[i + 1]!;
      if ((this.filters[base + bits[i]!]! & mask) !== mask) return false;
    }
    return holdsPhrase(this.sequences[slot]!, phrase.words);
  }
}

/** Whether `phrase` (word ids) occurs as consecutive words of `text` (word ids in text order). */
export function holdsPhrase(text: Int32Array, phrase: Int32Array): boolean {
  const first = phrase[0];
  const last = text.length - phrase.length;
  next: for (let i = 0; i <= last; i++) {
    if (text[i] !== first) continue;
    for (let j = 1; j < phrase.length; j++) if (text[i + j] !== phrase[j]) continue next;
    return true;
  }
  return false;
}

/** The filter bits of a word sequence: for each pair of consecutive words, two (filter word, bit mask) marks. */
function pairBits(words: Int32Array, mark: (word: number, mask: number) => void): void {
  for (let i = 1; i < words.length; i++) {
    const hash = pairHash(words[i - 1]!, words[i]!);
    mark((hash >>> 5) & 15, 1 << (hash & 31));
    mark((hash >>> 14) & 15, 1 << ((hash >>> 9) & 31));
  }
}

/** A well-mixed 32-bit hash of an ordered pair of word ids. */
function pairHash(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ b;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return h ^ (h >>> 16);
}
