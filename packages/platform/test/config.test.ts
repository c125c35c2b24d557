import { z } from 'zod';
import { ConfigError, envAddress, envBoolean, envInt, envMs, envPort, envUrl, loadConfig, MAX_TIMER_MS, refuseEmbeddedStores } from '../src/config';
import { createLogger } from '../src/logger';
import { connectMongo, mongoDatabasePrefix } from '../src/mongo';

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

describe('envAddress', () => {
  const peer = (value: string) => loadConfig(z.object({ PEER: envAddress() }), { PEER: value }).PEER;
  it('takes host:port and a dns:/// target (a headless Service: every pod behind one name)', () => {
    expect(peer('cards:50052')).toBe('cards:50052');
    expect(peer('dns:///cards-grpc.cards.svc.cluster.local:50052')).toBe('dns:///cards-grpc.cards.svc.cluster.local:50052');
  });
  it('refuses an address without a port, with another scheme, or with a DNS server in it', () => {
    for (const value of ['cards', 'dns:///cards', 'http://cards:50052', 'dns://8.8.8.8/cards:50052', 'dns:///:50052']) expect(() => peer(value)).toThrow(/PEER/);
  });
});

describe('refuseEmbeddedStores', () => {
  it('names every engine variable unset or empty when EMBEDDED_STORES=refuse', () => {
    const refused = () => refuseEmbeddedStores({ EMBEDDED_STORES: 'refuse', MONGO_URL: '', KAFKA_BROKERS: 'k:9092' }, ['MONGO_URL', 'KAFKA_BROKERS', 'S3_ENDPOINT']);
    expect(refused).toThrow(ConfigError);
    expect(refused).toThrow(/MONGO_URL: required with EMBEDDED_STORES=refuse[\s\S]*S3_ENDPOINT: required/);
    expect(refused).not.toThrow(/KAFKA_BROKERS/);
    expect(() => refuseEmbeddedStores({ EMBEDDED_STORES: 'refuse', MONGO_URL: '  ' }, ['MONGO_URL'])).toThrow(/MONGO_URL/);
  });
  it('lets the embedded stores be used when unset or allow, and refuses another value', () => {
    expect(() => refuseEmbeddedStores({}, ['MONGO_URL'])).not.toThrow();
    expect(() => refuseEmbeddedStores({ EMBEDDED_STORES: 'allow' }, ['MONGO_URL'])).not.toThrow();
    expect(() => refuseEmbeddedStores({ EMBEDDED_STORES: 'refuse', MONGO_URL: 'mongodb://m' }, ['MONGO_URL'])).not.toThrow();
    expect(() => refuseEmbeddedStores({ EMBEDDED_STORES: 'yes' }, ['MONGO_URL'])).toThrow(/EMBEDDED_STORES/);
  });
});

