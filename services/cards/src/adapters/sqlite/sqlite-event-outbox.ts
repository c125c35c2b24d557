import { appendToSqliteOutbox, SqliteOutboxStore, type OutgoingEvent, type SqliteDatabase } from '@cards/platform';
import type { EventOutbox } from '../../domain/ports';

/** The outbox table of the cards service's SQLite file, which the running service's relay drains. */
export class SqliteEventOutbox implements EventOutbox {
  private readonly store: SqliteOutboxStore;

  constructor(private readonly db: SqliteDatabase) {
    this.store = new SqliteOutboxStore(db);
  }

  async append(events: readonly OutgoingEvent[]): Promise<void> {
    this.db.transaction(() => appendToSqliteOutbox(this.db, events))();
  }

  pending(): Promise<number> {
    return this.store.count();
  }
}
