import { events } from '@cards/proto';
import { Topics } from './event-bus';

const MESSAGE_OF_TOPIC: Record<string, { decode(payload: Uint8Array): { eventId: string } }> = {
  [Topics.card]: events.CardEvent,
  [Topics.bookmark]: events.BookmarkEvent,
  [Topics.collection]: events.CollectionEvent,
  [Topics.verification]: events.CardVerified,
  [Topics.keptVerification]: events.CardVerified,
  [Topics.index]: events.CardIndexed,
  [Topics.indexRebuild]: events.SearchIndexRebuildRequested,
  [Topics.file]: events.FileEvent,
};

/** The event_id of an event on one of the application's topics; undefined for other topics or undecodable bytes. */
export function eventIdOf(topic: string, payload: Uint8Array): string | undefined {
  try {
    return MESSAGE_OF_TOPIC[topic]?.decode(payload).eventId || undefined;
  } catch {
    return undefined;
  }
}
