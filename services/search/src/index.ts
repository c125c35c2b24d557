export { startSearch } from './main';
// For benchmarks that measure the index alone beside the running system.
export { SqliteCardIndex } from './adapters/sqlite/sqlite-card-index';
export { WinkGloveEmbedder } from './adapters/wink/wink-glove-embedder';
export { loadWordVectors } from './adapters/wink/word-vector-cache';
