import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { openSqlite, STORE_BUSY_TIMEOUT_MS, writeWhenUnlocked, type SqliteDatabase } from '../sqlite';
import { batchLength, handlerFailureLog, type DeliveredEvent, type EventBus, type OutgoingEvent, type SubscribeOptions, type Subscription } from './event-bus';
import { isEngineUnavailableError } from '../readiness';
import { errorMessage } from '../errors';
import { repeatedWarningLog } from '../repeated-warning';
import { ConfigError } from '../config';
import { deliverInHalves } from './deliver-in-halves';
import { CONSUMER_LAG_COUNT_CAP, consumerMetrics, countPublishedEvents, secondsSince, trackConsumerPositions, type ConsumerMetrics, type TopicPosition } from './event-metrics';

const MIGRATIONS = [
  `CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT NOT NULL, payload BLOB NOT NULL, published_at TEXT NOT NULL);
   CREATE INDEX events_topic_seq ON events(topic, seq);
   CREATE TABLE consumer_offsets (group_id TEXT NOT NULL, topic TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (group_id, topic));
   CREATE TABLE dead_letters (group_id TEXT NOT NULL, topic TEXT NOT NULL, seq INTEGER NOT NULL, error TEXT NOT NULL, failed_at TEXT NOT NULL, PRIMARY KEY (group_id, topic, seq));`,
  // An operator's replay (SqliteDeadLetters) sets replay_requested_at; the group's consumer delivers the event again and
  // sets replayed_at, or records the new failure and clears the request.
  `ALTER TABLE dead_letters ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE dead_letters ADD COLUMN replay_requested_at TEXT;
   ALTER TABLE dead_letters ADD COLUMN replayed_at TEXT;
   CREATE INDEX dead_letters_replay_requested ON dead_letters(group_id, replay_requested_at) WHERE replay_requested_at IS NOT NULL;`,
  // Retention keeps every event a dead letter points at: found by (topic, seq), whichever group failed it.
  `CREATE INDEX dead_letters_event ON dead_letters(topic, seq);`,
];

/** Opens the embedded event log's SQLite file with its schema up to date (for tools beside the bus, such as SqliteDeadLetters). */
export function openEventLogDatabase(path: string, options: { busyTimeoutMs?: number } = {}): SqliteDatabase {
  // A new file can hand pages freed by retention back (incremental_vacuum); one made before (auto_vacuum=NONE) is
  // switched by SqliteEventLog at open when small enough (docs/decisions.md, event log retention).
  return openSqlite(path, MIGRATIONS, { autoVacuum: 'incremental', ...options });
}

/**
 * The event log's own busy_timeout: its writes (publishing, a consumer's position, dead letters, retention) wait for
 * another process's lock between tries (writeWhenUnlocked), not inside SQLite, which blocked the whole process: one
 * service's relay or consumer meeting a held events.db froze every request of the process for up to 5 s at a time.
 */
const EVENT_LOG_BUSY_TIMEOUT_MS = 5;

/**
 * What the embedded log keeps (EVENT_LOG_RETENTION_HOURS, EVENT_LOG_UNCONSUMED_RETENTION_HOURS): like Kafka's
 * retention.ms, but an event is deleted only once every consumer group registered on its topic has committed past
 * it, up to `unconsumedMs`, past which it goes anyway (a warning names the groups that never got it). null: kept.
 */
export interface EventLogRetention {
  /** Age after which an event every group of its topic has committed is deleted; null keeps every event. */
  retentionMs: number | null;
  /** Age after which an event is deleted even if a group has not committed it; null: a group pins events for ever. */
  unconsumedMs: number | null;
  /** Pause between two pruning passes (default 60 s). */
  intervalMs?: number;
  /** Events deleted per transaction (default 1000); the pass yields to other work between two. */
  batchSize?: number;
  /**
   * A file made before incremental auto_vacuum (auto_vacuum=NONE) at most this large is switched at open (a VACUUM,
   * which rewrites it: ~0.1 s for 10 MB); a larger one is left to the operator (docs/deploy.md). Default 64 MiB.
   */
  switchAtOpenMaxBytes?: number;
}

