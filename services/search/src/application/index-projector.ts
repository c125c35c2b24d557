import { newId, Topics, type EventBus, type DeliveredEvent, type Logger } from '@cards/platform';
import { events } from '@cards/proto';
import type { CardIndex, Embedder } from '../domain/ports';

/**
 * Keeps the index in step with the cards service: consumes card and bookmark events (at-least-once, so every
 * change is idempotent) and announces each indexed root card on search.index.v1 with its vector point id.
 */
export class IndexProjector {
  constructor(
    private readonly index: CardIndex,
    private readonly embedder: Embedder,
    private readonly bus: Pick<EventBus, 'publish'>,
    private readonly logger: Logger,
  ) {}

  async handle(event: Pick<DeliveredEvent, 'topic' | 'payload'>): Promise<void> {
    if (event.topic === Topics.card) await this.onCardEvent(events.CardEvent.decode(event.payload));
    else if (event.topic === Topics.bookmark) await this.onBookmarkEvent(events.BookmarkEvent.decode(event.payload));
  }

  async onCardEvent(event: events.CardEvent): Promise<void> {
    const occurredAt = event.occurredAt ?? new Date();
    const kind = event.kind;
    if (!kind) return;
    if (kind.$case === 'created' || kind.$case === 'updated') {
      if (kind.value.card) await this.indexSnapshot(kind.value.card, occurredAt);
    } else {
      await this.index.remove(kind.value.cardId, occurredAt);
      const promoted = kind.value.promotedCardId;
      if (promoted && (await this.index.promote(promoted))) await this.announce(promoted);
    }
  }

  async onBookmarkEvent(event: events.BookmarkEvent): Promise<void> {
    if (!event.collectionId || !event.cardId) return;
    await this.index.setBookmark(event.collectionId, event.cardId, event.added, event.occurredAt ?? new Date());
  }

  private async indexSnapshot(card: events.CardSnapshot, occurredAt: Date): Promise<void> {
    if (!card.id) {
      this.logger.warn('card event without a card id; skipped');
      return;
    }
    const existing = await this.index.get(card.id);
    const [vector] = await this.embedder.embed([card.content]);
    const applied = await this.index.upsert({
      cardId: card.id,
      authorId: card.authorId,
      content: card.content,
      tags: card.tags,
      link: card.link,
      private: card.private,
      collectionIds: card.collectionIds,
      vector: vector!,
      vectorPointId: existing?.vectorPointId ?? newId(),
      ...(card.collisionOf ? { collisionOf: card.collisionOf } : {}),
      updatedAt: card.updatedAt ?? occurredAt,
    });
    if (applied && !card.collisionOf) await this.announce(card.id);
  }

  private async announce(cardId: string): Promise<void> {
    const card = await this.index.get(cardId);
    if (!card || card.collisionOf) return;
    const payload = events.CardIndexed.encode({ eventId: newId(), occurredAt: new Date(), cardId, vectorPointId: card.vectorPointId }).finish();
    await this.bus.publish([{ topic: Topics.index, key: cardId, payload }]);
  }
}
