import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { DeadLetters } from './dead-letters';
import { kafkaBrokersOf, kafkaNamespaceOf, kafkaPartitions, type EventBusConfig } from './create-event-bus';
import { KafkaDeadLetters } from './kafka-dead-letters';
import { kafkaSecurityOf } from './kafka-security';
import { SqliteDeadLetters } from './sqlite-dead-letters';

/** Thrown when there is no embedded event log where DATA_DIR points. */
export class NoEventLogError extends Error {}

/** The dead letters of the bus createEventBus picks for the same configuration: Kafka when KAFKA_BROKERS is set, else DATA_DIR's event log. */
export function createDeadLetters(config: EventBusConfig, logger: Logger): DeadLetters {
  if (config.KAFKA_BROKERS) {
    return new KafkaDeadLetters({ brokers: kafkaBrokersOf(config.KAFKA_BROKERS), security: kafkaSecurityOf(), logger, namespace: kafkaNamespaceOf(config), partitions: kafkaPartitions(config.KAFKA_PARTITIONS) });
  }
  const path = join(config.DATA_DIR, 'events', 'events.db');
  if (!existsSync(path)) throw new NoEventLogError(`no embedded event log at ${path} (DATA_DIR=${config.DATA_DIR}; set KAFKA_BROKERS for the Kafka bus)`);
  return new SqliteDeadLetters(path);
}
