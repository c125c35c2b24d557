import { z } from 'zod';
import { ConfigError, envAddress, envBoolean, envInt, loadConfig } from '../src/config';

const schema = z.object({
  PORT: envInt(8090),
  PEER: envAddress('127.0.0.1:1'),
  FLAG: envBoolean(false),
  NAME: z.string().min(3),
});

describe('loadConfig', () => {
  it('applies defaults and parses values', () => {
    expect(loadConfig(schema, { NAME: 'abc', FLAG: 'yes' })).toEqual({ PORT: 8090, PEER: '127.0.0.1:1', FLAG: true, NAME: 'abc' });
  });
  it('fails fast naming every bad variable at once', () => {
    let error: unknown;
    try {
      loadConfig(schema, { PORT: 'eighty', PEER: 'nohost', FLAG: 'maybe' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    for (const name of ['PORT', 'PEER', 'FLAG', 'NAME']) expect(message).toContain(name);
  });
});
