import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Metadata, Status, type CallContext, type ServerMiddlewareCall } from 'nice-grpc';
import { createLogger, errorMiddleware, SERVICE_BUSY, STORAGE_FULL, STORAGE_FULL_MESSAGE, STORE_BUSY_MESSAGE } from '../src';
import { isEngineUnavailableError, isStorageFullError, isStoreBusyError } from '../src/readiness';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { OutboxRelay, type OutboxEntry, type OutboxStore } from '../src/events/outbox';
import { STATUS_REASON_TRAILER } from '../src/status-origin';
import { testTempDir } from '../../../test/support/cleanup';

/** What better-sqlite3 throws when the data dir's file system is full (SqliteError, code SQLITE_FULL). */
const sqliteFull = () => Object.assign(new Error('database or disk is full'), { name: 'SqliteError', code: 'SQLITE_FULL' });
/** What node:fs throws on a write to a full file system. */
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' });

type Line = { level: number; msg: string; err?: unknown; [field: string]: unknown };
const capture = () => {
  const lines: Line[] = [];
  return { lines, logger: createLogger('storage-full-test', 'info', { write: (line: string) => void lines.push(JSON.parse(line)) }) };
};
const until = async (done: () => boolean, ms = 20_000) => {
  const deadline = Date.now() + ms;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  return done();
};

describe('a full disk is storage unavailable, not a failure', () => {
  it.each([
    ['SQLITE_FULL', sqliteFull()],
    ['ENOSPC', enospc()],
    ['EDQUOT', Object.assign(new Error('EDQUOT: disk quota exceeded, write'), { code: 'EDQUOT' })],
    ['SQLITE_IOERR_WRITE', Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR_WRITE' })],
    ['ENOSPC as the cause', new Error('could not store the file', { cause: enospc() })],
  ])('%s is storage full, and so an engine unavailable (retried uncounted, answered 503)', (_code, err) => {
    expect(isStorageFullError(err)).toBe(true);
    expect(isEngineUnavailableError(err)).toBe(true);
  });

  it('other errors are not', () => {
    for (const err of [new Error('boom'), Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }), Object.assign(new Error('x'), { code: 'ENOENT' }), undefined]) {
      expect(isStorageFullError(err)).toBe(false);
    }
  });
});

/** The status, message and reason the error middleware answers for a call of `method` whose handler throws `thrown`. */
async function answerOf(middleware: ReturnType<typeof errorMiddleware>, method: string, thrown: Error): Promise<{ code?: Status; details?: string; reason?: string }> {
  const trailer = Metadata();
  const call = {
    method: { path: method },
    request: {},
    next: async function* () {
      throw thrown;
    },
  } as unknown as ServerMiddlewareCall<unknown, unknown>;
  const err = (await middleware(call, { trailer } as unknown as CallContext)
    .next()
    .catch((e: unknown) => e)) as { code?: Status; details?: string };
  return { code: err.code, details: err.details, reason: trailer.get(STATUS_REASON_TRAILER) };
}

describe('the gRPC error middleware on a full disk', () => {
  it('answers UNAVAILABLE "Storage is full" with its reason (the gateway: 503 with that message), one warning without a stack', async () => {
    const { lines, logger } = capture();
    const middleware = errorMiddleware(logger);
    const results: Array<{ code?: Status; details?: string; reason?: string }> = [];
    for (let i = 0; i < 3; i++) results.push(await answerOf(middleware, '/cards.v1.CardService/CreateCard', sqliteFull()));
    expect(results).toEqual(Array(3).fill({ code: Status.UNAVAILABLE, details: STORAGE_FULL_MESSAGE, reason: STORAGE_FULL }));
    expect(STORAGE_FULL_MESSAGE).toMatch(/^Storage is full/);
    expect(lines.map((l) => ({ level: l.level, msg: l.msg, hasErr: l.err !== undefined }))).toEqual([
      { level: 40, msg: expect.stringMatching(/^storage is full/), hasErr: false },
    ]);
  });
});

describe('a store locked past busy_timeout (the backup command copying it) is the service busy, not a failure', () => {
  const sqliteBusy = () => Object.assign(new Error('database is locked'), { name: 'SqliteError', code: 'SQLITE_BUSY' });

  it('is retried uncounted by event consumers (an engine unavailable), and other SQLite errors are not', () => {
    expect(isStoreBusyError(sqliteBusy())).toBe(true);
    expect(isEngineUnavailableError(sqliteBusy())).toBe(true);
    expect(isEngineUnavailableError(new Error('could not add the bookmark', { cause: sqliteBusy() }))).toBe(true);
    expect(isStoreBusyError(Object.assign(new Error('UNIQUE constraint failed'), { code: 'SQLITE_CONSTRAINT_UNIQUE' }))).toBe(false);
    expect(isStoreBusyError(sqliteFull())).toBe(false);
  });

  it('the gRPC error middleware answers UNAVAILABLE with the busy reason (the gateway: 503 with Retry-After), one warning without a stack', async () => {
    const { lines, logger } = capture();
    expect(await answerOf(errorMiddleware(logger), '/cards.v1.CollectionService/AddBookmark', sqliteBusy())).toEqual({ code: Status.UNAVAILABLE, details: STORE_BUSY_MESSAGE, reason: SERVICE_BUSY });
    expect(lines.map((l) => ({ level: l.level, msg: l.msg, hasErr: l.err !== undefined }))).toEqual([{ level: 40, msg: expect.stringMatching(/^a store stayed locked/), hasErr: false }]);
  });
});

