import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { ConfigError } from '../src/config';
import { eventLogRetentionOf, SqliteEventLog, type EventLogRetention } from '../src/events/sqlite-event-log';
import type { DeliveredEvent, EventBus } from '../src/events/event-bus';
import { testTempDir } from '../../../test/support/cleanup';

// The embedded log deletes what every consumer group of a topic has committed once it is older than the retention
// (EVENT_LOG_RETENTION_HOURS), and anything older than EVENT_LOG_UNCONSUMED_RETENTION_HOURS; the file stops growing.

const HOUR = 3_600_000;
const retention: EventLogRetention = { retentionMs: 168 * HOUR, unconsumedMs: 720 * HOUR, intervalMs: 3_600_000, batchSize: 7 };

interface Logged {
  level: number;
  msg: string;
  group?: string;
  events?: number;
}

function capturingLogger(): { logger: pino.Logger; lines: Logged[] } {
  const lines: Logged[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Logged) });
  return { logger, lines };
}

const payload = (text: string) => new TextEncoder().encode(text);
const keysIn = (path: string, topic: string): string[] => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT key FROM events WHERE topic = ? ORDER BY seq').all(topic) as { key: string }[]).map((r) => r.key);
  } finally {
    db.close();
  }
};

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Subscribes `group` and waits until it has committed everything of `topic` (or all but what `refuse` refuses). */
async function consume(bus: SqliteEventLog, group: string, topic: string, seen: string[], refuse?: (e: DeliveredEvent) => boolean, maxAttempts?: number) {
  return bus.subscribe({
    group,
    topics: [topic],
    maxAttempts,
    handler: async (e) => {
      if (refuse?.(e)) throw new Error(`refused ${e.key}`);
      seen.push(e.key);
    },
  });
}