/** Default of EventLogRetention.switchAtOpenMaxBytes: a VACUUM of this takes about a second, within busy_timeout. */
export const EVENT_LOG_SWITCH_AT_OPEN_MAX_BYTES = 64 * 1024 * 1024;

/** What one pruning pass did. */
export interface PruneResult {
  /** Events deleted because every group of their topic had committed them. */
  deleted: number;
  /** Events deleted past EVENT_LOG_UNCONSUMED_RETENTION_HOURS although a group had not committed them. */
  deletedUnconsumed: number;
  /** Free pages handed back to the file system (auto_vacuum=INCREMENTAL files only). */
  releasedPages: number;
}

const HOUR_MS = 3_600_000;

/**
 * EVENT_LOG_RETENTION_HOURS (default 168, 7 days) and EVENT_LOG_UNCONSUMED_RETENTION_HOURS (default 720, 30 days, or
 * the retention if longer): a positive number of hours, or -1 to keep events for ever. The second must not be below
 * the first (a ConfigError).
 */
export function eventLogRetentionOf(env: Record<string, string | undefined> = process.env): EventLogRetention {
  const hours = (name: string, raw: string | undefined, fallback: number): number | null => {
    if (raw === undefined || raw.trim() === '') return fallback;
    const n = Number(raw);
    if (n === -1) return null;
    // Up to 100 years, so that now minus it is still a date.
    if (!Number.isFinite(n) || n <= 0 || n > 876_000) throw new ConfigError([`${name} must be a positive number of hours (at most 876000) or -1 (keep for ever), got "${raw}"`]);
    return n;
  };
  const retention = hours('EVENT_LOG_RETENTION_HOURS', env.EVENT_LOG_RETENTION_HOURS, 168);
  // Unset, it is 30 days, or the retention when that is longer.
  const unconsumed = hours('EVENT_LOG_UNCONSUMED_RETENTION_HOURS', env.EVENT_LOG_UNCONSUMED_RETENTION_HOURS, Math.max(720, retention ?? 0));
  if (retention === null && env.EVENT_LOG_UNCONSUMED_RETENTION_HOURS?.trim() && unconsumed !== null) {
    throw new ConfigError(['EVENT_LOG_UNCONSUMED_RETENTION_HOURS is set while EVENT_LOG_RETENTION_HOURS is -1 (every event kept): unset it, or give EVENT_LOG_RETENTION_HOURS a number of hours']);
  }
  if (retention !== null && unconsumed !== null && unconsumed < retention) {
    throw new ConfigError([`EVENT_LOG_UNCONSUMED_RETENTION_HOURS (${unconsumed}) must not be below EVENT_LOG_RETENTION_HOURS (${retention})`]);
  }
  return { retentionMs: retention === null ? null : retention * HOUR_MS, unconsumedMs: retention === null || unconsumed === null ? null : unconsumed * HOUR_MS };
}

/** A prepared write of the consumer's. */
type Statement = { run(...params: unknown[]): unknown };

interface EventRow {
  seq: number;
  topic: string;
  key: string;
  payload: Buffer;
}

export interface SqliteEventLogOptions {
  path: string;
  logger: Logger;
  /** How often consumers look for events written by other processes. */
  pollIntervalMs?: number;
  /** First retry delay; doubles per attempt, capped at 5 s. */
  retryBaseMs?: number;
  /** Deletes old events in the background (createEventBus: eventLogRetentionOf()); unset, the log keeps everything. */
  retention?: EventLogRetention;
}

/**
 * Durable local event log in one SQLite file: the embedded stand-in for Kafka.
 * Messages survive restarts; each consumer group keeps its own committed offset per topic.
 */
export class SqliteEventLog implements EventBus {
  private readonly db: SqliteDatabase;
  private readonly wakeups = new EventEmitter();
  private readonly subscriptions = new Set<SqliteSubscription>();
  private closed = false;
  private pruneTimer: NodeJS.Timeout | undefined;
  private pruning: Promise<PruneResult> | undefined;

