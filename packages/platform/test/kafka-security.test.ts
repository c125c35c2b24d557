import { createServer, type AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rootCertificates } from 'node:tls';
import { ConfigError } from '../src/config';
import { createLogger } from '../src/logger';
import { createEventBus } from '../src/events/create-event-bus';
import { KafkaEventBus, kafkaUnreachableError } from '../src/events/kafka-event-bus';
import { kafkaSecurityOf } from '../src/events/kafka-security';
import { describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { startKafkaSync } from '../../../test/engines/kafka';
import { startServiceProcess } from '../../../test/engines/service-process';
import { testTempDir } from '../../../test/support/cleanup';

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
    const file = join(testTempDir('kafka-ca-'), 'ca.pem');
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
    const notPem = join(testTempDir('kafka-ca-'), 'ca.der');
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

  it('names KAFKA_BROKERS when a certificate is for another host name', () => {
    const altname = Object.assign(new Error("Hostname/IP does not match certificate's altnames: Host: kafka-0. is not in the cert's altnames: DNS:kafka-1"), { code: 'ERR_TLS_CERT_ALTNAME_INVALID' });
    const retriesExceeded = Object.assign(new Error('Connection error'), { name: 'KafkaJSNumberOfRetriesExceeded', cause: altname });
    expect(kafkaUnreachableError(['kafka-0:9093'], retriesExceeded).message).toBe(
      `Kafka brokers kafka-0:9093 presented a TLS certificate for another name (KAFKA_BROKERS must name the brokers as their certificates do): ${altname.message}`,
    );
  });

  it('still calls brokers that nobody listens at unreachable with TLS on (not a failed TLS handshake)', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const brokers = [`127.0.0.1:${(server.address() as AddressInfo).port}`];
    await new Promise((resolve) => server.close(resolve));
    const bus = new KafkaEventBus({ brokers, security: { ssl: {} }, logger: silent(), readyTimeoutMs: 1500 });
    try {
      expect(await bus.ready().then(() => undefined, (err: Error) => err.message)).toMatch(new RegExp(`^Kafka brokers ${brokers[0]} are unreachable \\(KAFKA_BROKERS\\): `));
    } finally {
      await bus.close();
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
// One broker for the file: PLAINTEXT (unused here), SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512), SSL and
// SASL_SSL, the TLS listeners with a keystore keytool made and a private CA (kafka!.caFile) that signed it.
const { engine: kafka, skipReason } = engineForSuite('kafka (SASL and TLS listeners)', () => startKafkaSync({ sasl: SASL_USER, tls: true }));

/** Connects, subscribes and publishes one event on `topic`, and returns what the subscription received. */
async function roundTrip(bus: KafkaEventBus, topic: string): Promise<string[]> {
  await bus.ready();
  const received: string[] = [];
  await bus.subscribe({ group: `${topic}-test`, topics: [topic], handler: async (event) => void received.push(Buffer.from(event.payload).toString()) });
  await bus.publish([{ topic, key: 'k', payload: Buffer.from('authenticated') }]);
  const deadline = Date.now() + 30_000;
  while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  return received;
}

/** ready()'s error message, or undefined when it succeeded; the bus is closed after. */
async function readyError(bus: KafkaEventBus): Promise<string | undefined> {
  try {
    return await bus.ready().then(() => undefined, (err: Error) => err.message);
  } finally {
    await bus.close();
  }
}

const REFUSED_SASL = (brokers: string) => new RegExp(`^Kafka brokers ${brokers} refused the SASL credentials \\(KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD\\): .*Authentication failed`, 's');

describeOnEngine('Kafka bus on a broker that requires SASL/PLAIN', skipReason, () => {
  const withEnv = (env: Record<string, string>) => kafkaSecurityOf({ ...env, KAFKA_SASL_MECHANISM: 'plain' });

  it('connects with the right credentials and publishes and consumes', async () => {
    const bus = new KafkaEventBus({ brokers: [kafka!.saslBrokers!], security: withEnv({ KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: SASL_USER.password }), logger: silent() });
    try {
      expect(await roundTrip(bus, 'sasl.test.v1')).toEqual(['authenticated']);
    } finally {
      await bus.close();
    }
  }, 60_000);

  it('refuses a wrong password with an error naming the SASL variables, not an unreachable broker', async () => {
    const bus = new KafkaEventBus({ brokers: [kafka!.saslBrokers!], security: withEnv({ KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: 'wrong' }), logger: silent(), readyTimeoutMs: 20_000 });
    const error = await readyError(bus);
    expect(error).toMatch(REFUSED_SASL(kafka!.saslBrokers!));
    expect(error).not.toContain('wrong');
  }, 60_000);
});

describeOnEngine('Kafka bus on a broker that requires SASL/SCRAM (credentials stored at format, as kafka-storage --add-scram)', skipReason, () => {
  const withEnv = (mechanism: string, password: string) => kafkaSecurityOf({ KAFKA_SASL_MECHANISM: mechanism, KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: password });

  it.each(['scram-sha-256', 'scram-sha-512'])('%s: connects with the right password and publishes and consumes', async (mechanism) => {
    const bus = new KafkaEventBus({ brokers: [kafka!.saslBrokers!], security: withEnv(mechanism, SASL_USER.password), logger: silent() });
    try {
      expect(await roundTrip(bus, `${mechanism}.test.v1`)).toEqual(['authenticated']);
    } finally {
      await bus.close();
    }
  }, 60_000);

  it.each(['scram-sha-256', 'scram-sha-512'])('%s: a wrong password fails ready() at once, naming the SASL variables', async (mechanism) => {
    const bus = new KafkaEventBus({ brokers: [kafka!.saslBrokers!], security: withEnv(mechanism, 'wrong-password'), logger: silent(), readyTimeoutMs: 20_000 });
    const error = await readyError(bus);
    expect(error).toMatch(REFUSED_SASL(kafka!.saslBrokers!));
    expect(error).not.toContain('wrong-password');
  }, 60_000);
});

describeOnEngine('Kafka bus on a broker with a TLS listener (keystore made with keytool, private CA)', skipReason, () => {
  const writeCa = (pem: string) => {
    const file = join(testTempDir('kafka-ca-'), 'ca.pem');
    writeFileSync(file, pem);
    return file;
  };

  it('connects with KAFKA_SSL=true and KAFKA_SSL_CA_FILE naming the private CA, and publishes and consumes', async () => {
    const bus = new KafkaEventBus({ brokers: [kafka!.sslBrokers!], security: kafkaSecurityOf({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: kafka!.caFile! }), logger: silent() });
    try {
      expect(await roundTrip(bus, 'tls.test.v1')).toEqual(['authenticated']);
    } finally {
      await bus.close();
    }
  }, 60_000);

  // Found here: kafkajs retries a failed certificate check as any connection error, so ready() waited its 10 s and
  // reported "unreachable (KAFKA_BROKERS): no answer within 10000 ms", naming neither TLS nor the CA.
  it.each([
    ['only the public CAs (KAFKA_SSL alone)', undefined],
    ['a CA file of a CA that did not sign it', CA],
  ])('refuses the broker with %s, at once and naming the CA variables', async (_, caPem) => {
    const env: Record<string, string> = { KAFKA_SSL: 'true', ...(caPem ? { KAFKA_SSL_CA_FILE: writeCa(caPem) } : {}) };
    const bus = new KafkaEventBus({ brokers: [kafka!.sslBrokers!], security: kafkaSecurityOf(env), logger: silent() });
    expect(await readyError(bus)).toBe(
      `Kafka brokers ${kafka!.sslBrokers!} presented a TLS certificate this service does not trust (KAFKA_SSL_CA_FILE or NODE_EXTRA_CA_CERTS names the CA that signed it): self-signed certificate in certificate chain (SELF_SIGNED_CERT_IN_CHAIN)`,
    );
  }, 60_000);

  // Found here too: a listener speaking the other protocol was reported as unreachable after the timeout.
  it('says which side lacks TLS when KAFKA_SSL does not match the listener, or SASL when the listener takes none', async () => {
    const scram = { KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: SASL_USER.password };
    const [tlsToPlain, plainToTls, saslToPlain] = await Promise.all([
      readyError(new KafkaEventBus({ brokers: [kafka!.brokers], security: kafkaSecurityOf({ KAFKA_SSL: 'true' }), logger: silent(), readyTimeoutMs: 3000 })),
      readyError(new KafkaEventBus({ brokers: [kafka!.sslBrokers!], security: kafkaSecurityOf({}), logger: silent(), readyTimeoutMs: 3000 })),
      readyError(new KafkaEventBus({ brokers: [kafka!.brokers], security: kafkaSecurityOf(scram), logger: silent(), readyTimeoutMs: 3000 })),
    ]);
    expect(tlsToPlain).toMatch(new RegExp(`^Kafka brokers ${kafka!.brokers} broke off the TLS handshake \\(KAFKA_SSL=true; KAFKA_BROKERS may name a listener without TLS\\): `));
    expect(plainToTls).toBe(`Kafka brokers ${kafka!.sslBrokers!} answered in TLS (KAFKA_SSL=true is needed for that listener, or KAFKA_BROKERS may name the wrong one): no answer within 3000 ms`);
    expect(saslToPlain).toMatch(new RegExp(`^Kafka brokers ${kafka!.brokers} take no SASL on that listener \\(KAFKA_SASL_MECHANISM is set; KAFKA_BROKERS may name a listener without SASL\\): `));
  }, 60_000);

  it('SASL_SSL: SCRAM-SHA-512 over TLS publishes and consumes', async () => {
    const security = kafkaSecurityOf({ KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: kafka!.caFile!, KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: SASL_USER.password });
    const bus = new KafkaEventBus({ brokers: [kafka!.saslSslBrokers!], security, logger: silent() });
    try {
      expect(await roundTrip(bus, 'sasl-ssl.test.v1')).toEqual(['authenticated']);
    } finally {
      await bus.close();
    }
  }, 60_000);
});

describeOnEngine('a service started against the secured broker with a wrong setting', skipReason, () => {
  // As each service starts its bus (cards here): it exits at once with the reason, not after a timeout or in a loop.
  it.concurrent.each([
    ['a wrong SCRAM password', () => ({ KAFKA_BROKERS: kafka!.saslBrokers!, KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: SASL_USER.username, KAFKA_SASL_PASSWORD: 'not-the-password' }), 'refused the SASL credentials (KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD)'],
    ['an untrusted broker certificate', () => ({ KAFKA_BROKERS: kafka!.sslBrokers!, KAFKA_SSL: 'true' }), 'presented a TLS certificate this service does not trust (KAFKA_SSL_CA_FILE or NODE_EXTRA_CA_CERTS'],
  ])('cards with %s exits at start naming the variables', async (_, env, reason) => {
    const running = startServiceProcess('cards', { ...env(), CARDS_GRPC_PORT: '0' });
    const timer = setTimeout(() => running.child.kill('SIGKILL'), 45_000);
    try {
      expect(await running.exited).toBe(1);
      const fatal = running.output().split('\n').find((line) => line.includes('failed to start'));
      expect(fatal).toContain(reason);
      expect(running.output()).not.toContain('not-the-password');
    } finally {
      clearTimeout(timer);
      await running.stop();
    }
  }, 60_000);
});
