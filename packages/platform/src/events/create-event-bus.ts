import { join } from 'node:path';
import type { Logger } from 'pino';
import { ConfigError } from '../config';
import type { EventBus } from './event-bus';
import { KafkaEventBus } from './kafka-event-bus';
import { describeKafkaSecurity, kafkaSecurityOf, kafkaSecurityWarning } from './kafka-security';
import { eventLogRetentionOf, openSharedSqliteEventLog } from './sqlite-event-log';

export interface EventBusConfig {
  DATA_DIR: string;
  KAFKA_BROKERS?: string;
  /** Partitions of topics the Kafka bus creates; falls back to the KAFKA_PARTITIONS variable, then 3. */
  KAFKA_PARTITIONS?: number | string;
  /** Kafka client id; the service name. */
  KAFKA_CLIENT_ID?: string;
  /** Prefix of topics and consumer groups on a shared cluster; falls back to the KAFKA_NAMESPACE variable. */
  KAFKA_NAMESPACE?: string;
}

/** KAFKA_PARTITIONS: an integer from 1 to 1000, 3 when unset. */
export function kafkaPartitions(value: number | string | undefined): number {
  const raw = value ?? process.env.KAFKA_PARTITIONS;
  // Only spaces is unset too: Number(' ') is 0, refused as a partition count the operator never wrote.
  if (raw === undefined || String(raw).trim() === '') return 3;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new Error(`KAFKA_PARTITIONS must be an integer from 1 to 1000, got "${String(raw)}"`);
  return n;
}

/**
 * The host:port list of KAFKA_BROKERS; empty items (a trailing comma) are skipped. A value naming no broker (' ', ',')
 * or an item without a port stops the start naming the variable: ' ' selected Kafka with no broker at all, and the
 * start then failed on kafkajs' 'Failed to connect: brokers array is empty'.
 */
export function kafkaBrokersOf(value: string): string[] {
  const brokers = value.split(',').map((b) => b.trim()).filter(Boolean);
  const bad = brokers.filter((b) => !/^(?:\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(b));
  if (brokers.length === 0) throw new ConfigError([`KAFKA_BROKERS: expected host:port[,host:port...] (unset for the embedded event log), got "${value}"`]);
  if (bad.length > 0) throw new ConfigError([`KAFKA_BROKERS: expected host:port[,host:port...], got "${bad.join('", "')}" in "${value}"`]);
  return brokers;
}

/** KAFKA_NAMESPACE from the config, else the variable; undefined when empty or only spaces. */
export function kafkaNamespaceOf(config: Pick<EventBusConfig, 'KAFKA_NAMESPACE'>): string | undefined {
  // Only spaces is none: ' ' made every topic name ' .card' (not a Kafka topic name), failing the start.
  return config.KAFKA_NAMESPACE ?? (process.env.KAFKA_NAMESPACE?.trim() || undefined);
}

/**
 * Kafka when KAFKA_BROKERS is set, else the durable local log under DATA_DIR; the choice is logged once. The Kafka bus
 * secures its connections as the KAFKA_SSL and KAFKA_SASL_* variables say (kafkaSecurityOf: a ConfigError when they
 * are set halfway).
 */
export function createEventBus(config: EventBusConfig, logger: Logger): EventBus {
  if (config.KAFKA_BROKERS) {
    const brokers = kafkaBrokersOf(config.KAFKA_BROKERS);
    const partitions = kafkaPartitions(config.KAFKA_PARTITIONS);
    const namespace = kafkaNamespaceOf(config);
    const security = kafkaSecurityOf();
    logger.info({ brokers, partitions, namespace, ...describeKafkaSecurity(security) }, 'KAFKA_BROKERS set: using the Kafka event bus');
    const warning = kafkaSecurityWarning(security);
    if (warning) logger.warn({ ...describeKafkaSecurity(security) }, warning);
    return new KafkaEventBus({ brokers, security, partitions, logger, clientId: config.KAFKA_CLIENT_ID, namespace });
  }
  // EVENT_LOG_RETENTION_HOURS, EVENT_LOG_UNCONSUMED_RETENTION_HOURS: a ConfigError when malformed.
  const retention = eventLogRetentionOf();
  logger.info({ retentionHours: hoursOf(retention.retentionMs), unconsumedRetentionHours: hoursOf(retention.unconsumedMs) }, 'KAFKA_BROKERS not set: using the embedded SQLite event log');
  return openSharedSqliteEventLog({ path: join(config.DATA_DIR, 'events', 'events.db'), logger, retention });
}

function hoursOf(ms: number | null): number | 'forever' {
  return ms === null ? 'forever' : ms / 3_600_000;
}