describe('embedded event log retention', () => {
  let dir: string;
  const buses: EventBus[] = [];
  beforeEach(() => {
    dir = testTempDir('cards-retention-');
  });
  afterEach(async () => {
    await Promise.allSettled(buses.splice(0).map((b) => b.close()));
    rmSync(dir, { recursive: true, force: true });
  });
  const open = (logger: pino.Logger, options: Partial<EventLogRetention> = {}) => {
    const bus = new SqliteEventLog({ path: join(dir, 'events.db'), logger, pollIntervalMs: 10, retryBaseMs: 5, retention: { ...retention, ...options } });
    buses.push(bus);
    return bus;
  };

  it('deletes old events every group has committed, keeps uncommitted and dead-lettered ones, and a new group starts at the oldest kept', async () => {
    const { logger, lines } = capturingLogger();
    const bus = open(logger);
    const path = join(dir, 'events.db');
    await bus.publish(Array.from({ length: 20 }, (_, i) => ({ topic: 't.a', key: `a${i}`, payload: payload(`a${i}`) })));
    await bus.publish([{ topic: 't.orphan', key: 'o0', payload: payload('o0') }]);
    // Group one reads all of t.a but dead-letters a3; group two stops at a12 (its handler keeps failing on it).
    const one: string[] = [];
    const two: string[] = [];
    const s1 = await consume(bus, 'one', 't.a', one, (e) => e.key === 'a3', 1);
    const s2 = await consume(bus, 'two', 't.a', two, (e) => e.key === 'a12', 1_000_000);
    await until(() => bus.lag('one', 't.a') === 0 && two.includes('a11'), 'both groups');
    await s1.close();
    await s2.close();
    // A group that subscribed and committed nothing pins its topic from the start.
    const s3 = await bus.subscribe({ group: 'late', topics: ['t.late'], handler: async () => { throw new Error('never'); } });
    await s3.close();
    await bus.publish([{ topic: 't.late', key: 'l0', payload: payload('l0') }]);

    // Not old yet: nothing goes.
    expect(await bus.prune(Date.now())).toEqual({ deleted: 0, deletedUnconsumed: 0, releasedPages: expect.any(Number) });
    expect(keysIn(path, 't.a')).toHaveLength(20);

    // A week and an hour later: t.a up to what group two committed (a11), except the dead letter a3; the orphan topic.
    const result = await bus.prune(Date.now() + 169 * HOUR);
    expect(keysIn(path, 't.a')).toEqual(['a3', ...Array.from({ length: 8 }, (_, i) => `a${i + 12}`)]);
    expect(keysIn(path, 't.orphan')).toEqual([]);
    expect(keysIn(path, 't.late')).toEqual(['l0']);
    expect(result).toMatchObject({ deleted: 11 + 1, deletedUnconsumed: 0 });
    const retentionWarnings = () => lines.filter((l) => l.level === 40 && l.msg.startsWith('event log retention'));
    expect(retentionWarnings()).toEqual([]);

    // A new group starts at the oldest event kept (as a Kafka group with auto.offset.reset=earliest).
    const fresh: string[] = [];
    const s4 = await consume(bus, 'fresh', 't.a', fresh);
    await until(() => bus.lag('fresh', 't.a') === 0, 'the new group');
    await s4.close();
    expect(fresh).toEqual(keysIn(path, 't.a'));

    // Past EVENT_LOG_UNCONSUMED_RETENTION_HOURS a group that never commits no longer pins the log; a warning names it.
    const forced = await bus.prune(Date.now() + 721 * HOUR);
    expect(keysIn(path, 't.a')).toEqual(['a3']);
    expect(keysIn(path, 't.late')).toEqual([]);
    expect(forced).toMatchObject({ deletedUnconsumed: 8 + 1 });
    const warnings = retentionWarnings();
    expect(warnings.map((w) => [w.group, w.events])).toEqual(expect.arrayContaining([['two', 8], ['late', 1]]));
    expect(warnings[0]!.msg).toContain('EVENT_LOG_UNCONSUMED_RETENTION_HOURS');
  });

  it('deletes by the time each event was published: the older ones go, the newer ones stay', async () => {
    const { logger } = capturingLogger();
    const bus = open(logger);
    const path = join(dir, 'events.db');
    await bus.publish(Array.from({ length: 30 }, (_, i) => ({ topic: i % 2 ? 't.odd' : 't.even', key: `k${i}`, payload: payload(`k${i}`) })));
    const seen: string[] = [];
    const sub = await bus.subscribe({ group: 'all', topics: ['t.odd', 't.even'], handler: async (e) => void seen.push(e.key) });
    await until(() => seen.length === 30, 'the group');
    await sub.close();
    // The first 17 were published eight days ago, the rest an hour ago.
    const db = new Database(path);
    db.prepare('UPDATE events SET published_at = ? WHERE seq <= 17').run(new Date(Date.now() - 192 * HOUR).toISOString());
    db.prepare('UPDATE events SET published_at = ? WHERE seq > 17').run(new Date(Date.now() - HOUR).toISOString());
    db.close();
    expect(await bus.prune(Date.now())).toMatchObject({ deleted: 17, deletedUnconsumed: 0 });
    expect([...keysIn(path, 't.even'), ...keysIn(path, 't.odd')].sort()).toEqual(Array.from({ length: 13 }, (_, i) => `k${i + 17}`).sort());
  });

  it('keeps every event when the retention is -1', async () => {
    const { logger } = capturingLogger();
    const bus = open(logger, { retentionMs: null, unconsumedMs: null });
    await bus.publish([{ topic: 't', key: 'k', payload: payload('x') }]);
    expect(await bus.prune(Date.now() + 100_000 * HOUR)).toEqual({ deleted: 0, deletedUnconsumed: 0, releasedPages: 0 });
    expect(keysIn(join(dir, 'events.db'), 't')).toEqual(['k']);
  });

  // Under a steady load (each round: events published, consumed, then older than the retention), the file's page
  // count stops growing: a new file hands freed pages back (auto_vacuum=INCREMENTAL), one made before this change
  // (auto_vacuum=NONE) is switched at open when small enough, else reuses them.
  it.each([
    ['a new file (auto_vacuum=INCREMENTAL)', false, 2, undefined],
    ['a file made before retention (auto_vacuum=NONE), switched at open', true, 2, undefined],
    ['a file made before retention (auto_vacuum=NONE) larger than switchAtOpenMaxBytes, kept as it is', true, 0, 1],
  ])('the file stops growing under steady load: %s', async (_name, existing, autoVacuum, switchAtOpenMaxBytes) => {
    const path = join(dir, 'events.db');
    if (existing) {
      const old = new Database(path);
      old.pragma('journal_mode = WAL');
      old.exec('CREATE TABLE made_before (x)');
      old.close();
    }
    const { logger, lines } = capturingLogger();
    const bus = open(logger, { retentionMs: HOUR, unconsumedMs: 2 * HOUR, batchSize: 100, switchAtOpenMaxBytes });
    if (existing) expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(autoVacuum === 2 ? /^the event log file was switched to incremental auto_vacuum/ : /too large to switch at start/)]);
    const seen: string[] = [];
    const sub = await consume(bus, 'steady', 't', seen);
    const pages = () => {
      const db = new Database(path, { readonly: true });
      try {
        return { pages: db.pragma('page_count', { simple: true }) as number, mode: db.pragma('auto_vacuum', { simple: true }) as number };
      } finally {
        db.close();
      }
    };
    const peaks: number[] = [];
    let clock = Date.now();
    for (let round = 0; round < 12; round++) {
      await bus.publish(Array.from({ length: 300 }, (_, i) => ({ topic: 't', key: `r${round}-${i}`, payload: new Uint8Array(1000).fill(round) })));
      await until(() => bus.lag('steady', 't') === 0, `round ${round}`);
      peaks.push(pages().pages);
      // The round's events are now past the retention (the clock moves on two hours per round).
      clock += 2 * HOUR;
      const result = await bus.prune(clock);
      expect(result.deleted).toBe(300);
    }
    await sub.close();
    expect(pages().mode).toBe(autoVacuum);
    expect(seen).toHaveLength(12 * 300);
    // Without retention each round adds ~100 pages (300 KB at 4 KB a page); with it the peak stays where it was.
    expect(peaks[11]! - peaks[0]!).toBeLessThan(10);
    expect(Math.max(...peaks.slice(2))).toBeLessThanOrEqual(Math.max(...peaks.slice(0, 2)) + 5);
  });

  it('reads EVENT_LOG_RETENTION_HOURS and EVENT_LOG_UNCONSUMED_RETENTION_HOURS', () => {
    expect(eventLogRetentionOf({})).toEqual({ retentionMs: 168 * HOUR, unconsumedMs: 720 * HOUR });
    expect(eventLogRetentionOf({ EVENT_LOG_RETENTION_HOURS: '24', EVENT_LOG_UNCONSUMED_RETENTION_HOURS: '48' })).toEqual({ retentionMs: 24 * HOUR, unconsumedMs: 48 * HOUR });
    expect(eventLogRetentionOf({ EVENT_LOG_RETENTION_HOURS: '0.5' })).toEqual({ retentionMs: HOUR / 2, unconsumedMs: 720 * HOUR });
    expect(eventLogRetentionOf({ EVENT_LOG_UNCONSUMED_RETENTION_HOURS: '-1' })).toEqual({ retentionMs: 168 * HOUR, unconsumedMs: null });
    expect(eventLogRetentionOf({ EVENT_LOG_RETENTION_HOURS: '-1' })).toEqual({ retentionMs: null, unconsumedMs: null });
    for (const bad of [{ EVENT_LOG_RETENTION_HOURS: '0' }, { EVENT_LOG_RETENTION_HOURS: 'week' }, { EVENT_LOG_RETENTION_HOURS: '-2' }, { EVENT_LOG_RETENTION_HOURS: '1e12' }, { EVENT_LOG_UNCONSUMED_RETENTION_HOURS: 'Infinity' }]) {
      expect(() => eventLogRetentionOf(bad)).toThrow(ConfigError);
    }
    expect(eventLogRetentionOf({ EVENT_LOG_RETENTION_HOURS: '1000' })).toEqual({ retentionMs: 1000 * HOUR, unconsumedMs: 1000 * HOUR });
    expect(() => eventLogRetentionOf({ EVENT_LOG_RETENTION_HOURS: '200', EVENT_LOG_UNCONSUMED_RETENTION_HOURS: '100' })).toThrow(
      'EVENT_LOG_UNCONSUMED_RETENTION_HOURS (100) must not be below EVENT_LOG_RETENTION_HOURS (200)',
    );
    expect(() => eventLogRetentionOf({ EVENT_LOG_RETENTION_HOURS: '-1', EVENT_LOG_UNCONSUMED_RETENTION_HOURS: '24' })).toThrow(ConfigError);
  });
});