  constructor(private readonly options: SqliteEventLogOptions) {
    this.db = openEventLogDatabase(options.path, { busyTimeoutMs: EVENT_LOG_BUSY_TIMEOUT_MS });
    this.wakeups.setMaxListeners(100);
    const retention = options.retention;
    if (retention && retention.retentionMs !== null) {
      if (this.db.pragma('auto_vacuum', { simple: true }) !== 2) this.switchToIncrementalVacuum(retention.switchAtOpenMaxBytes ?? EVENT_LOG_SWITCH_AT_OPEN_MAX_BYTES);
      this.pruneTimer = setInterval(() => {
        if (this.pruning) return;
        this.prune().catch((err: unknown) => {
          if (!this.closed) options.logger.error({ err }, 'event log retention failed; trying again later');
        });
      }, retention.intervalMs ?? 60_000);
      this.pruneTimer.unref();
    }
  }

  /**
   * A file made before incremental auto_vacuum (NONE) never shrinks: freed pages are reused, not handed back. Up to
   * `maxBytes` it is switched once, here at open: the mode set, then a VACUUM rewrites the file in it (other processes
   * on the file keep reading their snapshot; their writes wait, within busy_timeout, for a VACUUM this small). A larger
   * file, or one another process keeps busy past busy_timeout, stays as it is, with a line saying how to switch it
   * (docs/deploy.md); the next start tries again.
   */
  private switchToIncrementalVacuum(maxBytes: number): void {
    const { logger, path } = this.options;
    const bytes = (this.db.pragma('page_count', { simple: true }) as number) * (this.db.pragma('page_size', { simple: true }) as number);
    const manual = 'sqlite3 events.db "PRAGMA auto_vacuum = INCREMENTAL; VACUUM;"';
    if (bytes > maxBytes) {
      logger.info(
        { path, bytes, switchAtOpenMaxBytes: maxBytes },
        `the event log file was made without auto_vacuum and is too large to switch at start: space freed by retention is reused for new events, but the file does not shrink (to shrink it once, with the services stopped: ${manual})`,
      );
      return;
    }
    const started = performance.now();
    try {
      // At open, before any request: the switch may wait for another process as long as opening does.
      this.db.pragma(`busy_timeout = ${STORE_BUSY_TIMEOUT_MS}`);
      this.db.pragma('auto_vacuum = INCREMENTAL');
      this.db.exec('VACUUM');
    } catch (err) {
      logger.warn({ err, path, bytes }, `could not switch the event log file to incremental auto_vacuum at start (tried again at the next start; or, with the services stopped: ${manual})`);
      return;
    } finally {
      this.db.pragma(`busy_timeout = ${EVENT_LOG_BUSY_TIMEOUT_MS}`);
    }
    const after = (this.db.pragma('page_count', { simple: true }) as number) * (this.db.pragma('page_size', { simple: true }) as number);
    logger.info({ path, bytesBefore: bytes, bytesAfter: after, ms: Math.round(performance.now() - started) }, 'the event log file was switched to incremental auto_vacuum: space freed by retention is handed back from now on');
  }

  async publish(events: OutgoingEvent[]): Promise<void> {
    if (this.closed) throw new Error('event log is closed');
    if (events.length === 0) return;
    const insert = this.db.prepare('INSERT INTO events (topic, key, payload, published_at) VALUES (?, ?, ?, ?)');
    const now = new Date().toISOString();
    await writeWhenUnlocked(this.db, () =>
      this.db.transaction(() => {
        for (const e of events) insert.run(e.topic, e.key, Buffer.from(e.payload), now);
      })(),
    );
    countPublishedEvents(events);
    this.wakeups.emit('published');
  }

  async subscribe(options: SubscribeOptions): Promise<Subscription> {
    // The group is registered on its topics before it reads anything, so retention keeps what it has not committed,
    // from the first event on, until it commits (or the events pass EVENT_LOG_UNCONSUMED_RETENTION_HOURS).
    const register = this.db.prepare('INSERT OR IGNORE INTO consumer_offsets (group_id, topic, seq) VALUES (?, ?, 0)');
    await writeWhenUnlocked(this.db, () =>
      this.db.transaction(() => {
        for (const topic of options.topics) register.run(options.group, topic);
      })(),
    );
    const subscription = new SqliteSubscription(this.db, this.wakeups, options, this.options);
    this.subscriptions.add(subscription);
    subscription.start();
    return {
      close: async () => {
        this.subscriptions.delete(subscription);
        await subscription.close();
      },
    };
  }

