import type { Logger } from 'pino';
import { writeWhenUnlocked, type SqliteDatabase } from '../sqlite';
import { assertPublishable, type EventBus, type OutgoingEvent } from './event-bus';
import { outboxMetrics, type OutboxMetrics } from './event-metrics';
import { isEngineUnavailableError } from '../readiness';
import { errorMessage } from '../errors';
import { repeatedWarningLog } from '../repeated-warning';
import { runOutsideRequestContext } from '../request-context';

export interface OutboxEntry extends OutgoingEvent {
  id: string;
}

/**
 * Where a service writes its events in the same transaction as its state change (transactional outbox).
 * The relay drains it to the bus; a crash between commit and publish only delays delivery.
 */
export interface OutboxStore {
  /** Oldest entries first. */
  pending(limit: number): Promise<OutboxEntry[]>;
  remove(ids: string[]): Promise<void>;
  /** Entries not yet removed; the relay asks only when one pending() read does not hold them all. */
  count(): Promise<number>;
  /**
   * Present when several processes share the outbox (replicas on one MongoDB database): the relays of all of them
   * take turns through it, so no entry is published twice and none after a later one.
   */
  drainLease?: OutboxDrainLease;
}

/** Lets one relay at a time drain an outbox that several processes share. */
export interface OutboxDrainLease {
  /**
   * Runs `drain` while holding the lease (taken for it, released after) and answers true; answers false without
   * running it while another process holds the lease.
   */
  run(drain: () => Promise<void>): Promise<boolean>;
}

/** How soon a relay that found the lease taken tries again: the holder may have read the outbox before our entries. */
const LEASE_RETRY_MS = 100;

/** SQL for a service's migration list: the outbox table lives in the service's own database. */
export const SQLITE_OUTBOX_MIGRATION = `CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT NOT NULL, payload BLOB NOT NULL, created_at TEXT NOT NULL);`;

/**
 * Appends events to the outbox; call it inside the transaction that changes the state. Throws EventTooLargeError,
 * writing none, when an event is over MAX_EVENT_BYTES, so the transaction rolls back.
 */
export function appendToSqliteOutbox(db: SqliteDatabase, events: readonly OutgoingEvent[]): void {
  if (events.length === 0) return;
  assertPublishable(events);
  const insert = db.prepare('INSERT INTO outbox (topic, key, payload, created_at) VALUES (?, ?, ?, ?)');
  const now = new Date().toISOString();
  for (const e of events) insert.run(e.topic, e.key, Buffer.from(e.payload), now);
}

export class SqliteOutboxStore implements OutboxStore {
  constructor(private readonly db: SqliteDatabase) {}

  async pending(limit: number): Promise<OutboxEntry[]> {
    const rows = this.db.prepare('SELECT seq, topic, key, payload FROM outbox ORDER BY seq LIMIT ?').all(limit) as {
      seq: number;
      topic: string;
      key: string;
      payload: Buffer;
    }[];
    return rows.map((r) => ({ id: String(r.seq), topic: r.topic, key: r.key, payload: new Uint8Array(r.payload) }));
  }

  async count(): Promise<number> {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM outbox').get() as { n: number }).n;
  }

  async remove(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const del = this.db.prepare('DELETE FROM outbox WHERE seq = ?');
    // The relay's own write, in the background: another process's lock is waited for between tries, the service
    // answering meanwhile (writeWhenUnlocked), not inside SQLite with the whole process stopped.
    await writeWhenUnlocked(this.db, () =>
      this.db.transaction(() => {
        for (const id of ids) del.run(Number(id));
      })(),
    );
  }
}

export interface OutboxRelayOptions {
  /** The outbox's name in metrics (`outbox` label): the service, or the part of it, that writes it. */
  name: string;
  /** How often the relay looks for entries nobody kicked it for. */
  intervalMs?: number;
}

/** Entries read and published at a time. */
const DRAIN_BATCH = 200;

/**
 * Moves outbox entries to the bus in order. kick() after a commit for low latency; a timer catches
 * anything left behind (entries written before a crash, failed publishes).
 */
