import type { SqliteDatabase } from '../sqlite';
import { isSelected, type DeadLetter, type DeadLetters, type DeadLetterSelection, type DeadLetterState } from './dead-letters';
import { eventIdOf } from './event-id';
import { openEventLogDatabase } from './sqlite-event-log';

interface DeadLetterRow {
  group_id: string;
  topic: string;
  seq: number;
  error: string;
  failed_at: string;
  attempts: number;
  replay_requested_at: string | null;
  replayed_at: string | null;
  key: string;
  payload: Buffer;
}

function idOf(row: Pick<DeadLetterRow, 'group_id' | 'topic' | 'seq'>): string {
  return `${row.group_id}/${row.topic}/${row.seq}`;
}

function stateOf(row: DeadLetterRow): DeadLetterState {
  if (row.replay_requested_at !== null) return 'replay-requested';
  return row.replayed_at !== null ? 'replayed' : 'dead';
}

function fromRow(row: DeadLetterRow): DeadLetter {
  const payload = new Uint8Array(row.payload);
  return {
    id: idOf(row),
    topic: row.topic,
    group: row.group_id,
    key: row.key,
    eventId: eventIdOf(row.topic, payload),
    payload,
    failedAt: new Date(row.failed_at),
    error: row.error,
    attempts: row.attempts,
    state: stateOf(row),
  };
}

/**
 * Dead letters of the embedded event log (the dead_letters table beside the events). A replay marks the letter
 * requested; the failed group's consumer, in whichever process runs it, delivers the event on its next poll.
 */
export class SqliteDeadLetters implements DeadLetters {
  private readonly db: SqliteDatabase;

  /** `path`: the event log's file, DATA_DIR/events/events.db. */
  constructor(path: string) {
    this.db = openEventLogDatabase(path);
  }

  async list(selection: DeadLetterSelection): Promise<DeadLetter[]> {
    return this.selectedRows(selection).map(fromRow);
  }

  async replay(selection: DeadLetterSelection): Promise<DeadLetter[]> {
    const request = this.db.prepare(
      'UPDATE dead_letters SET replay_requested_at = ? WHERE group_id = ? AND topic = ? AND seq = ? AND replay_requested_at IS NULL AND replayed_at IS NULL',
    );
    const now = new Date().toISOString();
    // Chosen and marked in one write transaction, so two operators replaying at once hand each letter back once.
    return this.db.transaction(() => {
      const requested: DeadLetter[] = [];
      for (const row of this.selectedRows(selection)) {
        if (stateOf(row) !== 'dead') continue;
        if (request.run(now, row.group_id, row.topic, row.seq).changes === 1) requested.push({ ...fromRow(row), state: 'replay-requested' });
      }
      return requested;
    }).immediate();
  }

  async close(): Promise<void> {
    this.db.close();
  }

  private selectedRows(selection: DeadLetterSelection): DeadLetterRow[] {
    const rows = this.db
      .prepare(
        `SELECT d.group_id, d.topic, d.seq, d.error, d.failed_at, d.attempts, d.replay_requested_at, d.replayed_at, e.key, e.payload
         FROM dead_letters d JOIN events e ON e.seq = d.seq AND e.topic = d.topic
         WHERE (@topic IS NULL OR d.topic = @topic) AND (@group IS NULL OR d.group_id = @group) ORDER BY d.seq, d.group_id`,
      )
      .all({ topic: selection.topic ?? null, group: selection.group ?? null }) as DeadLetterRow[];
    return rows.filter((row) => isSelected({ id: idOf(row), topic: row.topic, group: row.group_id }, selection));
  }
}