  async ready(): Promise<void> {
    this.db.prepare('SELECT 1').get();
  }

  /** A group's row is written with seq 0 when it subscribes; a commit moves it to the seq of the event handled. */
  async hasCommitted(group: string, topics: readonly string[]): Promise<boolean> {
    if (this.closed) throw new Error('event log is closed');
    if (topics.length === 0) return false;
    const row = this.db
      .prepare(`SELECT 1 AS found FROM consumer_offsets WHERE group_id = ? AND seq > 0 AND topic IN (${topics.map(() => '?').join(', ')}) LIMIT 1`)
      .get(group, ...topics) as { found: number } | undefined;
    return row !== undefined;
  }

  /** Events not yet committed by a group, for tests and readiness reports. */
  lag(group: string, topic: string): number {
    const row = this.db
      .prepare(`SELECT COUNT(*) AS n FROM events WHERE topic = ? AND seq > COALESCE((SELECT seq FROM consumer_offsets WHERE group_id = ? AND topic = ?), 0)`)
      .get(topic, group, topic) as { n: number };
    return row.n;
  }

  /**
   * One retention pass (the background timer runs one every `retention.intervalMs`; tests call it with a clock of their
   * own). Per topic, deletes the events published before now - retentionMs up to the lowest offset committed by the
   * groups registered on the topic; then, past now - unconsumedMs, the ones those groups did not commit either (a
   * warning per group). An event a dead letter points at is kept, so it can still be listed and replayed, as Kafka's
   * `<topic>.dlq` keeps it (retention.ms=-1). Batches of `batchSize` in their own transactions, yielding between
   * them; afterwards an auto_vacuum=INCREMENTAL file hands its free pages back, also in batches.
   */
  async prune(now: number = Date.now()): Promise<PruneResult> {
    if (this.pruning) return this.pruning;
    this.pruning = this.pruneOnce(now).finally(() => {
      this.pruning = undefined;
    });
    return this.pruning;
  }

