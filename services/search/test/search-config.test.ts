import { ConfigError, loadConfig } from '@cards/platform';
import { searchConfigSchema } from '../src/config';

const load = (env: Record<string, string>) => loadConfig(searchConfigSchema, env);

describe('search config at its edges', () => {
  it('reads a duplicate threshold of only spaces as the default, not as 0 (which made nearly every card a near-duplicate)', () => {
    expect(load({ EMBEDDINGS_DUPLICATE_THRESHOLD: ' ', EMBEDDINGS_SHORT_DUPLICATE_THRESHOLD: '  ' })).toMatchObject({ EMBEDDINGS_DUPLICATE_THRESHOLD: 0.95, EMBEDDINGS_SHORT_DUPLICATE_THRESHOLD: 0.92 });
    expect(load({ EMBEDDINGS_DUPLICATE_THRESHOLD: '0.9' }).EMBEDDINGS_DUPLICATE_THRESHOLD).toBe(0.9);
    expect(() => load({ EMBEDDINGS_DUPLICATE_THRESHOLD: '1.5' })).toThrow(/EMBEDDINGS_DUPLICATE_THRESHOLD: expected a number between -1 and 1/);
  });

  it('stops the start at EMBEDDINGS_DIMENSIONS 0 (every vector answered would be refused as the wrong length) or VERIFY_MAX_BYTES 0 (every page refused), naming them', () => {
    expect(() => load({ EMBEDDINGS_DIMENSIONS: '0' })).toThrow(ConfigError);
    expect(() => load({ EMBEDDINGS_DIMENSIONS: '0' })).toThrow(/EMBEDDINGS_DIMENSIONS: must be at least 1/);
    expect(() => load({ VERIFY_MAX_BYTES: '0' })).toThrow(/VERIFY_MAX_BYTES: must be at least 1/);
    expect(load({})).toMatchObject({ EMBEDDINGS_DIMENSIONS: 1536, VERIFY_MAX_BYTES: 5 * 1024 * 1024 });
  });
});
