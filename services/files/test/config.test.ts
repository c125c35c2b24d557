import { ConfigError, loadConfig } from '@cards/platform';
import { filesConfigSchema } from '../src/config';

describe('files config', () => {
  it('defaults to loopback without a token', () => {
    const config = loadConfig(filesConfigSchema, {});
    expect(config).toMatchObject({ FILES_HTTP_HOST: '127.0.0.1', MAX_FILE_BYTES: 20 * 1024 * 1024 });
    expect(config.FILES_INTERNAL_TOKEN).toBeUndefined();
    expect(config.S3_ENDPOINT).toBeUndefined();
  });

  it('refuses to open the download endpoint beyond loopback without a token, naming the variable', () => {
    expect(() => loadConfig(filesConfigSchema, { FILES_HTTP_HOST: '0.0.0.0' })).toThrow(/FILES_INTERNAL_TOKEN: is required/);
    expect(() => loadConfig(filesConfigSchema, { FILES_HTTP_HOST: '0.0.0.0', FILES_INTERNAL_TOKEN: 'short' })).toThrow(/FILES_INTERNAL_TOKEN: must be at least 16/);
    expect(loadConfig(filesConfigSchema, { FILES_HTTP_HOST: '0.0.0.0', FILES_INTERNAL_TOKEN: 'a-long-enough-shared-secret' }).FILES_INTERNAL_TOKEN).toBe('a-long-enough-shared-secret');
  });

  it('names every bad variable at once', () => {
    try {
      loadConfig(filesConfigSchema, { MAX_FILE_BYTES: 'big', S3_ENDPOINT: 'not a url', CARDS_SERVICE_ADDR: 'nohost' });
      throw new Error('expected a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const text = (err as ConfigError).problems.join('\n');
      expect(text).toMatch(/MAX_FILE_BYTES/);
      expect(text).toMatch(/S3_ENDPOINT/);
      expect(text).toMatch(/CARDS_SERVICE_ADDR/);
    }
  });

  it('S3_ENDPOINT needs credentials', () => {
    expect(() => loadConfig(filesConfigSchema, { S3_ENDPOINT: 'http://minio:9000' })).toThrow(/S3_ACCESS_KEY/);
  });
});
