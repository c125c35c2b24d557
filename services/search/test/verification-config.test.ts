import { ConfigError, loadConfig } from '@cards/platform';
import { MAX_VERIFY_ATTEMPTS, verificationConfigSchema } from '../src/verification/config';

const load = (env: Record<string, string>) => loadConfig(verificationConfigSchema, env);

describe('verification config at its edges', () => {
  it("stops the start when a duration that reaches a timer is longer than Node's timers hold (every fetch or score would time out after 1 ms), naming the longest", () => {
    for (const name of ['VERIFY_TIMEOUT_MS', 'VERIFY_SCORE_TIMEOUT_MS', 'VERIFY_RETRY_BASE_MS']) {
      expect(() => load({ [name]: '3000000000' })).toThrow(ConfigError);
      expect(() => load({ [name]: '3000000000' })).toThrow(new RegExp(`${name}: must be at most 2147483647`));
      expect((load({ [name]: '2147483647' }) as Record<string, unknown>)[name]).toBe(2_147_483_647);
    }
  });

  it('stops the start at a fetch or score timeout of 0 (every page would fail at once); retries may start at once', () => {
    expect(() => load({ VERIFY_TIMEOUT_MS: '0' })).toThrow(/VERIFY_TIMEOUT_MS: must be at least 100/);
    expect(() => load({ VERIFY_SCORE_TIMEOUT_MS: '0' })).toThrow(/VERIFY_SCORE_TIMEOUT_MS: must be at least 100/);
    expect(load({ VERIFY_RETRY_BASE_MS: '0' }).VERIFY_RETRY_BASE_MS).toBe(0);
    expect(load({})).toMatchObject({ VERIFY_TIMEOUT_MS: 10_000, VERIFY_SCORE_TIMEOUT_MS: 60_000, VERIFY_RETRY_BASE_MS: 1000, VERIFY_MAX_ATTEMPTS: 3 });
  });

  it('takes at most MAX_VERIFY_ATTEMPTS attempts, so the last doubled retry wait still falls on a date', () => {
    expect(MAX_VERIFY_ATTEMPTS).toBe(20);
    const longest = load({ VERIFY_RETRY_BASE_MS: '2147483647', VERIFY_MAX_ATTEMPTS: String(MAX_VERIFY_ATTEMPTS) });
    // The longest wait: before the last attempt (attempts - 1 = MAX_VERIFY_ATTEMPTS - 2 doublings).
    expect(Number.isNaN(new Date(Date.now() + longest.VERIFY_RETRY_BASE_MS * 2 ** (longest.VERIFY_MAX_ATTEMPTS - 2)).getTime())).toBe(false);
    expect(() => load({ VERIFY_MAX_ATTEMPTS: '100' })).toThrow(/VERIFY_MAX_ATTEMPTS: must be at most 20/);
  });

  it('stops the start at VERIFY_MAX_ATTEMPTS 0 (it acted as 1), naming it', () => {
    expect(() => load({ VERIFY_MAX_ATTEMPTS: '0' })).toThrow(/VERIFY_MAX_ATTEMPTS: must be at least 1/);
    expect(load({ VERIFY_MAX_ATTEMPTS: '1' }).VERIFY_MAX_ATTEMPTS).toBe(1);
  });

  it('takes VERIFY_CONCURRENCY from 1 to 64; 0 (it acted as 1) or 100000 (every queued page fetched at once) stops the start naming the range', () => {
    expect(load({}).VERIFY_CONCURRENCY).toBe(4);
    expect(load({ VERIFY_CONCURRENCY: '64' }).VERIFY_CONCURRENCY).toBe(64);
    expect(() => load({ VERIFY_CONCURRENCY: '0' })).toThrow(/VERIFY_CONCURRENCY: must be at least 1/);
    expect(() => load({ VERIFY_CONCURRENCY: '100000' })).toThrow(/VERIFY_CONCURRENCY: must be at most 64/);
  });

  it('takes VERIFY_MAX_PER_AUTHOR from 0 (half of VERIFY_CONCURRENCY) to 1024; more (no bound at all, read as one) stops the start naming the range', () => {
    expect(load({}).VERIFY_MAX_PER_AUTHOR).toBe(0);
    expect(load({ VERIFY_MAX_PER_AUTHOR: '1024' }).VERIFY_MAX_PER_AUTHOR).toBe(1024);
    for (const tooMany of ['1025', '100000000']) expect(() => load({ VERIFY_MAX_PER_AUTHOR: tooMany })).toThrow(/VERIFY_MAX_PER_AUTHOR: must be from 0 \(half of VERIFY_CONCURRENCY\) to 1024 \(/);
  });
});
