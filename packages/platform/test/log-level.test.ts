import { ConfigError, createLogger, logLevelOf } from '../src';

describe('LOG_LEVEL', () => {
  it('is info when unset, empty or only spaces (pino refused "" with "default level: must be included in custom levels")', () => {
    for (const value of [undefined, '', '  ']) expect(logLevelOf({ LOG_LEVEL: value })).toBe('info');
  });

  it('takes a pino level in any case and with spaces around', () => {
    expect(logLevelOf({ LOG_LEVEL: 'WARN' })).toBe('warn');
    expect(logLevelOf({ LOG_LEVEL: ' debug ' })).toBe('debug');
    expect(logLevelOf({ LOG_LEVEL: 'silent' })).toBe('silent');
    expect(createLogger('t', logLevelOf({ LOG_LEVEL: ' error' })).level).toBe('error');
  });

  it('stops the start at another value, naming the variable and the levels', () => {
    expect(() => logLevelOf({ LOG_LEVEL: 'verbose' })).toThrow(ConfigError);
    expect(() => logLevelOf({ LOG_LEVEL: 'verbose' })).toThrow(/LOG_LEVEL: expected one of fatal, error, warn, info, debug, trace, silent, got "verbose"/);
  });
});