  private async pruneOnce(now: number): Promise<PruneResult> {
    const result: PruneResult = { deleted: 0, deletedUnconsumed: 0, releasedPages: 0 };
    const retention = this.options.retention;
    if (!retention || retention.retentionMs === null || this.closed) return result;
    const batchSize = retention.batchSize ?? 1000;
    const yieldToOthers = () => new Promise<void>((resolve) => setImmediate(resolve));
    // seq grows with publication, so "older than the cutoff" is "before the first event published at or after it",
    // found by a binary search on seq (index seeks, whatever the size of the log or of what is kept).
    const atOrAfter = this.db.prepare('SELECT seq, published_at FROM events WHERE seq >= ? ORDER BY seq LIMIT 1');
    const firstSeqSince = (cutoff: number): number => {
      const since = new Date(cutoff).toISOString();
      const range = this.db.prepare('SELECT MIN(seq) AS lo, MAX(seq) AS hi FROM events').get() as { lo: number | null; hi: number | null };
      if (range.lo === null || range.hi === null) return 0;
      let lo = range.lo;
      let hi = range.hi + 1;
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        const row = atOrAfter.get(mid) as { seq: number; published_at: string } | undefined;
        if (!row || row.seq >= hi) hi = mid;
        else if (row.published_at >= since) hi = row.seq;
        else lo = row.seq + 1;
      }
      return lo;
    };
    // Distinct topics through the (topic, seq) index, one seek per topic.
    const topics = (
      this.db
        .prepare(
          `WITH RECURSIVE t(topic) AS (SELECT MIN(topic) FROM events UNION ALL SELECT (SELECT MIN(topic) FROM events WHERE topic > t.topic) FROM t WHERE t.topic IS NOT NULL)
           SELECT topic FROM t WHERE topic IS NOT NULL`,
        )
        .all() as { topic: string }[]
    ).map((r) => r.topic);
    const groupsOf = this.db.prepare('SELECT group_id, seq FROM consumer_offsets WHERE topic = ?');
    const deleteBatch = this.db.prepare(
      `DELETE FROM events WHERE seq IN (
         SELECT e.seq FROM events e WHERE e.topic = ? AND e.seq < ?
         AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.topic = e.topic AND d.seq = e.seq) ORDER BY e.seq LIMIT ?)`,
    );
    const countKept = this.db.prepare(
      `SELECT COUNT(*) AS n FROM events e WHERE e.topic = ? AND e.seq > ? AND e.seq < ?
       AND NOT EXISTS (SELECT 1 FROM dead_letters d WHERE d.topic = e.topic AND d.seq = e.seq)`,
    );
    /** Deletes the topic's events with seq below `end` (dead letters' aside), batch by batch. */
    const deleteBelow = async (topic: string, end: number): Promise<number> => {
      let total = 0;
      for (;;) {
        if (this.closed) return total;
        const n = (await writeWhenUnlocked(this.db, () => deleteBatch.run(topic, end, batchSize))).changes;
        total += n;
        if (n < batchSize) return total;
        await yieldToOthers();
      }
    };
    const retainedFrom = firstSeqSince(now - retention.retentionMs);
    const unconsumedFrom = retention.unconsumedMs === null ? null : firstSeqSince(now - retention.unconsumedMs);
    for (const topic of topics) {
      if (this.closed) return result;
      const groups = groupsOf.all(topic) as { group_id: string; seq: number }[];
      const committedByAll = groups.length === 0 ? Infinity : Math.min(...groups.map((g) => g.seq));
      result.deleted += await deleteBelow(topic, Math.min(retainedFrom, committedByAll + 1));
      if (unconsumedFrom === null || committedByAll + 1 >= unconsumedFrom) continue;
      for (const g of groups) {
        if (g.seq + 1 >= unconsumedFrom) continue;
        const lost = (countKept.get(topic, g.seq, unconsumedFrom) as { n: number }).n;
        if (lost === 0) continue;
        this.options.logger.warn(
          { group: g.group_id, topic, events: lost, committedSeq: g.seq, unconsumedRetentionHours: retention.unconsumedMs! / HOUR_MS },
          'event log retention: deleting events a consumer group has not committed (older than EVENT_LOG_UNCONSUMED_RETENTION_HOURS); that group never gets them. Is the group still running, or gone for good?',
        );
      }
      result.deletedUnconsumed += await deleteBelow(topic, unconsumedFrom);
    }
    if (result.deleted + result.deletedUnconsumed > 0 && this.db.pragma('auto_vacuum', { simple: true }) === 2) {
      while (!this.closed && (this.db.pragma('freelist_count', { simple: true }) as number) > 0) {
        const before = this.db.pragma('page_count', { simple: true }) as number;
        await writeWhenUnlocked(this.db, () => this.db.pragma(`incremental_vacuum(${batchSize})`));
        const released = before - (this.db.pragma('page_count', { simple: true }) as number);
        result.releasedPages += released;
        if (released === 0) break;
        await yieldToOthers();
      }
    }
    if (result.deleted + result.deletedUnconsumed > 0) this.options.logger.info({ ...result }, 'event log retention: old events deleted');
    return result;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await this.pruning?.catch(() => undefined);
    await Promise.all([...this.subscriptions].map((s) => s.close()));
    this.subscriptions.clear();
    this.db.close();
  }
}

