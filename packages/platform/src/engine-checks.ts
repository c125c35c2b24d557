import type { EventBus } from './events/event-bus';
import { KafkaEventBus } from './events/kafka-event-bus';
import type { MongoConnection } from './mongo/mongo-connection';
import type { EngineCheck } from './readiness';

/** MongoDB answers a ping (each service's own connection). */
export function mongoEngineCheck(connection: Pick<MongoConnection, 'ready'>): EngineCheck {
  return { name: 'MongoDB (MONGO_URL)', healthName: 'engine:mongodb', check: () => connection.ready() };
}

/**
 * Kafka's cluster answers describeCluster. It does not gate requests: writes commit with their events
 * in the outbox, which is published once the brokers answer again. The embedded log needs no check.
 */
export function eventBusEngineChecks(bus: EventBus): EngineCheck[] {
  return bus instanceof KafkaEventBus ? [{ name: 'Kafka (KAFKA_BROKERS)', healthName: 'engine:kafka', check: () => bus.ready(), gatesRequests: false }] : [];
}
