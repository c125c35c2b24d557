import { EventTooLargeError, NotDueYetError } from '../errors';
import type { Logger } from 'pino';
import { monotonicNow, repeatedWarningLog } from '../repeated-warning';

/** One message on the bus. The key is the aggregate id: messages with one key are delivered in order. */
export interface OutgoingEvent {
  topic: string;
  key: string;
  /** Protobuf bytes of the topic's message type (proto/events/v1). */
  payload: Uint8Array;
}

/**
 * Largest event (key and payload bytes) a service may write to its outbox: what every event bus adapter publishes.
 * Kafka is the narrowest: a broker refuses a record batch over message.max.bytes (1,048,588 bytes by default); the
 * rest is left for the batch's framing and the headers a dead-lettered event carries (~2.3 KB).
 */
export const MAX_EVENT_BYTES = 1_000_000;

/** Bytes an event takes on the bus: its key (UTF-8) and payload. */
export function eventBytes(event: OutgoingEvent): number {
  return Buffer.byteLength(event.key) + event.payload.byteLength;
}

/** Throws EventTooLargeError when one of the events is over MAX_EVENT_BYTES; outboxes call it before writing any. */
export function assertPublishable(events: readonly OutgoingEvent[]): void {
  for (const event of events) {
    const bytes = eventBytes(event);
    if (bytes > MAX_EVENT_BYTES) {
      throw new EventTooLargeError(`The change is too large to pass on to the other services: its ${event.topic} event would be ${bytes} bytes, above the limit of ${MAX_EVENT_BYTES}`);
    }
  }
}

export interface DeliveredEvent extends OutgoingEvent {
  /** Position in the topic; grows with every message of a topic. */
  offset: string;
  /** How many times this event has been handed to this group before (0 on first delivery). */
  attempt: number;
  /**
   * How many of those deliveries failed counted against maxAttempts (failures while an engine or a peer was not ready
   * are not): the delivery is the last before the dead letters when this + 1 reaches maxAttempts. Unset: `attempt`.
   */
  countedFailures?: number;
}

export type EventHandler = (event: DeliveredEvent) => Promise<void>;

export interface SubscribeOptions {
  /** Consumer group: each group receives every message once, its members share the work. */
  group: string;
  topics: string[];
  handler: EventHandler;
  /** Failed deliveries are retried with backoff this many times, then go to the dead-letter store. */
  maxAttempts?: number;
  /**
   * Optional: receives runs of consecutive events the bus holds (up to maxBatch, in delivery order; on Kafka, of one
   * partition) instead of one at a time, for a consumer that applies many events at lower cost than one by one. The
   * run is committed only after this resolves. When it rejects, the run is offered again as its two halves, each the
   * same way, down to single events, which go to `handler` (with its retries and dead-lettering): one bad event never
   * blocks or dead-letters the others, and it is found in O(log n) runs, not n one-event calls. A run may thus be
   * offered again in part, so batchHandler, like handler, must be idempotent.
   */
  batchHandler?: (events: DeliveredEvent[]) => Promise<void>;
  /** Largest run given to batchHandler (default 100). */
  maxBatch?: number;
}

/** The runs a subscription hands to its batchHandler: up to maxBatch of the events that are in hand now. */
export function batchLength(options: Pick<SubscribeOptions, 'batchHandler' | 'maxBatch'>, available: number): number {
  if (!options.batchHandler) return 1;
  return Math.max(1, Math.min(available, options.maxBatch ?? 100));
}

export interface Subscription {
  /** Stops fetching and waits for the message in hand to finish. */
  close(): Promise<void>;
}

/**
 * The event bus port: at-least-once delivery, offsets committed only after the handler succeeds,
 * so a crash redelivers instead of losing. Handlers must therefore be idempotent.
 */
export interface EventBus {
  publish(events: OutgoingEvent[]): Promise<void>;
  subscribe(options: SubscribeOptions): Promise<Subscription>;
  /**
   * Whether the consumer group has committed a position on any of `topics`: it handled at least one of their events
   * at some time, in this process or another (a consumer of a restarted or replaced process). False for a group that
   * never committed one (a new system, a new group); a group that merely subscribed, or whose only subscriber is still
   * catching up on its first event, has not. Read without joining the group, so ask before subscribe() to learn what the
   * group had done before this start. On Kafka, committed offsets expire with the broker's offsets.retention.minutes
   * (7 days by default) once the group has no member: a group stopped longer than that reads as never committed.
   */
  hasCommitted(group: string, topics: readonly string[]): Promise<boolean>;
  /** Resolves once the bus can be used (for readiness); rejects with a clear message otherwise. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** Topic names, <service>.<aggregate>.v1. */
export const Topics = {
  card: 'cards.card.v1',
  bookmark: 'cards.bookmark.v1',
  collection: 'cards.collection.v1',
  verification: 'search.verification.v1',
  /** A verification result cards kept (CardVerified as search announced it, for the link the card still has). */
  keptVerification: 'cards.verification.v1',
  index: 'search.index.v1',
  /** Search found its index lost at start and asks cards to tell it every card again (SearchIndexRebuildRequested). */
  indexRebuild: 'search.index-rebuild.v1',
  file: 'files.file.v1',
} as const;

/** How often one event whose handler keeps failing uncounted (an engine or a peer not ready) logs a warning at most. */
export const WAITING_HANDLER_WARNING_EVERY_MS = 60_000;

/**
 * The warnings of one event's deliveries: every counted failure is logged; failures that are not counted (an engine or
 * a peer not ready, retried up to 5 s apart for as long as that lasts, maybe hours) log the first, then one line a
 * minute at most, with the failures since the last line (`failuresSinceLastWarning`); the others are debug lines.
 */
export function handlerFailureLog(logger: Logger, now: () => number = monotonicNow): (fields: Record<string, unknown>, counted: boolean) => void {
  const waiting = repeatedWarningLog(logger, 'event handler failed', { now, everyMs: WAITING_HANDLER_WARNING_EVERY_MS, countField: 'failuresSinceLastWarning' });
  return (fields, counted) => {
    if (counted) return logger.warn(fields, 'event handler failed');
    // Waiting by design (NotDueYetError) is no failure: a warning a minute per deleted file would read as one.
    if (fields.err instanceof NotDueYetError) return logger.debug(fields, 'event not due yet');
    waiting(fields);
  };
}