describe('envInt at its edges', () => {
  const read = (value: string | undefined) => loadConfig(z.object({ N: envInt(7) }), { N: value }).N;

  it('reads empty or only spaces as unset (the default), not as 0', () => {
    expect(read(undefined)).toBe(7);
    expect(read('')).toBe(7);
    expect(read('   ')).toBe(7);
    expect(read('\t')).toBe(7);
  });

  it('takes an integer written with spaces around it or as 1e3, and refuses fractions, negatives and numbers past MAX_SAFE_INTEGER, naming the variable', () => {
    expect(read('10 ')).toBe(10);
    expect(read('1e3')).toBe(1000);
    expect(read(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    for (const bad of ['1.5', '-1', '9007199254740993', '1e300', 'Infinity', 'ten']) {
      expect(() => read(bad)).toThrow(/N: expected a non-negative integer \(at most 9007199254740991\)/);
    }
  });
});

describe('envMs', () => {
  const read = (value: string | undefined, range?: { min?: number; max?: number }) => loadConfig(z.object({ WAIT_MS: envMs(2000, range) }), { WAIT_MS: value }).WAIT_MS;

  it("refuses a duration longer than Node's timers hold (they would fire it after 1 ms), naming the variable and the longest", () => {
    expect(MAX_TIMER_MS).toBe(2_147_483_647);
    expect(read(String(MAX_TIMER_MS))).toBe(MAX_TIMER_MS);
    expect(() => read(String(2 ** 31))).toThrow(ConfigError);
    expect(() => read(String(2 ** 31))).toThrow(/WAIT_MS: must be at most 2147483647 \(ms, about 24.8 days/);
    expect(() => read('2592000000')).toThrow(/WAIT_MS: must be at most 2147483647/);
  });

  it('takes its own range, the default when unset', () => {
    expect(read(undefined)).toBe(2000);
    expect(read('0')).toBe(0);
    expect(() => read('0', { min: 100 })).toThrow(/WAIT_MS: must be at least 100 \(ms\)/);
    expect(() => read('70000', { max: 60_000 })).toThrow(/WAIT_MS: must be at most 60000 \(ms\)/);
    expect(() => read(String(2 ** 31), { max: 2 ** 40 })).toThrow(/must be at most 2147483647/);
  });
});

describe('envPort', () => {
  const read = (value: string | undefined) => loadConfig(z.object({ SOME_PORT: envPort(8090) }), { SOME_PORT: value }).SOME_PORT;

  it('takes 0 to 65535, the default when unset, and stops the start above, naming the variable (the listener refused it later, naming none)', () => {
    expect(read(undefined)).toBe(8090);
    expect(read('0')).toBe(0);
    expect(read('65535')).toBe(65_535);
    expect(() => read('65536')).toThrow(/SOME_PORT: must be a port from 0 to 65535/);
    expect(() => read('70000')).toThrow(ConfigError);
  });
});

describe('envBoolean at its edges', () => {
  const read = (value: string | undefined) => loadConfig(z.object({ FLAG: envBoolean(false) }), { FLAG: value }).FLAG;

  it('reads true/1/yes and false/0/no in any case and with spaces around; empty or spaces is the default', () => {
    for (const v of ['true', 'TRUE', 'True', '1', 'yes', 'YES', ' true ']) expect(read(v)).toBe(true);
    for (const v of ['false', 'FALSE', '0', 'no', 'No']) expect(read(v)).toBe(false);
    for (const v of [undefined, '', '  ']) expect(read(v)).toBe(false);
  });

  it('stops the start at anything else, naming the variable and what it takes', () => {
    for (const v of ['on', 'maybe', '2', 'truee']) expect(() => read(v)).toThrow(/FLAG: expected true or false \(also 1\/0, yes\/no\), got/);
  });
});

describe('envUrl', () => {
  const read = (value: string | undefined) => loadConfig(z.object({ ENGINE_URL: envUrl() }), { ENGINE_URL: value }).ENGINE_URL;

  it('takes an http(s) URL with a host; empty is absent', () => {
    expect(read('http://elasticsearch:9200')).toBe('http://elasticsearch:9200');
    expect(read('https://user:pass@es.example.com')).toBe('https://user:pass@es.example.com');
    expect(read('')).toBeUndefined();
  });

  it('stops the start at another scheme, naming the variable ("localhost:9200" parses as the scheme "localhost:")', () => {
    for (const bad of ['localhost:9200', 'minio:9000', 'ftp://files.example.com', 'http://', 'not a url']) expect(() => read(bad)).toThrow(/ENGINE_URL: /);
    expect(() => read('localhost:9200')).toThrow(/ENGINE_URL: must be an http:\/\/ or https:\/\/ URL with a host/);
  });
});

describe('MONGO_DATABASE_PREFIX', () => {
  const logger = createLogger('config-test', 'silent');
  // Nothing listens on port 1: a prefix taken would go on to look for a server (and fail after 500 ms, as unreachable).
  const connect = (databasePrefix: string) => connectMongo({ url: 'mongodb://127.0.0.1:1', database: 'notifications', databasePrefix, logger, serverSelectionTimeoutMs: 500 });

  it('stops the start, before any server is looked for, at a prefix MongoDB refuses in a database name, naming the variable and the rule', async () => {
    for (const bad of ['team.a', 'my app', 'a/b', 'a\\b', 'a"b', 'a$b', 'a:b', 'a*b', 'x'.repeat(50)]) {
      await expect(connect(bad)).rejects.toThrow(ConfigError);
      await expect(connect(bad)).rejects.toThrow(/MONGO_DATABASE_PREFIX: must be at most 49 bytes without \/ \\ \. " \$ \* < > : \| \? or spaces/);
    }
  });

  it('reads empty or only spaces as none and drops spaces around; 49 bytes fit <prefix>_notifications in 63', () => {
    expect(mongoDatabasePrefix(undefined)).toBeUndefined();
    expect(mongoDatabasePrefix('')).toBeUndefined();
    expect(mongoDatabasePrefix('   ')).toBeUndefined();
    expect(mongoDatabasePrefix(' ci ')).toBe('ci');
    expect(mongoDatabasePrefix('release-2_eu')).toBe('release-2_eu');
    expect(Buffer.byteLength(`${mongoDatabasePrefix('x'.repeat(49))}_notifications`)).toBe(63);
  });
});
