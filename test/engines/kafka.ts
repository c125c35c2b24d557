import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { awaitEngineListening, ENGINES_DIR, EngineUnavailableError, freePortsSync, prepareJavaEngine, spawnJava } from './engine-support';
import { testTempDir } from '../support/cleanup';

export interface KafkaEngine {
  /** `host:port` list for KAFKA_BROKERS. */
  brokers: string;
  /**
   * With the `sasl` option: `host:port` of a SASL_PLAINTEXT listener that takes only those credentials, with the
   * mechanisms PLAIN (the user inline in JAAS), SCRAM-SHA-256 and SCRAM-SHA-512 (the user's SCRAM credentials stored
   * in the metadata log when the directory is formatted, as `kafka-storage format --add-scram` does).
   */
  saslBrokers?: string;
  /** With the `tls` option: `host:port` of an SSL listener whose certificate (for 127.0.0.1) `caFile`'s CA signed. */
  sslBrokers?: string;
  /** With both `tls` and `sasl`: `host:port` of a SASL_SSL listener (the same mechanisms and user as saslBrokers). */
  saslSslBrokers?: string;
  /** With the `tls` option: PEM file of the private CA that signed the SSL listeners' certificate (made with keytool). */
  caFile?: string;
  /** Stops the broker and deletes its log directory. */
  stop(): Promise<void>;
  /** Stops the broker but keeps its log directory (what it stored survives), for tests of engine loss. */
  halt(): Promise<void>;
  /** Starts the halted broker again on the same ports and log directory, blocking until it listens. */
  resume(): void;
}

export const KAFKA_VERSION = '3.9.1';

/** Jars of org.apache.kafka:kafka_2.13 (KRaft) from Maven Central, cached under test/engines/cache/kafka. */
export function prepareKafka(): string {
  return prepareJavaEngine({ name: 'kafka', sourceDir: 'kafka' });
}

export interface KafkaSaslUser {
  username: string;
  password: string;
}

