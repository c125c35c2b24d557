import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WinkGloveEmbedder } from '../src/adapters/wink/wink-glove-embedder';

let shared: WinkGloveEmbedder | undefined;

/** One bundled-model embedder per test worker, using the same cache directory as the service's default. */
export function sharedWinkEmbedder(): WinkGloveEmbedder {
  shared ??= new WinkGloveEmbedder({ cacheDir: process.env.WORD_VECTORS_CACHE_DIR ?? join(tmpdir(), 'card-library-word-vectors') });
  return shared;
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}
