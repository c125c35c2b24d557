import { z } from 'zod';
import { ConfigError, envAddress, envBoolean, envInt, loadConfig, refuseEmbeddedStores } from '../src/config';

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