class SqliteSubscription {
  private running = false;
  private loop: Promise<void> | undefined;
  private wake: (() => void) | undefined;
  private readonly onPublished = () => this.wake?.();
  private timer: NodeJS.Timeout | undefined;
  private readonly metrics: ConsumerMetrics;
  private untrack: (() => void) | undefined;
  /** A write of the consumer's own (its position, a dead letter) failing, for as long as that lasts (a full disk). */
  private readonly writeFailed: (fields: Record<string, unknown>) => void;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly wakeups: EventEmitter,
    private readonly options: SubscribeOptions,
    private readonly logOptions: SqliteEventLogOptions,
  ) {
    this.metrics = consumerMetrics(options.group);
    this.writeFailed = repeatedWarningLog(
      logOptions.logger,
      'event log: could not record what a consumer did (its position or a dead letter); trying again, the event counts as undelivered until then',
    );
  }

  start(): void {
    this.running = true;
    this.wakeups.on('published', this.onPublished);
    this.untrack = trackConsumerPositions(this.options.group, () => this.positions());
    this.loop = this.run();
  }

  /**
   * Per topic, the events past the group's committed offset (counted up to CONSUMER_LAG_COUNT_CAP) and the publication
   * time of the first of them: index range reads on events_topic_seq, at each scrape of /metrics.
   */
  private positions(): TopicPosition[] {
    const { group, topics } = this.options;
    const offsetOf = this.db.prepare('SELECT seq FROM consumer_offsets WHERE group_id = ? AND topic = ?');
    const count = this.db.prepare(`SELECT COUNT(*) AS n FROM (SELECT 1 FROM events WHERE topic = ? AND seq > ? LIMIT ${CONSUMER_LAG_COUNT_CAP})`);
    const first = this.db.prepare('SELECT published_at FROM events WHERE topic = ? AND seq > ? ORDER BY seq LIMIT 1');
    return topics.map((topic) => {
      const committed = (offsetOf.get(group, topic) as { seq: number } | undefined)?.seq ?? 0;
      const oldest = first.get(topic, committed) as { published_at: string } | undefined;
      return { topic, lag: (count.get(topic, committed) as { n: number }).n, oldestMs: oldest ? Date.parse(oldest.published_at) : null };
    });
  }

  async close(): Promise<void> {
    this.running = false;
    this.untrack?.();
    this.wakeups.off('published', this.onPublished);
    this.wake?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { group, topics } = this.options;
    // One indexed range read per topic (events_topic_seq) from that topic's committed offset, merged in
    // log order: a single query with the offset in a correlated subquery scans the whole log per poll.
    const offsetOf = this.db.prepare('SELECT seq FROM consumer_offsets WHERE group_id = ? AND topic = ?');
    const after = this.db.prepare('SELECT seq, topic, key, payload FROM events WHERE topic = ? AND seq > ? ORDER BY seq LIMIT ?');
    const batch = 100;
    const next = (): EventRow[] => {
      const rows: EventRow[] = [];
      for (const topic of topics) {
        const committed = (offsetOf.get(group, topic) as { seq: number } | undefined)?.seq ?? 0;
        rows.push(...(after.all(topic, committed, batch) as EventRow[]));
      }
      return topics.length === 1 ? rows : rows.sort((a, b) => a.seq - b.seq).slice(0, batch);
    };
    const commit = this.db.prepare(
      `INSERT INTO consumer_offsets (group_id, topic, seq) VALUES (?, ?, ?)
       ON CONFLICT (group_id, topic) DO UPDATE SET seq = excluded.seq WHERE excluded.seq > consumer_offsets.seq`,
    );
    const deadLetter = this.db.prepare('INSERT OR REPLACE INTO dead_letters (group_id, topic, seq, error, failed_at, attempts) VALUES (?, ?, ?, ?, ?, ?)');
    // Anything that escapes one pass (a write refused by a full disk between two records) is logged and the pass tried
    // again after a pause: the loop never ends the process, and what was not committed is delivered again.
    for (let failures = 0; this.running; ) {
      try {
        if (!(await this.deliverOnce(next, commit, deadLetter))) return;
        failures = 0;
      } catch (err) {
        if (!this.running) return;
        this.writeFailed({ group, error: errorMessage(err).slice(0, 300), code: (err as { code?: unknown }).code });
        await this.sleep(this.backoff(failures++));
      }
    }
  }

  /** First retry delay, doubling per failure, capped at 5 s. */
  private backoff(failures: number): number {
    return Math.min(5000, (this.logOptions.retryBaseMs ?? 100) * 2 ** Math.min(failures, 16));
  }

  /**
   * Makes a write of the consumer's own (committing its position, a dead letter), trying again with backoff while it
   * fails (SQLITE_FULL on a full disk, a lock held past busy_timeout): the event it records counts as undelivered until
   * then, and is not delivered again meanwhile. Tried once even while closing (close() waits for the event in hand and
   * its commit); false when it failed and the subscription is closing (the write was not made).
   */
  private async record(write: () => void, fields: Record<string, unknown>): Promise<boolean> {
    for (let failures = 0; ; failures++) {
      try {
        await writeWhenUnlocked(this.db, write);
        return true;
      } catch (err) {
        if (!this.running) return false;
        this.writeFailed({ ...fields, group: this.options.group, error: errorMessage(err).slice(0, 300), code: (err as { code?: unknown }).code });
        await this.sleep(this.backoff(failures));
      }
    }
  }

  /** One pass of the loop: the replays asked for, then up to a batch of new events; false once closing. */
  private async deliverOnce(next: () => EventRow[], commit: Statement, deadLetter: Statement): Promise<boolean> {
    const { group } = this.options;
    await this.deliverRequestedReplays();
    if (!this.running) return false;
    let rows: EventRow[];
    try {
      rows = next();
    } catch (err) {
      if (!this.running) return false;
      this.logOptions.logger.error({ err, group }, 'event log read failed');
      rows = [];
    }
    // With a batchHandler, a run of rows is applied together; a run that fails is delivered again in halves.
    for (let i = 0; i < rows.length; ) {
      const run = rows.slice(i, i + batchLength(this.options, rows.length - i));
      const done = await deliverInHalves(run, {
        applyRun: async (part) => {
          if (!(await this.deliverRun(part))) return false;
          return this.record(() => {
            for (const r of part) commit.run(group, r.topic, r.seq);
          }, { topic: part[0]!.topic, seq: part[part.length - 1]!.seq });
        },
        deliverOne: async (row) => {
          const delivered = await this.deliver(row);
          if (!delivered.ok) {
            if (!this.running) return false;
            const failedAt = new Date().toISOString();
            if (!(await this.record(() => deadLetter.run(group, row.topic, row.seq, delivered.error, failedAt, delivered.attempts), { topic: row.topic, seq: row.seq }))) return false;
            this.metrics.outcome(row.topic, 'dead_letter');
            this.logOptions.logger.error({ group, topic: row.topic, seq: row.seq, error: delivered.error }, 'event moved to dead letters');
          }
          return this.record(() => commit.run(group, row.topic, row.seq), { topic: row.topic, seq: row.seq });
        },
        running: () => this.running,
      });
      if (!done) return false;
      i += run.length;
    }
    if (rows.length === 0) await this.idle();
    // A pass that delivered events gives the thread up before the next: handlers on the embedded stores answer
    // synchronously, so a backlog (10,001 bookmark events of a deleted collection) was otherwise delivered in one run of
    // microtasks, and no request of the process was answered until its end (a GET waited 1.6 s).
    else await new Promise((resolve) => setImmediate(resolve));
    return true;
  }

  /** Delivers this group's dead letters an operator asked to replay: marked replayed, or dead again with the new error. */
  private async deliverRequestedReplays(): Promise<void> {
    const { group, topics } = this.options;
    if (topics.length === 0) return;
    let requested: EventRow[];
    try {
      requested = this.db
        .prepare(
          `SELECT e.seq, e.topic, e.key, e.payload FROM dead_letters d JOIN events e ON e.seq = d.seq AND e.topic = d.topic
           WHERE d.group_id = ? AND d.replay_requested_at IS NOT NULL AND d.topic IN (${topics.map(() => '?').join(', ')}) ORDER BY d.seq LIMIT 100`,
        )
        .all(group, ...topics) as EventRow[];
    } catch (err) {
      if (this.running) this.logOptions.logger.error({ err, group }, 'reading dead letters to replay failed');
      return;
    }
    const replayed = this.db.prepare('UPDATE dead_letters SET replayed_at = ?, replay_requested_at = NULL WHERE group_id = ? AND topic = ? AND seq = ?');
    const deadAgain = this.db.prepare(
      'UPDATE dead_letters SET error = ?, failed_at = ?, attempts = ?, replay_requested_at = NULL WHERE group_id = ? AND topic = ? AND seq = ?',
    );
    for (const row of requested) {
      if (!this.running) return;
      const delivered = await this.deliver(row);
      // Closing mid-retry: the request stays for the next start.
      if (!this.running) return;
      const now = new Date().toISOString();
      if (delivered.ok) {
        if (!(await this.record(() => replayed.run(now, group, row.topic, row.seq), { topic: row.topic, seq: row.seq }))) return;
        this.logOptions.logger.info({ group, topic: row.topic, seq: row.seq }, 'dead letter replayed');
      } else {
        if (!(await this.record(() => deadAgain.run(delivered.error, now, delivered.attempts, group, row.topic, row.seq), { topic: row.topic, seq: row.seq }))) return;
        this.metrics.outcome(row.topic, 'dead_letter');
        this.logOptions.logger.error({ group, topic: row.topic, seq: row.seq, error: delivered.error }, 'replayed dead letter failed again');
      }
    }
  }

  /** One attempt of the batchHandler on a run of rows; false (logged) when it failed. */
  private async deliverRun(run: EventRow[]): Promise<boolean> {
    const started = performance.now();
    try {
      await this.options.batchHandler!(run.map((row) => ({ topic: row.topic, key: row.key, payload: new Uint8Array(row.payload), offset: String(row.seq), attempt: 0 })));
      this.metrics.batchRun(run, 'ok', secondsSince(started));
      return true;
    } catch (err) {
      // Its events are delivered again, in halves.
      this.metrics.batchRun(run, 'retry', secondsSince(started));
      this.logOptions.logger.warn({ err, group: this.options.group, events: run.length }, 'event batch handler failed; delivering its events again in halves');
      return false;
    }
  }

  private async deliver(row: EventRow): Promise<{ ok: true } | { ok: false; error: string; attempts: number }> {
    const maxAttempts = this.options.maxAttempts ?? 8;
    const base = this.logOptions.retryBaseMs ?? 100;
    // Failures because an engine is unreachable do not count: an outage must not dead-letter events.
    let counted = 0;
    const logFailure = handlerFailureLog(this.logOptions.logger);
    for (let attempt = 0; ; attempt++) {
      const event: DeliveredEvent = { topic: row.topic, key: row.key, payload: new Uint8Array(row.payload), offset: String(row.seq), attempt, countedFailures: counted };
      const started = performance.now();
      try {
        await this.options.handler(event);
        this.metrics.handled(row.topic, secondsSince(started));
        this.metrics.outcome(row.topic, 'ok');
        return { ok: true };
      } catch (err) {
        this.metrics.handled(row.topic, secondsSince(started));
        const message = errorMessage(err);
        const countedNow = !isEngineUnavailableError(err);
        logFailure({ err, group: this.options.group, topic: row.topic, seq: row.seq, attempt }, countedNow);
        if (countedNow) counted++;
        // The last failure is counted as the dead letter its caller writes; one cut short by closing is delivered again.
        if (counted < maxAttempts) this.metrics.outcome(row.topic, 'retry');
        if (counted >= maxAttempts || !this.running) return { ok: false, error: message, attempts: attempt + 1 };
        await this.sleep(Math.min(5000, base * 2 ** Math.min(attempt, 16)));
        if (!this.running) return { ok: false, error: message, attempts: attempt + 1 };
      }
    }
  }

  private idle(): Promise<void> {
    return this.sleep(this.logOptions.pollIntervalMs ?? 250);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => {
        if (this.timer) clearTimeout(this.timer);
        this.wake = undefined;
        resolve();
      };
    });
  }
}

const sharedLogs = new Map<string, { log: SqliteEventLog; refs: number }>();

/**
 * One SqliteEventLog per file per process, so services started together (all-in-one) wake each
 * other's consumers at once instead of waiting for the poll. close() releases this user's reference.
 */
export function openSharedSqliteEventLog(options: SqliteEventLogOptions): EventBus {
  let entry = sharedLogs.get(options.path);
  if (!entry) {
    entry = { log: new SqliteEventLog(options), refs: 0 };
    sharedLogs.set(options.path, entry);
  }
  entry.refs++;
  const shared = entry;
  let closed = false;
  const subscriptions: Subscription[] = [];
  return {
    publish: (events) => shared.log.publish(events),
    subscribe: async (o) => {
      const s = await shared.log.subscribe(o);
      subscriptions.push(s);
      return s;
    },
    hasCommitted: (group, topics) => shared.log.hasCommitted(group, topics),
    ready: () => shared.log.ready(),
    async close() {
      if (closed) return;
      closed = true;
      await Promise.all(subscriptions.map((s) => s.close()));
      if (--shared.refs === 0) {
        sharedLogs.delete(options.path);
        await shared.log.close();
      }
    },
  };
}
