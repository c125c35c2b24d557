import { EventTooLargeError } from '../src/errors';
import { MAX_EVENT_BYTES, type OutgoingEvent } from '../src/events/event-bus';
import { KafkaEventBus } from '../src/events/kafka-event-bus';
import { createLogger } from '../src/logger';

const logger = createLogger('event-size-limit-test', 'silent');

describe('the event size limit the outboxes share with the Kafka event bus', () => {
  it('KafkaEventBus refuses an event over MAX_EVENT_BYTES itself, naming its topic, before any broker is asked', async () => {
    const bus = new KafkaEventBus({ brokers: ['127.0.0.1:1'], logger });
    const tooLarge: OutgoingEvent = { topic: 'cards.card.v1', key: 'card-1', payload: new Uint8Array(MAX_EVENT_BYTES) };
    try {
      await expect(bus.publish([tooLarge])).rejects.toThrow(EventTooLargeError);
      await expect(bus.publish([tooLarge])).rejects.toThrow(/cards\.card\.v1 event would be 1000006 bytes/);
    } finally {
      await bus.close();
    }
  });
});