/** A JAAS string value, quoted (Kafka's JAAS parser takes no escapes: no quotes or backslashes in it). */
function jaasQuoted(value: string): string {
  if (/["\\]/.test(value)) throw new Error('a JAAS value here cannot hold a quote or a backslash');
  return `"${value}"`;
}

const SCRAM_MECHANISMS = ['SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;

/** `kafka-storage format` options that store the user's SCRAM credentials (both mechanisms) in the new cluster. */
function addScramOptions(user: KafkaSaslUser): string[] {
  // The option's value is parsed as name=value pairs; a quoted value may hold spaces and commas, not quotes.
  jaasQuoted(user.password);
  if (/[^\w.@-]/.test(user.username)) throw new Error('a SCRAM user name here is letters, digits and . _ - @ only');
  return SCRAM_MECHANISMS.flatMap((mechanism) => ['--add-scram', `${mechanism}=[name=${user.username},password="${user.password}"]`]);
}

/** The broker's PKCS12 keystore and its private CA's PEM certificate, in `dir`. */
interface BrokerKeystore {
  keystore: string;
  password: string;
  caFile: string;
}

/**
 * A private CA and a broker certificate it signed for 127.0.0.1, made with the JDK's keytool as an operator would: a
 * PKCS12 keystore holding the broker's key with its chain (broker certificate, CA) for `ssl.keystore.location`, and
 * the CA's certificate as PEM for the clients (KAFKA_SSL_CA_FILE). Throws EngineUnavailableError without keytool.
 */
function makeBrokerKeystore(dir: string): BrokerKeystore {
  const password = randomBytes(12).toString('hex');
  const ca = join(dir, 'ca.p12');
  const keystore = join(dir, 'broker.p12');
  const caFile = join(dir, 'ca.pem');
  const keytool = (args: string[], input?: string): string => {
    const result = spawnSync(process.env.KEYTOOL ?? 'keytool', [...args, '-storepass', password, '-storetype', 'PKCS12'], { input, encoding: 'utf8', timeout: 60_000 });
    if (result.error) throw new EngineUnavailableError(`keytool not found (${result.error.message}); the JDK's keytool makes the broker's keystore`);
    if (result.status !== 0) throw new Error(`keytool ${args[0]} failed: ${result.stdout}${result.stderr}`);
    return result.stdout;
  };
  const key = ['-keyalg', 'EC', '-groupname', 'secp256r1', '-validity', '2'];
  keytool(['-genkeypair', '-alias', 'ca', ...key, '-dname', 'CN=Cards test CA', '-ext', 'bc:c', '-keystore', ca]);
  keytool(['-exportcert', '-rfc', '-alias', 'ca', '-keystore', ca, '-file', caFile]);
  keytool(['-genkeypair', '-alias', 'broker', ...key, '-dname', 'CN=127.0.0.1', '-keystore', keystore]);
  const request = keytool(['-certreq', '-alias', 'broker', '-keystore', keystore]);
  const signed = keytool(['-gencert', '-rfc', '-alias', 'ca', '-keystore', ca, '-validity', '2', '-ext', 'SAN=ip:127.0.0.1,dns:localhost', '-ext', 'EKU=serverAuth'], request);
  keytool(['-importcert', '-noprompt', '-alias', 'ca', '-keystore', keystore, '-file', caFile]);
  // The CA is in the keystore now, so keytool stores the broker's key with the whole chain.
  keytool(['-importcert', '-alias', 'broker', '-keystore', keystore], signed);
  return { keystore, password, caFile };
}

interface ListenerPorts {
  port: number;
  controllerPort: number;
  sasl?: { port: number; user: KafkaSaslUser };
  ssl?: { port: number; keystore: BrokerKeystore };
  saslSslPort?: number;
}

function serverProperties(dataDir: string, { port, controllerPort, sasl, ssl, saslSslPort }: ListenerPorts): string {
  const clientListeners = [
    `PLAINTEXT://127.0.0.1:${port}`,
    ...(sasl ? [`SASL_PLAINTEXT://127.0.0.1:${sasl.port}`] : []),
    ...(ssl ? [`SSL://127.0.0.1:${ssl.port}`] : []),
    ...(saslSslPort ? [`SASL_SSL://127.0.0.1:${saslSslPort}`] : []),
  ];
  const protocols = clientListeners.map((l) => l.split(':')[0]!);
  const saslListeners = protocols.filter((p) => p.startsWith('SASL_')).map((p) => p.toLowerCase());
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=${clientListeners.join(',')},CONTROLLER://127.0.0.1:${controllerPort}`,
    `advertised.listeners=${clientListeners.join(',')}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `listener.security.protocol.map=CONTROLLER:PLAINTEXT,${protocols.map((p) => `${p}:${p}`).join(',')}`,
    // SASL on listeners of their own, the one user they know as a managed cluster's user: PLAIN's inline (JAAS),
    // SCRAM's in the metadata log (addScramOptions); each mechanism needs a JAAS login module on each listener.
    ...(sasl
      ? [
          `sasl.enabled.mechanisms=PLAIN,${SCRAM_MECHANISMS.join(',')}`,
          ...saslListeners.flatMap((listener) => [
            `listener.name.${listener}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${sasl.user.username}=${jaasQuoted(sasl.user.password)};`,
            ...SCRAM_MECHANISMS.map((m) => `listener.name.${listener}.${m.toLowerCase()}.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`),
          ]),
        ]
      : []),
    // TLS on the SSL and SASL_SSL listeners with the keystore keytool made; clients are not asked for certificates.
    ...(ssl ? ['ssl.keystore.type=PKCS12', `ssl.keystore.location=${ssl.keystore.keystore}`, `ssl.keystore.password=${ssl.keystore.password}`, `ssl.key.password=${ssl.keystore.password}`] : []),
    `log.dirs=${join(dataDir, 'log')}`,
    // One node: internal topics cannot have more replicas than that.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=4',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'min.insync.replicas=1',
    // Tests form groups constantly; the production default waits 3 s before the first rebalance.
    'group.initial.rebalance.delay.ms=0',
    'num.partitions=1',
    'auto.create.topics.enable=false',
    'log.flush.interval.messages=10000',
  ].join('\n');
}

/**
 * Starts a real single-node Kafka broker (KRaft, no ZooKeeper) on free loopback ports, blocking until
 * it accepts connections. Synchronous so a jest file can decide at collection time whether its
 * Kafka suites run or print why they are skipped. Throws EngineUnavailableError when Java, Maven or
 * Maven Central is missing, or when ENGINES=off.
 */
export function startKafkaSync(options: { sasl?: KafkaSaslUser; tls?: boolean } = {}): KafkaEngine {
  const classpath = prepareKafka();
  const dataDir = testTempDir('cards-kafka-');
  mkdirSync(join(dataDir, 'log'));
  let keystore: BrokerKeystore | undefined;
  try {
    keystore = options.tls ? makeBrokerKeystore(dataDir) : undefined;
  } catch (err) {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
  const ports = freePortsSync(2 + (options.sasl ? 1 : 0) + (options.tls ? 1 : 0) + (options.sasl && options.tls ? 1 : 0));
  const [port, controllerPort] = ports as [number, number];
  let next = 2;
  const listeners: ListenerPorts = {
    port,
    controllerPort,
    ...(options.sasl ? { sasl: { port: ports[next++]!, user: options.sasl } } : {}),
    ...(keystore ? { ssl: { port: ports[next++]!, keystore } } : {}),
    ...(options.sasl && keystore ? { saslSslPort: ports[next++]! } : {}),
  };
  const properties = join(dataDir, 'server.properties');
  writeFileSync(properties, serverProperties(dataDir, listeners));
  const formatOptions = options.sasl ? addScramOptions(options.sasl) : [];
  // A leading '-' would make kafka-storage's argument parser take the id for an option (1 start in 64 failed).
  const clusterId = randomBytes(16).toString('base64url').replace(/^-/, 'A');
  // The launcher formats with --ignore-formatted, so a second spawn on the same directory resumes the same cluster.
  const spawnBroker = () => {
    const started = spawnJava(classpath, 'KafkaEngine', [properties, clusterId, ...formatOptions], {
      logFile: join(dataDir, 'kafka.log'),
      heap: '512m',
      jvmArgs: [`-Dlog4j.configuration=file:${join(ENGINES_DIR, 'kafka', 'log4j.properties')}`, '-Djava.awt.headless=true'],
    });
    awaitEngineListening(started, 'kafka', port, 180_000, dataDir);
    return started;
  };
  let engine = spawnBroker();
  return {
    brokers: `127.0.0.1:${port}`,
    ...(listeners.sasl ? { saslBrokers: `127.0.0.1:${listeners.sasl.port}` } : {}),
    ...(listeners.ssl ? { sslBrokers: `127.0.0.1:${listeners.ssl.port}`, caFile: listeners.ssl.keystore.caFile } : {}),
    ...(listeners.saslSslPort ? { saslSslBrokers: `127.0.0.1:${listeners.saslSslPort}` } : {}),
    async stop() {
      await engine.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
    halt: () => engine.stop(),
    resume() {
      engine = spawnBroker();
    },
  };
}

/** Promise form of startKafkaSync for setup code that can await. */
export async function startKafka(): Promise<KafkaEngine> {
  return startKafkaSync();
}
