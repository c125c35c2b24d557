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

describe('search config: ELASTICSEARCH_REFRESH_INTERVAL', () => {
  const interval = (value: string) => load({ ELASTICSEARCH_REFRESH_INTERVAL: value }).ELASTICSEARCH_REFRESH_INTERVAL;

  it('takes a whole number of ms, s or m from 1ms to 60s; empty or only spaces is 1s', () => {
    expect(load({}).ELASTICSEARCH_REFRESH_INTERVAL).toBe('1s');
    expect(interval('')).toBe('1s');
    expect(interval('  ')).toBe('1s');
    for (const value of ['1ms', '200ms', '1s', '30s', '60s', '1m', '60000ms']) expect(interval(value)).toBe(value);
    expect(interval(' 5s ')).toBe('5s');
  });

  it('stops the start naming the variable and the range for a longer interval (cards out of search for as long) or another value', () => {
    for (const bad of ['61s', '2m', '1h', '3600s', '99999999999s', '0s', '-1', '1.5s', '1', 'fast']) {
      expect(() => interval(bad)).toThrow(ConfigError);
      expect(() => interval(bad)).toThrow(/ELASTICSEARCH_REFRESH_INTERVAL: must be a whole number of ms, s or m from 1ms to 60s/);
    }
  });
});
