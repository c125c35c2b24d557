import { ConfigError, loadConfig } from '@cards/platform';
import { cardsConfigSchema } from '../src/config';

describe('cards config', () => {
  it('keeps the keys of deleted cards and collections IDEMPOTENCY_KEY_TTL_HOURS (24 by default), whole hours from 1 to 87600', () => {
    expect(loadConfig(cardsConfigSchema, {}).IDEMPOTENCY_KEY_TTL_HOURS).toBe(24);
    expect(loadConfig(cardsConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: '1' }).IDEMPOTENCY_KEY_TTL_HOURS).toBe(1);
    expect(() => loadConfig(cardsConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: '0' })).toThrow(/IDEMPOTENCY_KEY_TTL_HOURS: must be at least 1/);
    expect(() => loadConfig(cardsConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: 'a day' })).toThrow(/IDEMPOTENCY_KEY_TTL_HOURS: expected a non-negative integer/);
    expect(() => loadConfig(cardsConfigSchema, { IDEMPOTENCY_KEY_TTL_HOURS: '87601' })).toThrow(/IDEMPOTENCY_KEY_TTL_HOURS: must be at most 87600/);
  });

  it('gives each user CARD_HTML_PER_USER large cards being cleaned or waiting at once (2 by default), at least 1', () => {
    expect(loadConfig(cardsConfigSchema, {}).CARD_HTML_PER_USER).toBe(2);
    expect(loadConfig(cardsConfigSchema, { CARD_HTML_PER_USER: '1' }).CARD_HTML_PER_USER).toBe(1);
    expect(() => loadConfig(cardsConfigSchema, { CARD_HTML_PER_USER: '0' })).toThrow(/CARD_HTML_PER_USER: must be at least 1/);
    expect(() => loadConfig(cardsConfigSchema, { CARD_HTML_PER_USER: 'two' })).toThrow(/CARD_HTML_PER_USER/);
  });
});

describe('cards config: durations that reach a timer', () => {
  it("stop the start above 2147483647 ms (Node's timers fire a longer delay after 1 ms: every call or wait ended at once), naming the variable and the longest", () => {
    for (const name of ['GRPC_DEADLINE_MS', 'NEAR_DUPLICATE_DEADLINE_MS', 'CARD_HTML_QUEUE_WAIT_MS']) {
      expect(() => loadConfig(cardsConfigSchema, { [name]: '3000000000' })).toThrow(ConfigError);
      expect(() => loadConfig(cardsConfigSchema, { [name]: '3000000000' })).toThrow(new RegExp(`${name}: must be at most 2147483647`));
      expect((loadConfig(cardsConfigSchema, { [name]: '2147483647' }) as Record<string, unknown>)[name]).toBe(2_147_483_647);
    }
  });

  it('the deadlines stop the start at 0 (every call to a peer would fail at once); the queue wait may be 0 (no waiting)', () => {
    expect(() => loadConfig(cardsConfigSchema, { GRPC_DEADLINE_MS: '0' })).toThrow(/GRPC_DEADLINE_MS: must be at least 100/);
    expect(() => loadConfig(cardsConfigSchema, { NEAR_DUPLICATE_DEADLINE_MS: '0' })).toThrow(/NEAR_DUPLICATE_DEADLINE_MS: must be at least 100/);
    expect(loadConfig(cardsConfigSchema, { CARD_HTML_QUEUE_WAIT_MS: '0' }).CARD_HTML_QUEUE_WAIT_MS).toBe(0);
    expect(loadConfig(cardsConfigSchema, {})).toMatchObject({ GRPC_DEADLINE_MS: 10_000, NEAR_DUPLICATE_DEADLINE_MS: 3000, CARD_HTML_QUEUE_WAIT_MS: 5000 });
  });
});

describe('cards config: CARDS_GRPC_PORT', () => {
  it('stops the start above 65535, naming the variable', () => {
    expect(() => loadConfig(cardsConfigSchema, { CARDS_GRPC_PORT: '70000' })).toThrow(/CARDS_GRPC_PORT: must be a port from 0 to 65535/);
  });
});

describe('cards config: CARD_HTML_WORKERS', () => {
  it('takes 1 to 32 worker threads; 100000 (a thread for each large card arriving at once) stops the start naming the range', () => {
    expect(loadConfig(cardsConfigSchema, { CARD_HTML_WORKERS: '32' }).CARD_HTML_WORKERS).toBe(32);
    expect(() => loadConfig(cardsConfigSchema, { CARD_HTML_WORKERS: '33' })).toThrow(/CARD_HTML_WORKERS: must be at most 32 \(worker threads/);
    expect(() => loadConfig(cardsConfigSchema, { CARD_HTML_WORKERS: '100000' })).toThrow(ConfigError);
  });
});
