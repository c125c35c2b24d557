import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { awaitEngineListening, ENGINES_DIR, EngineUnavailableError, freePortsSync, prepareJavaEngine, spawnJava } from './engine-support';

export interface KafkaEngine {
  /** `host:port` list for KAFKA_BROKERS. */
  brokers: string;
  /** With the `sasl` option: `host:port` of a SASL_PLAINTEXT listener (mechanism PLAIN) that takes only those credentials. */
  saslBrokers?: string;
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

function serverProperties(dataDir: string, port: number, controllerPort: number, sasl?: { port: number; user: KafkaSaslUser }): string {
  const saslListener = sasl ? `,SASL_PLAINTEXT://127.0.0.1:${sasl.port}` : '';
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}${saslListener}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${port}${saslListener}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    `listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${sasl ? ',SASL_PLAINTEXT:SASL_PLAINTEXT' : ''}`,
    // SASL/PLAIN on its own listener, the one user it knows defined inline (JAAS), as a managed cluster's user.
    ...(sasl
      ? [
          'sasl.enabled.mechanisms=PLAIN',
          `listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_${sasl.user.username}=${jaasQuoted(sasl.user.password)};`,
        ]
      : []),
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
export function startKafkaSync(options: { sasl?: KafkaSaslUser } = {}): KafkaEngine {
  const classpath = prepareKafka();
  const dataDir = mkdtempSync(join(tmpdir(), 'cards-kafka-'));
  mkdirSync(join(dataDir, 'log'));
  const [port, controllerPort, saslPort] = freePortsSync(options.sasl ? 3 : 2) as [number, number, number | undefined];
  const properties = join(dataDir, 'server.properties');
  writeFileSync(properties, serverProperties(dataDir, port, controllerPort, options.sasl && { port: saslPort!, user: options.sasl }));
  // A leading '-' would make kafka-storage's argument parser take the id for an option (1 start in 64 failed).
  const clusterId = randomBytes(16).toString('base64url').replace(/^-/, 'A');
  // The launcher formats with --ignore-formatted, so a second spawn on the same directory resumes the same cluster.
  const spawnBroker = () => {
    const started = spawnJava(classpath, 'KafkaEngine', [properties, clusterId], {
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
    ...(options.sasl ? { saslBrokers: `127.0.0.1:${saslPort}` } : {}),
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
