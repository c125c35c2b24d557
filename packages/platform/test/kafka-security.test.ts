import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { ConfigError } from '../src/config';
import { createLogger } from '../src/logger';
import { createEventBus } from '../src/events/create-event-bus';
import { KafkaEventBus } from '../src/events/kafka-event-bus';
import { kafkaSecurityOf } from '../src/events/kafka-security';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startKafkaSync } from '../../../test/engines/kafka';

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    kafkaSecurityOf(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};
const silent = () => createLogger('kafka-security-test', 'silent');
const CA = rootCertificates[0]!;

describe('Kafka security from the environment (KAFKA_SSL, KAFKA_SASL_*)', () => {
  it('is plaintext without authentication when nothing is set, as before', () => {
    expect(kafkaSecurityOf({})).toEqual({});
    expect(kafkaSecurityOf({ KAFKA_SSL: 'false', KAFKA_SASL_MECHANISM: '', KAFKA_SASL_USERNAME: '', KAFKA_SASL_PASSWORD: '' })).toEqual({});
  });

  it("turns on TLS (Node's CAs, NODE_EXTRA_CA_CERTS among them) and SASL with each mechanism kafkajs has", () => {
    expect(kafkaSecurityOf({ KAFKA_SSL: 'true' })).toEqual({ ssl: {} });
    for (const mechanism of ['plain', 'scram-sha-256', 'scram-sha-512', 'SCRAM-SHA-512']) {
      expect(kafkaSecurityOf({ KAFKA_SSL: '1', KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: 'cards', KAFKA_SASL_PASSWORD: 's3cret' })).toEqual({
        ssl: {},
        sasl: { mechanism: mechanism.toLowerCase(), username: 'cards', password: 's3cret' },
      });
    }
    // SASL without TLS (a SASL_PLAINTEXT listener) is allowed.
    expect(kafkaSecurityOf({ KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' })).toEqual({ sasl: { mechanism: 'plain', username: 'u', password: 'p' } });
  });

  it("trusts KAFKA_SSL_CA_FILE's certificates beside the public CAs", () => {
    const file = join(mkdtempSync(join(tmpdir(), 'kafka-ca-')), 'ca.pem');
    writeFileSync(file, CA);
    expect(kafkaSecurityOf({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: file }).ssl?.ca).toEqual([...rootCertificates, CA]);
  });

  it('fails naming each variable when they are set halfway or wrong, never a secret', () => {
    expect(problemsOf({ KAFKA_SASL_MECHANISM: 'plain' })).toEqual(['KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=plain', 'KAFKA_SASL_PASSWORD: required with KAFKA_SASL_MECHANISM=plain']);
    expect(problemsOf({ KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'cards' })).toEqual(['KAFKA_SASL_PASSWORD: required with KAFKA_SASL_MECHANISM=scram-sha-256']);
    expect(problemsOf({ KAFKA_SASL_USERNAME: 'cards', KAFKA_SASL_PASSWORD: 'hunter2' })).toEqual([
      'KAFKA_SASL_MECHANISM: required with KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD: one of plain, scram-sha-256, scram-sha-512',
    ]);
    expect(problemsOf({ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'hunter2' })).toEqual(['KAFKA_SASL_MECHANISM: expected one of plain, scram-sha-256, scram-sha-512']);
    expect(problemsOf({ KAFKA_SSL: 'maybe' })[0]).toMatch(/^KAFKA_SSL: /);
    expect(problemsOf({ KAFKA_SSL_CA_FILE: '/etc/ssl/kafka-ca.pem' })).toEqual(['KAFKA_SSL_CA_FILE: set, but KAFKA_SSL is not true (the CA is for TLS connections to the brokers)']);
    expect(problemsOf({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: '/nowhere/ca.pem' })).toEqual(['KAFKA_SSL_CA_FILE: cannot read /nowhere/ca.pem (ENOENT)']);
    const notPem = join(mkdtempSync(join(tmpdir(), 'kafka-ca-')), 'ca.der');
    writeFileSync(notPem, Buffer.from([0x30, 0x82, 0x01]));
    expect(problemsOf({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: notPem })).toEqual([`KAFKA_SSL_CA_FILE: ${notPem} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`]);
    expect(problemsOf({ KAFKA_SASL_MECHANISM: 'gssapi', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'hunter2' }).join('\n')).not.toContain('hunter2');
  });

  it('fails the start of a Kafka bus configured halfway (createEventBus, as each service starts it)', () => {
    const saved = { ...process.env };
    try {
      process.env.KAFKA_SASL_MECHANISM = 'plain';
      delete process.env.KAFKA_SASL_USERNAME;
      delete process.env.KAFKA_SASL_PASSWORD;
      expect(() => createEventBus({ DATA_DIR: tmpdir(), KAFKA_BROKERS: '127.0.0.1:1' }, silent())).toThrow(ConfigError);
      expect(() => createEventBus({ DATA_DIR: tmpdir(), KAFKA_BROKERS: '127.0.0.1:1' }, silent())).toThrow(/KAFKA_SASL_USERNAME: required with KAFKA_SASL_MECHANISM=plain/);
    } finally {
      process.env = saved;
    }
  });

  it('warns at the start of a Kafka bus using SASL PLAIN without TLS (the password in clear text); not with TLS or SCRAM', async () => {
    const saved = { ...process.env };
    const warned = (env: Record<string, string>): string[] => {
      const lines: string[] = [];
      process.env = { ...saved, KAFKA_SSL: '', KAFKA_SASL_MECHANISM: '', KAFKA_SASL_USERNAME: '', KAFKA_SASL_PASSWORD: '', ...env };
      const bus = createEventBus({ DATA_DIR: tmpdir(), KAFKA_BROKERS: '127.0.0.1:1' }, createLogger('kafka-security-test', 'info', { write: (line: string) => void lines.push(line) }));
      void bus.close();
      return lines.map((line) => JSON.parse(line) as { level: number; msg: string }).filter((line) => line.level === 40).map((line) => line.msg);
    };
    try {
      const credentials = { KAFKA_SASL_USERNAME: 'cards', KAFKA_SASL_PASSWORD: 'hunter2' };
      const plain = warned({ KAFKA_SASL_MECHANISM: 'plain', ...credentials });
      expect(plain).toEqual([expect.stringMatching(/^KAFKA_SASL_MECHANISM=plain without KAFKA_SSL=true: the Kafka user name and password cross the network in clear text/)]);
      expect(plain.join('\n')).not.toContain('hunter2');
      expect(warned({ KAFKA_SASL_MECHANISM: 'PLAIN', KAFKA_SSL: 'true', ...credentials })).toEqual([]);
      expect(warned({ KAFKA_SASL_MECHANISM: 'scram-sha-512', ...credentials })).toEqual([]);
      expect(warned({})).toEqual([]);
    } finally {
      process.env = saved;
    }
  });

  it('speaks TLS to the brokers with ssl set (a ClientHello first), Kafka with it unset', async () => {
    const firstBytes: Buffer[] = [];
    const server = createServer((socket) => socket.once('data', (chunk) => (firstBytes.push(chunk), socket.destroy())));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const brokers = [`127.0.0.1:${(server.address() as AddressInfo).port}`];
    try {
      for (const security of [{ ssl: {} }, {}]) {
        const bus = new KafkaEventBus({ brokers, security, logger: silent(), readyTimeoutMs: 1000 });
        await bus.ready().catch(() => undefined);
        await bus.close();
      }
      // A TLS record of type handshake (0x16), version 3.x; a Kafka request starts with its 4-byte length.
      expect(firstBytes.length).toBeGreaterThanOrEqual(2);
      expect([...firstBytes[0]!.subarray(0, 2)]).toEqual([0x16, 0x03]);
      expect(firstBytes.at(-1)![0]).toBe(0);
    } finally {
      server.close();
    }
  }, 30_000);
});

const SASL_USER = { username: 'cards-service', password: 'pass word-1' };
const { engine: kafka, skipReason } = engineForSuite('kafka (SASL/PLAIN listener)', () => startKafkaSync({ sasl: SASL_USER }));

describeOnEngine('Kafka bus on a broker that requires SASL/PLAIN', skipReason, () => {
  const withEnv = (env: Record<string, string>) => kafkaSecurityOf({ ...env, KAFKA_SASL_MECHANISM: 'plain' });

  it('connects with the right credentials and publishes and consumes', async () => {
    const bus = new KafkaEventBus({ brokers: [kafka!.saslBrokers!], security: withEnv({ KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: SASL_USER.password }), logger: silent() });
    try {
      await bus.ready();
      const received: string[] = [];
      await bus.subscribe({ group: 'sasl-test', topics: ['sasl.test.v1'], handler: async (event) => void received.push(Buffer.from(event.payload).toString()) });
      await bus.publish([{ topic: 'sasl.test.v1', key: 'k', payload: Buffer.from('authenticated') }]);
      const deadline = Date.now() + 30_000;
      while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(received).toEqual(['authenticated']);
    } finally {
      await bus.close();
    }
  }, 60_000);

  it('refuses a wrong password with an error naming the SASL variables, not an unreachable broker', async () => {
    const bus = new KafkaEventBus({ brokers: [kafka!.saslBrokers!], security: withEnv({ KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: 'wrong' }), logger: silent(), readyTimeoutMs: 20_000 });
    try {
      const error = await bus.ready().then(() => undefined, (err: Error) => err.message);
      expect(error).toMatch(new RegExp(`^Kafka brokers ${kafka!.saslBrokers!} refused the SASL credentials \\(KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD\\): .*Authentication failed`, 's'));
      expect(error).not.toContain('wrong');
    } finally {
      await bus.close();
    }
  }, 60_000);
});
