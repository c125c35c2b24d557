import { newId, Topics, type OutgoingEvent } from '@cards/platform';
import { events } from '@cards/proto';
import type { Card, Collection } from '../domain/model';

/**
 * Most collection ids a card event still lists (CardSnapshot.collection_ids, deprecated): search of this release reads
 * a card's collections from bookmark events alone; an older search service still reads the list during a rolling
 * deploy. 1,000 ids are ~38 KB, so a card event stays far below Kafka's 1 MB message limit however popular the card.
 */
export const MAX_LISTED_COLLECTIONS = 1_000;

function snapshot(card: Card, collectionIds: readonly string[]): events.CardSnapshot {
  return {
    id: card.id,
    authorId: card.authorId,
    content: card.content,
    tags: card.tags,
    link: card.link,
    private: card.private,
    collisionOf: card.collisionOf ?? undefined,
    createdAt: card.createdAt,
    updatedAt: card.updatedAt,
    collectionIds: collectionIds.length <= MAX_LISTED_COLLECTIONS ? [...collectionIds] : [],
  };
}

const cardEvent = (key: string, kind: events.CardEvent['kind']): OutgoingEvent => ({
  topic: Topics.card,
  key,
  payload: events.CardEvent.encode({ eventId: newId(), occurredAt: new Date(), kind }).finish(),
});

export const cardCreated = (card: Card, collectionIds: readonly string[] = []) => cardEvent(card.id, { $case: 'created', value: { card: snapshot(card, collectionIds) } });

export const cardUpdated = (card: Card, collectionIds: readonly string[], changes: { contentChanged: boolean; linkChanged: boolean; privacyChanged: boolean }) =>
  cardEvent(card.id, { $case: 'updated', value: { card: snapshot(card, collectionIds), ...changes } });

export const cardDeleted = (card: Card, promotedCardId: string | null) =>
  cardEvent(card.id, { $case: 'deleted', value: { cardId: card.id, authorId: card.authorId, promotedCardId: promotedCardId ?? undefined } });

export const bookmarkChanged = (collectionId: string, cardId: string, added: boolean): OutgoingEvent => ({
  topic: Topics.bookmark,
  key: cardId,
  payload: events.BookmarkEvent.encode({ eventId: newId(), occurredAt: new Date(), collectionId, cardId, added }).finish(),
});

export const collectionCreated = (c: Collection): OutgoingEvent => ({
  topic: Topics.collection,
  key: c.id,
  payload: events.CollectionEvent.encode(
    events.CollectionEvent.fromPartial({
      eventId: newId(),
      occurredAt: new Date(),
      kind: { $case: 'created', value: { collectionId: c.id, authorId: c.authorId, name: c.name, isPublic: c.isPublic, fileId: c.fileId ?? undefined } },
    }),
  ).finish(),
});

export const collectionDeleted = (c: Collection): OutgoingEvent => ({
  topic: Topics.collection,
  key: c.id,
  payload: events.CollectionEvent.encode(events.CollectionEvent.fromPartial({ eventId: newId(), occurredAt: new Date(), kind: { $case: 'deleted', value: { collectionId: c.id, authorId: c.authorId } } })).finish(),
});
