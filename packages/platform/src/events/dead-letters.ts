/**
 * Where a dead letter stands: `dead` until an operator replays it; `replay-requested` once handed back to the consumer
 * group that failed it and not yet taken by that group; `replayed` once the group has taken it (when the handler fails
 * again the event is dead-lettered again, as a letter of its own on Kafka, as this letter back to `dead` on SQLite).
 */
export type DeadLetterState = 'dead' | 'replay-requested' | 'replayed';

/** An event a consumer group gave up on after its handler failed on every attempt. */
export interface DeadLetter {
  /** The letter's identity in its store, for selecting it (`--id`). */
  id: string;
  topic: string;
  /** The consumer group whose handler failed it; other groups handled the event. */
  group: string;
  key: string;
  /** The event's event_id (field 1 of every event message), when the topic is known. */
  eventId: string | undefined;
  payload: Uint8Array;
  failedAt: Date;
  error: string;
  /** Deliveries of the last failure (engine outages do not count). */
  attempts: number;
  state: DeadLetterState;
}

/** Which letters a list or replay is about; every field given must match. */
export interface DeadLetterSelection {
  topic?: string;
  group?: string;
  /** Letter ids as listed (an empty list selects none). */
  ids?: readonly string[];
}

/**
 * The dead letters of the event bus (the embedded log's dead_letters table, Kafka's `<topic>.dlq` topics) and the
 * way back: replay hands a letter to the consumer group that failed it, never to the other groups of its topic.
 * Consumers are idempotent by event id, so a letter delivered twice changes nothing.
 */
export interface DeadLetters {
  /** The selected letters, oldest first. */
  list(selection: DeadLetterSelection): Promise<DeadLetter[]>;
  /**
   * Hands the selected letters in state `dead` back to the groups that failed them and returns those; letters already
   * replayed or requested are left alone, so a second replay does nothing. The groups' running consumers deliver them.
   */
  replay(selection: DeadLetterSelection): Promise<DeadLetter[]>;
  close(): Promise<void>;
}

/** Whether a letter is one of the selection. */
export function isSelected(letter: Pick<DeadLetter, 'id' | 'topic' | 'group'>, selection: DeadLetterSelection): boolean {
  return (
    (selection.topic === undefined || letter.topic === selection.topic) &&
    (selection.group === undefined || letter.group === selection.group) &&
    (selection.ids === undefined || selection.ids.includes(letter.id))
  );
}
