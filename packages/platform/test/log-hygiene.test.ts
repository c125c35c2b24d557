import { Writable } from 'node:stream';
import { createLogger, redactUrl, repeatedWarningLog, requestIdFrom, REPEATED_WARNING_EVERY_MS } from '../src';

describe('redactUrl', () => {
  it('masks the password and every query value, and keeps the rest', () => {
    expect(redactUrl('http://u:KEY@embed.example:8080/v1?api_key=SECRET&model=m')).toBe('http://u:***@embed.example:8080/v1?api_key=***&model=***');
    expect(redactUrl('https://s3.example')).toBe('https://s3.example/');
  });

  it('answers text that is no URL without repeating it', () => {
    expect(redactUrl('not a url: SECRET')).toBe('(not a URL)');
  });
});

describe('repeatedWarningLog', () => {
  it('writes the first warning, then one a minute at most with the count since the last, debug lines in between', () => {
    const lines: { level: number; msg: string; n: number; sinceLastWarning?: number; stack?: unknown }[] = [];
    const logger = createLogger('test', 'debug', new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(JSON.parse(chunk.toString())), done()) }));
    let now = 0;
    const warn = repeatedWarningLog(logger, 'a peer is unavailable', { now: () => now });
    for (let n = 0; n < 25; n++, now += REPEATED_WARNING_EVERY_MS / 10) warn({ n });
    expect(lines.filter((line) => line.level === 40).map(({ n, sinceLastWarning }) => ({ n, sinceLastWarning }))).toEqual([
      { n: 0, sinceLastWarning: 0 },
      { n: 10, sinceLastWarning: 9 },
      { n: 20, sinceLastWarning: 9 },
    ]);
    expect(lines.filter((line) => line.level === 20)).toHaveLength(22);
    expect(lines.every((line) => line.msg === 'a peer is unavailable')).toBe(true);
  });
});

describe('requestIdFrom', () => {
  it('keeps a plain id of 8 to 128 characters', () => {
    for (const id of ['abcd-123', 'a'.repeat(128), 'trace_1.2-3']) expect(requestIdFrom(id)).toBe(id);
  });

  it('replaces a short, long or unsafe id with a new UUID', () => {
    for (const id of ['1', 'abc', 'a'.repeat(129), 'forged id\n{"level":60}', 'bob@example.com', undefined]) {
      expect(requestIdFrom(id)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    }
  });
});
