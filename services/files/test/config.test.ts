import { ConfigError, loadConfig } from '@cards/platform';
import { acceptedInternalTokens, filesConfigSchema } from '../src/config';

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

  it('accepts further tokens beside FILES_INTERNAL_TOKEN while it is rotated, each at least 16 characters', () => {
    const base = { FILES_HTTP_HOST: '0.0.0.0', FILES_INTERNAL_TOKEN: 'the-new-shared-secret-0123456789' };
    const rotating = loadConfig(filesConfigSchema, { ...base, FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: 'the-old-shared-secret-0123456789' });
    expect(acceptedInternalTokens(rotating)).toEqual(['the-new-shared-secret-0123456789', 'the-old-shared-secret-0123456789']);
    const list = loadConfig(filesConfigSchema, { ...base, FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: ' the-old-shared-secret-0123456789 , an-older-shared-secret-012345 ,' });
    expect(acceptedInternalTokens(list)).toEqual(['the-new-shared-secret-0123456789', 'the-old-shared-secret-0123456789', 'an-older-shared-secret-012345']);
    expect(acceptedInternalTokens(loadConfig(filesConfigSchema, { ...base, FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: '' }))).toEqual(['the-new-shared-secret-0123456789']);
    expect(acceptedInternalTokens(loadConfig(filesConfigSchema, {}))).toEqual([]);
  });

  it('refuses a too-short further token, and further tokens without FILES_INTERNAL_TOKEN, naming the variable', () => {
    const base = { FILES_HTTP_HOST: '0.0.0.0', FILES_INTERNAL_TOKEN: 'the-new-shared-secret-0123456789' };
    expect(() => loadConfig(filesConfigSchema, { ...base, FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: 'short' })).toThrow(/FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: token 1 of the list is shorter than 16 characters/);
    expect(() => loadConfig(filesConfigSchema, { ...base, FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: 'the-old-shared-secret-0123456789,short' })).toThrow(
      /FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: token 2 of the list is shorter than 16 characters/,
    );
    expect(() => loadConfig(filesConfigSchema, { FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: 'the-old-shared-secret-0123456789' })).toThrow(/FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: is only read with FILES_INTERNAL_TOKEN/);
  });

  it('waits FILES_UNRELEASED_RETRY_HOURS (24 by default) for a cards release, a positive number of hours up to a year', () => {
    expect(loadConfig(filesConfigSchema, {}).FILES_UNRELEASED_RETRY_HOURS).toBe(24);
    expect(loadConfig(filesConfigSchema, { FILES_UNRELEASED_RETRY_HOURS: '0.5' }).FILES_UNRELEASED_RETRY_HOURS).toBe(0.5);
    for (const bad of ['0', '-1', 'soon', '8761']) {
      expect(() => loadConfig(filesConfigSchema, { FILES_UNRELEASED_RETRY_HOURS: bad })).toThrow(/FILES_UNRELEASED_RETRY_HOURS: expected a positive number of hours, at most 8760/);
    }
  });

  it('keeps the keys of deleted files IDEMPOTENCY_KEY_TTL_HOURS (24 by default), whole hours from 1 to 87600', () => {
    expect(loadConfig(filesConfigSchema, {}).IDEMPOTENCY_KEY_TTL_HOURS).toBe(24);
    expect(loadConfig(filesConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: '168' }).IDEMPOTENCY_KEY_TTL_HOURS).toBe(168);
    expect(() => loadConfig(filesConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: '0' })).toThrow(/IDEMPOTENCY_KEY_TTL_HOURS: must be at least 1/);
    expect(() => loadConfig(filesConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: '1.5' })).toThrow(/IDEMPOTENCY_KEY_TTL_HOURS: expected a non-negative integer/);
    expect(() => loadConfig(filesConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: '87601' })).toThrow(/IDEMPOTENCY_KEY_TTL_HOURS: must be at most 87600/);
  });

  it('takes INGESTION_CLAIM_MS from a second to an hour (a claim past the timers\' range would break every claim)', () => {
    expect(loadConfig(filesConfigSchema, {}).INGESTION_CLAIM_MS).toBe(30_000);
    expect(loadConfig(filesConfigSchema, { INGESTION_CLAIM_MS: '3600000' }).INGESTION_CLAIM_MS).toBe(3_600_000);
    expect(() => loadConfig(filesConfigSchema, { INGESTION_CLAIM_MS: '999' })).toThrow(/INGESTION_CLAIM_MS: must be at least 1000/);
    expect(() => loadConfig(filesConfigSchema, { INGESTION_CLAIM_MS: '3600001' })).toThrow(/INGESTION_CLAIM_MS: must be at most 3600000/);
    // Past Number.MAX_SAFE_INTEGER the number read is no longer the one written: refused as such, still named.
    expect(() => loadConfig(filesConfigSchema, { INGESTION_CLAIM_MS: '99999999999999999' })).toThrow(/INGESTION_CLAIM_MS: expected a non-negative integer \(at most 9007199254740991\)/);
  });

  it('gives each user PARSER_CHECKS_PER_USER upload checks at once (4 by default), at least 1', () => {
    expect(loadConfig(filesConfigSchema, {}).PARSER_CHECKS_PER_USER).toBe(4);
    expect(loadConfig(filesConfigSchema, { PARSER_CHECKS_PER_USER: '5' }).PARSER_CHECKS_PER_USER).toBe(5);
    expect(() => loadConfig(filesConfigSchema, { PARSER_CHECKS_PER_USER: '0' })).toThrow(/PARSER_CHECKS_PER_USER: must be at least 1/);
    expect(() => loadConfig(filesConfigSchema, { PARSER_CHECKS_PER_USER: 'two' })).toThrow(/PARSER_CHECKS_PER_USER/);
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

describe('files config: PARSER_QUEUE_WAIT_MS', () => {
  it("stops the start above 2147483647 ms (Node's timers fire a longer wait after 1 ms: every upload waiting for a parser answered 503 at once), naming the longest", () => {
    expect(() => loadConfig(filesConfigSchema, { PARSER_QUEUE_WAIT_MS: '3000000000' })).toThrow(ConfigError);
    expect(() => loadConfig(filesConfigSchema, { PARSER_QUEUE_WAIT_MS: '3000000000' })).toThrow(/PARSER_QUEUE_WAIT_MS: must be at most 2147483647/);
    expect(loadConfig(filesConfigSchema, { PARSER_QUEUE_WAIT_MS: '2147483647' }).PARSER_QUEUE_WAIT_MS).toBe(2_147_483_647);
    expect(loadConfig(filesConfigSchema, {}).PARSER_QUEUE_WAIT_MS).toBe(4000);
  });
});


describe('files config: MAX_FILE_BYTES', () => {
  it('stops the start at 0 (a limit of 0 bytes refused every upload; it is no "no limit"), naming it', () => {
    expect(() => loadConfig(filesConfigSchema, { MAX_FILE_BYTES: '0' })).toThrow(/MAX_FILE_BYTES: must be at least 1/);
    expect(loadConfig(filesConfigSchema, { MAX_FILE_BYTES: '1' }).MAX_FILE_BYTES).toBe(1);
  });
});

describe('files config: attempts and work at once', () => {
  it('stops the start at INGESTION_MAX_ATTEMPTS 0 (it acted as 1), naming it', () => {
    expect(() => loadConfig(filesConfigSchema, { INGESTION_MAX_ATTEMPTS: '0' })).toThrow(/INGESTION_MAX_ATTEMPTS: must be at least 1/);
    expect(loadConfig(filesConfigSchema, { INGESTION_MAX_ATTEMPTS: '1' }).INGESTION_MAX_ATTEMPTS).toBe(1);
    expect(loadConfig(filesConfigSchema, {}).INGESTION_MAX_ATTEMPTS).toBe(8);
  });

  it('stops the start above 50 INGESTION_MAX_ATTEMPTS (a failing file event retried ~5 s apart held its consumer for ever at 1000000), naming the range', () => {
    expect(loadConfig(filesConfigSchema, { INGESTION_MAX_ATTEMPTS: '50' }).INGESTION_MAX_ATTEMPTS).toBe(50);
    for (const tooMany of ['51', '1000000']) expect(() => loadConfig(filesConfigSchema, { INGESTION_MAX_ATTEMPTS: tooMany })).toThrow(/INGESTION_MAX_ATTEMPTS: must be from 1 to 50 \(/);
  });

  it('takes INGESTION_CONCURRENCY from 1 to 64 and PARSER_WORKERS from 1 to 32 threads; 0 or 100000 stops the start naming the range', () => {
    expect(loadConfig(filesConfigSchema, {})).toMatchObject({ INGESTION_CONCURRENCY: 4, PARSER_WORKERS: 2 });
    expect(loadConfig(filesConfigSchema, { INGESTION_CONCURRENCY: '64', PARSER_WORKERS: '32' })).toMatchObject({ INGESTION_CONCURRENCY: 64, PARSER_WORKERS: 32 });
    expect(() => loadConfig(filesConfigSchema, { INGESTION_CONCURRENCY: '0' })).toThrow(/INGESTION_CONCURRENCY: must be at least 1/);
    expect(() => loadConfig(filesConfigSchema, { INGESTION_CONCURRENCY: '100000' })).toThrow(/INGESTION_CONCURRENCY: must be at most 64/);
    expect(() => loadConfig(filesConfigSchema, { PARSER_WORKERS: '100000' })).toThrow(/PARSER_WORKERS: must be at most 32 \(worker threads/);
  });
});
