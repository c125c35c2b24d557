import { Topics, type EventBus, type Subscription } from '@cards/platform';
import { events } from '@cards/proto';
import type { CardService } from './card-service';

/**
 * What cards learns from search: the index id of a root card (search.index.v1) and its verification score
 * (search.verification.v1; a kept one is announced again on cards.verification.v1 for notifications). Both writes are
 * idempotent, so redeliveries change nothing (a re-announced result notifies once: one notification per verification id).
 * An index announcement of a card whose near-duplicate lookup search could not answer then runs it (recordIndexed), and
 * fails, to be delivered again, while search still cannot answer it.
 */
export async function subscribeToSearchEvents(bus: EventBus, cardService: CardService): Promise<Subscription> {
  return bus.subscribe({
    group: 'cards',
    topics: [Topics.index, Topics.verification],
    handler: async (event) => {
      if (event.topic === Topics.index) {
        const indexed = events.CardIndexed.decode(event.payload);
        if (indexed.cardId && indexed.vectorPointId) await cardService.recordIndexed(indexed.cardId, indexed.vectorPointId, event.attempt);
      } else if (event.topic === Topics.verification) {
        const verified = events.CardVerified.decode(event.payload);
        if (verified.cardId) await cardService.recordVerification(verified);
      }
    },
  });
}
