import { loadConfig } from '@cards/platform';
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
