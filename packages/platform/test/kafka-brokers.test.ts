import { tmpdir } from 'node:os';
import { ConfigError, createEventBus, createLogger, kafkaBrokersOf } from '../src';

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
