import { MAX_CONTENT_CHARS, MAX_LINK_CHARS, MAX_TAG_CHARS, MAX_TAGS } from '@cards/card-rules';
import { MAX_EVENT_BYTES, newId, Topics, type OutgoingEvent } from '@cards/platform';
import { events } from '@cards/proto';
import type { Card, Collection } from '../domain/model';

/**
 * Bytes of the largest card event without collection ids: 4 UTF-8 bytes per code point of text and tags (each tag
 * with 3 bytes of framing), 3 per UTF-16 unit of the link, 1 KiB for ids, times, flags and framing.
 */
const LARGEST_CARD_EVENT_BYTES = 4 * MAX_CONTENT_CHARS + MAX_TAGS * (4 * MAX_TAG_CHARS + 3) + 3 * MAX_LINK_CHARS + 1024;

/** A listed collection id: 36 characters of a UUID, its field tag and its length. */
const LISTED_ID_BYTES = 38;

/**
 * Most collection ids a card event still lists (CardSnapshot.collection_ids, deprecated): search of this release reads
 * a card's collections from bookmark events alone; an older search service still reads the list during a rolling
 * deploy, as the card's whole membership. As many as fit beside the largest card in MAX_EVENT_BYTES (what Kafka
 * carries), rounded down to thousands: 20,000 ids (~760 KB) beside at most ~200 KB of card. The older search service
 * drops a card whose list is empty from its collections, so only cards beyond the cap depend on search being deployed
 * first; above ~22,000 to 27,000 collections their events never fitted in a Kafka message anyway.
 */
export const MAX_LISTED_COLLECTIONS = Math.floor((MAX_EVENT_BYTES - LARGEST_CARD_EVENT_BYTES) / LISTED_ID_BYTES / 1000) * 1000;

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

/**
 * A card that changed only its place in a duplicate group (a collision detached, moved to another root, or a root that
 * joined an earlier one): nothing of its content changed, and its index id is left for search to give.
 */
export const cardRehomed = (card: Card, collectionIds: readonly string[]) =>
  cardUpdated({ ...card, vectorPointId: null }, collectionIds, { contentChanged: false, linkChanged: false, privacyChanged: false });

/**
 * The card as stored, told again so search can (re)build its index from it: an update that changed nothing, so
 * verification fetches no page and nothing is notified; search stores it when it does not hold the card and ignores
 * it when it holds a newer one. Its collections are left to the bookmark events (see bookmarkRepublished).
 */
export const cardRepublished = (card: Card) => cardUpdated(card, [], { contentChanged: false, linkChanged: false, privacyChanged: false });

export const cardDeleted = (card: Card, promotedCardId: string | null) =>
  cardEvent(card.id, { $case: 'deleted', value: { cardId: card.id, authorId: card.authorId, promotedCardId: promotedCardId ?? undefined } });

/**
 * A bookmark added or removed at `at`: search orders the changes of one (collection, card) pair by it and drops one
 * older than what it holds, so an addition is dated as stored and a removal by datedAfter the addition.
 */
export const bookmarkChanged = (collectionId: string, cardId: string, added: boolean, at: Date = new Date()): OutgoingEvent => ({
  topic: Topics.bookmark,
  key: cardId,
  payload: events.BookmarkEvent.encode({ eventId: newId(), occurredAt: at, collectionId, cardId, added }).finish(),
});

/**
 * When to date a change that follows one made at `previous` (a card's edit after its last change, a bookmark's removal
 * after its addition): `now`, but later than `previous` even when that was dated by a replica whose clock runs ahead of
 * this one's (or before a clock was set back): search keeps the latest-dated change of a card or bookmark and drops
 * older ones, so an earlier date would lose this change there. An unreadable `previous` leaves `now`.
 */
/**
 * Attempts of a card or collection change written only on the version it read: each one that finds another change
 * landed between its read and its write reads again; past this many, the caller is answered UNAVAILABLE (try again).
 */
export const VERSIONED_WRITE_ATTEMPTS = 5;

export const datedAfter = (previous: Date, now: Date = new Date()): Date => {
  const after = previous.getTime() + 1;
  return after > now.getTime() ? new Date(after) : now;
};

/**
 * A stored bookmark told again, dated when it was added: a removal made after it (dated later) still wins in search
 * whichever of the two arrives last.
 */
export const bookmarkRepublished = (collectionId: string, cardId: string, addedAt: Date): OutgoingEvent => ({
  topic: Topics.bookmark,
  key: cardId,
  payload: events.BookmarkEvent.encode({ eventId: newId(), occurredAt: addedAt, collectionId, cardId, added: true }).finish(),
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

/**
 * A verification result from search that cards kept (the card still links to the page verified and holds no newer
 * result), announced again under a new event id on cards.verification.v1: what notifications tells the author.
 */
export const verificationKept = (verified: events.CardVerified): OutgoingEvent => ({
  topic: Topics.keptVerification,
  key: verified.cardId,
  payload: events.CardVerified.encode({ ...verified, eventId: newId(), occurredAt: new Date() }).finish(),
});