describe('the embedded event log on a full disk', () => {
  let dir: string;
  let path: string;
  beforeEach(() => {
    dir = testTempDir('cards-disk-full-');
    path = join(dir, 'events.db');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const deadLetters = () => {
    const db = new Database(path, { readonly: true });
    try {
      return (db.prepare('SELECT COUNT(*) AS n FROM dead_letters').get() as { n: number }).n;
    } finally {
      db.close();
    }
  };

  /**
   * Makes the consumer's own writes (its position, a dead letter) throw SQLITE_FULL while `full.on`: the statements
   * the subscription prepares are wrapped as the event log's connection hands them out.
   */
  function failConsumerWrites(log: SqliteEventLog, full: { on: boolean; failed: number }) {
    const db = (log as unknown as { db: Database.Database }).db;
    const prepare = db.prepare.bind(db);
    jest.spyOn(db, 'prepare').mockImplementation(((sql: string) => {
      const statement = prepare(sql);
      if (!/INTO (consumer_offsets|dead_letters)/.test(sql) || /INSERT OR IGNORE/.test(sql)) return statement;
      const run = statement.run.bind(statement);
      return Object.assign(Object.create(statement) as object, {
        run: (...args: unknown[]) => {
          if (full.on) {
            full.failed++;
            throw sqliteFull();
          }
          return run(...args);
        },
      });
    }) as typeof db.prepare);
  }

  it.each([
    ['one by one', false],
    ['in batches', true],
  ])("a consumer whose position cannot be written (%s) waits, logging once, and commits once there is room again; the process lives on", async (_how, batched) => {
    const { lines, logger } = capture();
    const log = new SqliteEventLog({ path, logger, pollIntervalMs: 20, retryBaseMs: 5 });
    const full = { on: true, failed: 0 };
    failConsumerWrites(log, full);
    const handled: string[] = [];
    const handler = async (event: { key: string }) => void handled.push(event.key);
    const subscription = await log.subscribe({
      group: 'g',
      topics: ['t'],
      ...(batched ? { handler, batchHandler: async (events: { key: string }[]) => void handled.push(...events.map((e) => e.key)) } : { handler }),
    });
    await log.publish([1, 2, 3].map((n) => ({ topic: 't', key: `k${n}`, payload: new Uint8Array([n]) })));
    expect(await until(() => full.failed >= 5)).toBe(true);
    expect(log.lag('g', 't')).toBe(3);
    full.on = false;
    expect(await until(() => log.lag('g', 't') === 0)).toBe(true);
    await subscription.close();
    await log.close();
    expect(new Set(handled)).toEqual(new Set(['k1', 'k2', 'k3']));
    expect(deadLetters()).toBe(0);
    const warnings = lines.filter((l) => l.level >= 40);
    expect(warnings.map((l) => ({ level: l.level, msg: l.msg, hasErr: l.err !== undefined, code: l.code }))).toEqual([
      { level: 40, msg: expect.stringMatching(/^event log: could not record what a consumer did/), hasErr: false, code: 'SQLITE_FULL' },
    ]);
  });

  it('an event whose handler fails with SQLITE_FULL or ENOSPC more often than maxAttempts is not dead-lettered: handled once there is room', async () => {
    const log = new SqliteEventLog({ path, logger: createLogger('storage-full-test', 'silent'), pollIntervalMs: 20, retryBaseMs: 5 });
    let failures = 0;
    const handled: string[] = [];
    const subscription = await log.subscribe({
      group: 'g',
      topics: ['t'],
      maxAttempts: 2,
      handler: async (event) => {
        if (failures < 6) throw failures++ % 2 ? sqliteFull() : enospc();
        handled.push(event.key);
      },
    });
    await log.publish([{ topic: 't', key: 'k1', payload: new Uint8Array([1]) }]);
    expect(await until(() => handled.length === 1)).toBe(true);
    await subscription.close();
    await log.close();
    expect(failures).toBe(6);
    expect(deadLetters()).toBe(0);
  });
});

describe('the outbox relay on a full disk', () => {
  it('logs one warning without a stack, not one a drain, and publishes once there is room', async () => {
    const { lines, logger } = capture();
    const entries: OutboxEntry[] = [{ id: '1', topic: 't', key: 'k', payload: new Uint8Array([1]) }];
    const store: OutboxStore = {
      pending: async (limit) => entries.slice(0, limit),
      remove: async (ids) => void entries.splice(0, entries.length, ...entries.filter((e) => !ids.includes(e.id))),
      count: async () => entries.length,
    };
    let full = true;
    let attempts = 0;
    const published: string[] = [];
    const bus = {
      publish: async (events: { key: string }[]) => {
        attempts++;
        if (full) throw sqliteFull();
        published.push(...events.map((e) => e.key));
      },
    } as unknown as ConstructorParameters<typeof OutboxRelay>[1];
    const relay = new OutboxRelay(store, bus, logger, { name: 'test', intervalMs: 5 });
    relay.start();
    expect(await until(() => attempts >= 5)).toBe(true);
    full = false;
    expect(await until(() => published.length === 1)).toBe(true);
    await relay.stop();
    const warnings = lines.filter((l) => l.level >= 40);
    expect(warnings.map((l) => ({ msg: l.msg, hasErr: l.err !== undefined, code: l.code }))).toEqual([
      { msg: expect.stringMatching(/^outbox relay could not publish/), hasErr: false, code: 'SQLITE_FULL' },
    ]);
  });
});
