import { tmpdir } from 'node:os';
import { ConfigError, createEventBus, createLogger, kafkaBrokersOf, kafkaNamespaceOf, kafkaPartitions } from '../src';

const silent = createLogger('kafka-brokers-test', 'silent');

describe('KAFKA_BROKERS', () => {
  it('is a list of host:port, empty items skipped', () => {
    expect(kafkaBrokersOf('kafka-0:9092, kafka-1:9092,')).toEqual(['kafka-0:9092', 'kafka-1:9092']);
    expect(kafkaBrokersOf('[::1]:9092,10.0.0.5:9093')).toEqual(['[::1]:9092', '10.0.0.5:9093']);
  });

  it('naming no broker (only spaces, only commas) stops the start naming the variable, instead of a Kafka bus with no broker', () => {
    for (const value of [' ', ',', ' , ']) {
      expect(() => createEventBus({ DATA_DIR: tmpdir(), KAFKA_BROKERS: value }, silent)).toThrow(ConfigError);
      expect(() => createEventBus({ DATA_DIR: tmpdir(), KAFKA_BROKERS: value }, silent)).toThrow(/KAFKA_BROKERS: expected host:port/);
    }
  });

  it('an item without a port stops the start naming it', () => {
    expect(() => kafkaBrokersOf('kafka-0:9092,kafka-1')).toThrow(/KAFKA_BROKERS: expected host:port\[,host:port...\], got "kafka-1"/);
    expect(() => kafkaBrokersOf('kafka://kafka-0:9092')).toThrow(ConfigError);
  });
});

describe('KAFKA_PARTITIONS and KAFKA_NAMESPACE of only spaces', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env.KAFKA_NAMESPACE = saved.KAFKA_NAMESPACE;
    if (saved.KAFKA_NAMESPACE === undefined) delete process.env.KAFKA_NAMESPACE;
  });

  it('read as unset (3 partitions, no namespace), as empty is; Number(" ") was 0, refused, and " " prefixed every topic', () => {
    expect(kafkaPartitions(' ')).toBe(3);
    expect(kafkaPartitions('6')).toBe(6);
    expect(() => kafkaPartitions('0')).toThrow(/KAFKA_PARTITIONS must be an integer from 1 to 1000/);
    process.env.KAFKA_NAMESPACE = '  ';
    expect(kafkaNamespaceOf({})).toBeUndefined();
    process.env.KAFKA_NAMESPACE = 'staging';
    expect(kafkaNamespaceOf({})).toBe('staging');
  });
});