export class OutboxRelay {
  private running = false;
  private draining: Promise<void> | undefined;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private leaseRetry: NodeJS.Timeout | undefined;
  private readonly metrics: OutboxMetrics;
  /** The bus or the outbox's store unreachable, or their storage full: a known condition for as long as it lasts. */
  private readonly unavailable: (fields: Record<string, unknown>) => void;

  constructor(
    private readonly store: OutboxStore,
    private readonly bus: EventBus,
    private readonly logger: Logger,
    private readonly options: OutboxRelayOptions,
  ) {
    this.metrics = outboxMetrics(options.name);
    this.unavailable = repeatedWarningLog(logger, 'outbox relay could not publish: the event log or the outbox is unavailable or its storage full; will retry');
  }

  start(): void {
    this.running = true;
    this.timer = setInterval(() => this.kick(), this.options.intervalMs ?? 1000);
    this.timer.unref();
    this.kick();
  }

  kick(): void {
    if (!this.running) return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.startDrain();
  }

  /**
   * Resolves when everything written so far has been published (or publishing failed and will be retried): after the
   * drain under way, then one that starts after this call. Kicks arriving meanwhile (the timer's) are not waited for,
   * or a drain slower than the interval (an engine timing out) would keep flush() waiting for ever.
   */
  async flush(): Promise<void> {
    if (this.draining) await this.draining;
    await (this.draining ?? this.startDrain());
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    if (this.leaseRetry) clearTimeout(this.leaseRetry);
    while (this.draining) await this.draining;
  }

  private startDrain(): Promise<void> {
    // A drain a request kicks (after its commit) is the relay's own work: without the request's context, whose
    // store-wait budget (often nearly spent by then) would make its writes to the event log give up at once.
    const draining = runOutsideRequestContext(() => this.drain()).finally(() => {
      this.draining = undefined;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
    this.draining = draining;
    return draining;
  }

  private async drain(): Promise<void> {
    try {
      const lease = this.store.drainLease;
      if (!lease) return await this.publishPending();
      if (!(await lease.run(() => this.publishPending())) && !this.leaseRetry && this.running) {
        this.leaseRetry = setTimeout(() => {
          this.leaseRetry = undefined;
          this.kick();
        }, LEASE_RETRY_MS);
        this.leaseRetry.unref();
      }
    } catch (err) {
      this.metrics.failed();
      // An outage or a full disk fails every drain (one a second) until it ends: the first line, then one a minute
      // with the count, no stack (repeatedWarningLog). Anything else is logged with its stack each time.
      if (isEngineUnavailableError(err)) this.unavailable({ outbox: this.options.name, error: errorMessage(err).slice(0, 300), code: (err as { code?: unknown }).code });
      else this.logger.warn({ err, outbox: this.options.name }, 'outbox relay could not publish; will retry');
    }
  }

  /** Publishes until the outbox is empty, keeping the pending gauge at what is left (it stays there when publishing fails). */
  private async publishPending(): Promise<void> {
    let batch = await this.store.pending(DRAIN_BATCH);
    // Counted only when one read does not hold the whole backlog: at most one extra query per drain. A count that
    // fails must not hold up publishing: the gauge then shows at least what this read holds.
    let left = batch.length < DRAIN_BATCH ? batch.length : await this.store.count().catch(() => batch.length);
    this.metrics.pending(left);
    while (batch.length > 0) {
      await this.bus.publish(batch.map(({ topic, key, payload }) => ({ topic, key, payload })));
      await this.store.remove(batch.map((e) => e.id));
      left = Math.max(0, left - batch.length);
      this.metrics.pending(left);
      // The embedded stores answer synchronously, so without this a backlog (the 10,001 events of deleting a collection
      // of 10,000 cards) was moved in one run of microtasks and no request of the process was answered until its end.
      await new Promise((resolve) => setImmediate(resolve));
      batch = await this.store.pending(DRAIN_BATCH);
    }
    this.metrics.pending(0);
  }
}
