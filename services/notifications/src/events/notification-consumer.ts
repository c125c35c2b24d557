import { Topics, type EventBus, type Logger, type Subscription } from '@cards/platform';
import { events } from '@cards/proto';
import type { NotificationService } from '../application/notification-service';

export const NOTIFICATIONS_CONSUMER_GROUP = 'notifications';

function decode<T>(decoder: { decode(bytes: Uint8Array): T }, payload: Uint8Array, logger: Logger, topic: string): T | undefined {
  try {
    return decoder.decode(payload);
  } catch (err) {
    // A payload that cannot be decoded never will be: retrying it would only delay the events behind it.
    logger.error({ err, topic }, 'undecodable event skipped');
    return undefined;
  }
}

/**
 * Turns card-verified and collection-created events into notifications, and removes those about a card or collection
 * when its deletion event comes. Delivery is at-least-once;
 * the service's store makes a redelivery a no-op. Store failures throw, so the bus retries.
 * Verifications are taken from cards.verification.v1 (the results cards kept), not from search's announcement: a
 * result for a link the card no longer has (changed while its page was checked) must not notify, and only cards, where
 * the link is changed, knows that whatever order the events arrive in.
 */
export function subscribeNotificationConsumers(bus: EventBus, service: NotificationService, logger: Logger): Promise<Subscription> {
  return bus.subscribe({
    group: NOTIFICATIONS_CONSUMER_GROUP,
    topics: [Topics.keptVerification, Topics.collection, Topics.card],
    handler: async (event) => {
      if (event.topic === Topics.keptVerification) {
        const verified = decode(events.CardVerified, event.payload, logger, event.topic);
        if (!verified) return;
        await service.recordVerification({
          eventId: verified.eventId,
          verificationId: verified.verificationId,
          cardId: verified.cardId,
          authorId: verified.authorId,
          score: verified.score,
        });
      } else if (event.topic === Topics.collection) {
        const collection = decode(events.CollectionEvent, event.payload, logger, event.topic);
        if (collection?.kind?.$case === 'deleted') {
          if (collection.kind.value.collectionId) await service.recordDeleted({ kind: 'collection', collectionId: collection.kind.value.collectionId.toLowerCase() });
          return;
        }
        if (collection?.kind?.$case !== 'created') return;
        const created = collection.kind.value;
        await service.recordCollectionCreated({ eventId: collection.eventId, collectionId: created.collectionId, authorId: created.authorId });
      } else if (event.topic === Topics.card) {
        // Only deletions matter here: a deleted card's verification notifications would lead to a missing card.
        const card = decode(events.CardEvent, event.payload, logger, event.topic);
        if (card?.kind?.$case === 'deleted' && card.kind.value.cardId) await service.recordDeleted({ kind: 'card', cardId: card.kind.value.cardId.toLowerCase() });
      }
    },
  });
}
