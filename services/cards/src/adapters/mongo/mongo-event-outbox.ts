import { appendToMongoOutbox, MongoOutboxStore, type OutgoingEvent } from '@cards/platform';
import type { Db } from 'mongodb';
import type { EventOutbox } from '../../domain/ports';

/** The outbox collection of the cards service's MongoDB database, which the running replicas' relays drain. */
export class MongoEventOutbox implements EventOutbox {
  private readonly store: MongoOutboxStore;

  constructor(private readonly db: Db) {
    this.store = new MongoOutboxStore(db);
  }

  /** One ordered insertMany (an over-large event is refused before anything is written); cut midway, it keeps the first ones. */
  append(events: readonly OutgoingEvent[]): Promise<void> {
    return appendToMongoOutbox(this.db, events);
  }

  pending(): Promise<number> {
    return this.store.count();
  }
}
