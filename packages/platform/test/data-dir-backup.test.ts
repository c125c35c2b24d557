import Database from 'better-sqlite3';
import { execFileSync, spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import fs from 'node:fs';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from '../src/logger';
import { openSqlite } from '../src/sqlite';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { backUpDataDir, DataDirBackupError } from '../src/data-dir-backup';
import { runBackupCommand } from '../src/cli/backup-command';
import { testTempDir } from '../../../test/support/cleanup';

const logger = createLogger('backup-test', process.env.LOG_LEVEL ?? 'fatal');
const TOPIC = 'svc.thing.v1';

/**
 * A data dir with one consumer (group `svc`) that applies each event of TOPIC to its own store, svc/svc.db, before the
 * log records its position, as every service's consumer does.
 */
function dataDirWithConsumer(root: string) {
  const dataDir = join(root, 'data');
  mkdirSync(join(dataDir, 'svc'), { recursive: true });
  mkdirSync(join(dataDir, 'files', 'objects', '.tmp'), { recursive: true });
  writeFileSync(join(dataDir, 'files', 'objects', 'bytes-1'), 'file bytes');
  writeFileSync(join(dataDir, 'files', 'objects', '.tmp', 'upload-under-way'), 'half');
  writeFileSync(join(dataDir, 'svc.lock'), '{"pid":1}');
  const state = new Database(join(dataDir, 'svc', 'svc.db'));
  state.pragma('journal_mode = WAL');
  state.exec('CREATE TABLE applied (key TEXT PRIMARY KEY)');
  state.close();
  return { dataDir, log: join(dataDir, 'events', 'events.db') };
}

async function consume(dataDir: string): Promise<{ bus: SqliteEventLog; applied: () => string[]; close: () => Promise<void> }> {
  mkdirSync(join(dataDir, 'events'), { recursive: true });
  const bus = new SqliteEventLog({ path: join(dataDir, 'events', 'events.db'), logger, pollIntervalMs: 20, retryBaseMs: 10 });
  const state = new Database(join(dataDir, 'svc', 'svc.db'));
  const subscription = await bus.subscribe({ group: 'svc', topics: [TOPIC], handler: async (event) => void state.prepare('INSERT OR IGNORE INTO applied (key) VALUES (?)').run(event.key) });
  return {
    bus,
    applied: () => (state.prepare('SELECT key FROM applied ORDER BY key').all() as { key: string }[]).map((r) => r.key),
    async close() {
      await subscription.close();
      await bus.close();
      state.close();
    },
  };
}

function committed(log: string): number {
  const db = new Database(log, { readonly: true });
  try {
    return (db.prepare("SELECT seq FROM consumer_offsets WHERE group_id = 'svc'").get() as { seq: number }).seq;
  } finally {
    db.close();
  }
}

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((r) => setTimeout(r, 25));
  if (!done()) throw new Error(`timed out waiting for ${what}`);
}

describe('backUpDataDir (an online backup of the embedded data dir)', () => {
  let root: string;
  beforeEach(() => {
    root = testTempDir('cards-backup-unit-');
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('copies every store at one moment: a change to a store or the log while it copies is in no copy, so they agree', async () => {
    const { dataDir, log } = dataDirWithConsumer(root);
    const live = await consume(dataDir);
    await live.bus.publish([{ topic: TOPIC, key: 'before', payload: new Uint8Array([1]) }]);
    await until('the first event applied', () => live.applied().includes('before') && committed(log) > 0);

    // Another process (busy_timeout 0: it would wait) tries to store a change with its event while the backup copies.
    const tried: string[] = [];
    const write = (path: string, sql: string, ...params: unknown[]) => {
      const db = new Database(path);
      try {
        db.pragma('busy_timeout = 0');
        db.prepare(sql).run(...params);
        tried.push('stored');
      } catch (err) {
        tried.push((err as { code?: string }).code ?? String(err));
      } finally {
        db.close();
      }
    };
    const backup = join(root, 'backup');
    const result = await backUpDataDir(dataDir, backup, {
      whileWritesHeld: () => {
        write(join(dataDir, 'svc', 'svc.db'), 'INSERT INTO applied (key) VALUES (?)', 'during');
        write(log, 'INSERT INTO events (topic, key, payload, published_at) VALUES (?, ?, ?, ?)', TOPIC, 'during', Buffer.from([2]), new Date().toISOString());
      },
    });
    await live.close();
    expect(tried).toEqual(['SQLITE_BUSY', 'SQLITE_BUSY']);
    expect(result.stores).toEqual(['events/events.db', 'svc/svc.db']);

    const restored = await consume(backup);
    try {
      await restored.bus.publish([{ topic: TOPIC, key: 'after', payload: new Uint8Array([3]) }]);
      await until('the restored consumer to apply a new event', () => restored.applied().includes('after'));
      expect(restored.applied()).toEqual(['after', 'before']);
      expect(committed(join(backup, 'events', 'events.db'))).toBe(2);
    } finally {
      await restored.close();
    }
    // Writes go on once the backup is done.
    write(join(dataDir, 'svc', 'svc.db'), 'INSERT INTO applied (key) VALUES (?)', 'later');
    expect(tried.at(-1)).toBe('stored');
  });

  it('holds writes only to begin its snapshots: a write from another process while it copies is stored at once and is in no copy', async () => {
    const { dataDir, log } = dataDirWithConsumer(root);
    const live = await consume(dataDir);
    await live.bus.publish([{ topic: TOPIC, key: 'before', payload: new Uint8Array([1]) }]);
    await until('the first event applied', () => live.applied().includes('before') && committed(log) > 0);

    // Another process (busy_timeout 0: a held lock fails it at once) stores a change and its event while each store copies.
    const writeFromAnotherProcess = (key: string): string =>
      execFileSync(process.execPath, ['-e', `
        const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
        const write = (path, sql, ...params) => {
          const db = new Database(path);
          try { db.pragma('busy_timeout = 0'); db.prepare(sql).run(...params); return 'stored'; }
          catch (err) { return err.code || String(err); }
          finally { db.close(); }
        };
        process.stdout.write([
          write(${JSON.stringify(join(dataDir, 'svc', 'svc.db'))}, 'INSERT INTO applied (key) VALUES (?)', ${JSON.stringify(key)}),
          write(${JSON.stringify(log)}, 'INSERT INTO events (topic, key, payload, published_at) VALUES (?, ?, ?, ?)', ${JSON.stringify(TOPIC)}, ${JSON.stringify(key)}, Buffer.from([2]), new Date().toISOString()),
        ].join(' '));
      `], { encoding: 'utf8' });
    const tried: string[] = [];
    const backup = join(root, 'backup');
    const result = await backUpDataDir(dataDir, backup, { whileCopying: (store) => void tried.push(`${store}: ${writeFromAnotherProcess(`during ${store}`)}`) });
    await live.close();
    expect(tried).toEqual(['events/events.db: stored stored', 'svc/svc.db: stored stored']);
    expect(typeof result.writesHeldMs).toBe('number');

    // The data dir has them; the copy, made of the stores as they were when the hold began, has none of them.
    const keys = (path: string, sql: string) => {
      const db = new Database(path, { readonly: true });
      try {
        return (db.prepare(sql).all() as { key: string }[]).map((r) => r.key);
      } finally {
        db.close();
      }
    };
    expect(keys(join(dataDir, 'svc', 'svc.db'), 'SELECT key FROM applied ORDER BY key')).toEqual(expect.arrayContaining(['before', 'during events/events.db', 'during svc/svc.db']));
    expect(keys(join(backup, 'svc', 'svc.db'), 'SELECT key FROM applied ORDER BY key')).toEqual(['before']);
    expect(keys(join(backup, 'events', 'events.db'), 'SELECT key FROM events ORDER BY seq')).toEqual(['before']);
    for (const store of result.stores) {
      const db = new Database(join(backup, store));
      try {
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
        expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      } finally {
        db.close();
      }
    }
  });

  it('lets go of each store once it is copied: while the next stores copy, its checkpoints go on and its WAL is cut back', async () => {
    const dataDir = join(root, 'data');
    for (const store of ['a/a.db', 'b/b.db']) {
      mkdirSync(join(dataDir, store, '..'), { recursive: true });
      const db = new Database(join(dataDir, store));
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE t (v TEXT)');
      db.close();
    }
    // Another process (a service) writes to a store and checkpoints it (TRUNCATE: every frame written back and the
    // -wal cut to nothing, which no reader of an older snapshot may be using; busy_timeout 0: answers at once).
    const writeAndCheckpoint = (store: string): { busy: number; wal: number } => {
      const path = join(dataDir, store);
      return JSON.parse(
        execFileSync(process.execPath, ['-e', `
          const Database = require(${JSON.stringify(require.resolve('better-sqlite3'))});
          const db = new Database(${JSON.stringify(path)});
          db.pragma('busy_timeout = 0');
          db.prepare('INSERT INTO t (v) VALUES (?)').run('written while another store copies');
          const [{ busy }] = db.pragma('wal_checkpoint(TRUNCATE)');
          process.stdout.write(JSON.stringify({ busy, wal: require('node:fs').statSync(${JSON.stringify(`${path}-wal`)}).size }));
          db.close();
        `], { encoding: 'utf8' }),
      ) as { busy: number; wal: number };
    };
    const seen: Record<string, { busy: number; wal: number }> = {};
    await backUpDataDir(dataDir, join(root, 'backup'), {
      whileCopying: (store) => {
        if (store === 'b/b.db') seen['a/a.db'] = writeAndCheckpoint('a/a.db');
      },
    });
    // a/a.db was copied before b/b.db began: nothing of the backup holds it any more.
    expect(seen).toEqual({ 'a/a.db': { busy: 0, wal: 0 } });
    const copied = new Database(join(root, 'backup', 'a', 'a.db'), { readonly: true });
    try {
      expect(copied.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 0 });
    } finally {
      copied.close();
    }
  });

  it('copies a store made after the data dir was listed (a service started for the first time meanwhile) with the others', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    const backup = join(root, 'backup');
    const result = await backUpDataDir(dataDir, backup, {
      // The first copy of the other files is done; a service starting for the first time makes its store and writes.
      beforeHold: () => {
        mkdirSync(join(dataDir, 'newer'), { recursive: true });
        const db = new Database(join(dataDir, 'newer', 'newer.db'));
        db.pragma('journal_mode = WAL');
        db.exec("CREATE TABLE t (v TEXT); INSERT INTO t (v) VALUES ('written before the backup began its hold')");
        db.close();
      },
    });
    expect(result.stores).toEqual(['newer/newer.db', 'svc/svc.db']);
    const copied = new Database(join(backup, 'newer', 'newer.db'), { readonly: true });
    try {
      expect(copied.prepare('SELECT v FROM t').all()).toEqual([{ v: 'written before the backup began its hold' }]);
    } finally {
      copied.close();
    }
  });

  it('leaves out of the copy a text deleted before secure_delete, as free pages of an older store keep it', async () => {
    const dataDir = join(root, 'data');
    mkdirSync(join(dataDir, 'cards'), { recursive: true });
    const path = join(dataDir, 'cards', 'cards.db');
    // A store made by a release before secure_delete: a deleted card's text stays in the file's free pages.
    const older = new Database(path);
    older.pragma('journal_mode = WAL');
    older.exec('CREATE TABLE cards (text TEXT)');
    older.prepare('INSERT INTO cards (text) VALUES (?)').run(`deleted card text ${'d'.repeat(20_000)}`);
    older.prepare('INSERT INTO cards (text) VALUES (?)').run('kept card text');
    older.prepare("DELETE FROM cards WHERE text LIKE 'deleted card text%'").run();
    older.pragma('user_version = 7');
    older.pragma('wal_checkpoint(TRUNCATE)');
    older.close();
    expect(readFileSync(path).includes('deleted card text')).toBe(true);
    // Today's services open it with secure_delete = ON, which zeroes what is deleted from now on only.
    const service = openSqlite(path);
    try {
      await backUpDataDir(dataDir, join(root, 'backup'));
    } finally {
      service.close();
    }
    const copy = join(root, 'backup', 'cards', 'cards.db');
    expect(readFileSync(copy).includes('deleted card text')).toBe(false);
    expect(readdirSync(join(root, 'backup', 'cards'))).toEqual(['cards.db']);
    const copied = new Database(copy);
    try {
      expect(copied.prepare('SELECT text FROM cards').all()).toEqual([{ text: 'kept card text' }]);
      expect(copied.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(copied.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(copied.pragma('user_version', { simple: true })).toBe(7);
      expect(copied.pragma('freelist_count', { simple: true })).toBe(0);
    } finally {
      copied.close();
    }
  });

  it('leaves out of the copy a text deleted with secure_delete on, kept in a page\'s unused space, even when the store has no free page', async () => {
    const dataDir = join(root, 'data');
    mkdirSync(join(dataDir, 'cards'), { recursive: true });
    const path = join(dataDir, 'cards', 'cards.db');
    // A store the services made (secure_delete ON from its first write): cards added in no particular order (its index
    // pages split and are rebuilt), one in ten deleted, then more added until no free page is left.
    const service = openSqlite(path);
    try {
      service.exec('CREATE TABLE cards (id INTEGER PRIMARY KEY, text TEXT NOT NULL); CREATE INDEX cards_by_text ON cards (text)');
      const add = service.prepare('INSERT INTO cards (id, text) VALUES (?, ?)');
      const text = (i: number) => `card ${String(i).padStart(5, '0')} ${'t'.repeat((i * 37) % 200)}`;
      for (let k = 0; k < 2000; k++) add.run((k * 7919) % 2000, text((k * 7919) % 2000));
      service.prepare('DELETE FROM cards WHERE id % 10 = 3').run();
      for (let i = 2000; service.pragma('freelist_count', { simple: true }) !== 0; i++) add.run(i, text(i));
      service.pragma('wal_checkpoint(TRUNCATE)');
      // secure_delete zeroes the deleted cells, not the stale copies a page rebuilt earlier left in its unused space.
      const deletedIn = (bytes: Buffer) => Array.from({ length: 200 }, (_, n) => n * 10 + 3).filter((i) => bytes.includes(`card ${String(i).padStart(5, '0')} `));
      expect(deletedIn(readFileSync(path)).length).toBeGreaterThan(0);
      await backUpDataDir(dataDir, join(root, 'backup'));
      const copy = join(root, 'backup', 'cards', 'cards.db');
      expect(deletedIn(readFileSync(copy))).toEqual([]);
      const copied = new Database(copy, { readonly: true });
      try {
        expect(copied.prepare('SELECT count(*) AS n FROM cards WHERE id % 10 = 3 AND id < 2000').get()).toEqual({ n: 0 });
        expect(copied.prepare('SELECT count(*) AS n FROM cards').get()).toEqual(service.prepare('SELECT count(*) AS n FROM cards').get());
      } finally {
        copied.close();
      }
    } finally {
      service.close();
    }
  });

  it('keeps incremental auto_vacuum in the copy of a store made with it (the event log)', async () => {
    const dataDir = join(root, 'data');
    const log = new SqliteEventLog({ path: join(dataDir, 'events', 'events.db'), logger, pollIntervalMs: 20, retryBaseMs: 10 });
    try {
      await log.publish([{ topic: TOPIC, key: 'k', payload: new Uint8Array([1]) }]);
      await backUpDataDir(dataDir, join(root, 'backup'));
    } finally {
      await log.close();
    }
    const copied = new Database(join(root, 'backup', 'events', 'events.db'));
    try {
      expect(copied.pragma('auto_vacuum', { simple: true })).toBe(2);
      expect(copied.pragma('integrity_check', { simple: true })).toBe('ok');
      expect((copied.prepare('SELECT key FROM events').all() as { key: string }[]).map((r) => r.key)).toEqual(['k']);
    } finally {
      copied.close();
    }
  });

  it('flushes every file and directory of the copy to disk before it takes the target name, and that name after', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    writeFileSync(join(dataDir, 'svc', 'secret'), 'k'.repeat(64));
    const backup = join(root, 'backup');
    // What the backup asks of the file system, in order: each fsync named by the path its handle was opened on.
    const real = { open: fs.promises.open, renameSync: fs.renameSync };
    const steps: string[] = [];
    const spies = [
      jest.spyOn(fs.promises, 'open').mockImplementation(async (...args: Parameters<typeof fs.promises.open>) => {
        const handle = await real.open(...args);
        const sync = handle.sync.bind(handle);
        handle.sync = async () => {
          steps.push(`fsync ${String(args[0])}`);
          await sync();
        };
        return handle;
      }),
      jest.spyOn(fs, 'renameSync').mockImplementation((from: fs.PathLike, to: fs.PathLike) => {
        steps.push(`rename ${String(from)} to ${String(to)}`);
        real.renameSync(from, to);
      }),
    ];
    try {
      await backUpDataDir(dataDir, backup);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    const renamed = steps.indexOf(`rename ${backup}.partial to ${backup}`);
    expect(renamed).toBeGreaterThan(0);
    // Everything the copy holds, files and directories, as it stood before the rename: each flushed before it.
    const inCopy = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? [...inCopy(join(dir, entry.name)), join(dir, entry.name)] : [join(dir, entry.name)]));
    const flushed = [...inCopy(backup), backup].map((path) => `fsync ${backup}.partial${path.slice(backup.length)}`);
    expect(flushed).toEqual(expect.arrayContaining([`fsync ${backup}.partial/svc/svc.db`, `fsync ${backup}.partial/svc/secret`, `fsync ${backup}.partial/svc`, `fsync ${backup}.partial`]));
    const before = steps.slice(0, renamed);
    for (const step of flushed) expect([step, before.includes(step)]).toEqual([step, true]);
    // Then the rename itself, written in the target's parent directory.
    expect(steps.slice(renamed + 1)).toEqual([`fsync ${root}`]);
  });

  it('fails when a file of the copy cannot be flushed (no target, no .partial left; the file named), says the copy is whole when only its name cannot be flushed, and lets be a file system that cannot flush directories', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    const realOpen = fs.promises.open;
    const failing = (failOn: (path: string) => NodeJS.ErrnoException | undefined) => [
      jest.spyOn(fs.promises, 'open').mockImplementation(async (...args: Parameters<typeof fs.promises.open>) => {
        const handle = await realOpen(...args);
        const sync = handle.sync.bind(handle);
        handle.sync = async () => {
          const err = failOn(String(args[0]));
          if (err) throw err;
          await sync();
        };
        return handle;
      }),
    ];
    const errno = (code: string) => Object.assign(new Error(`${code}: fsync`), { code });
    // The disk fails a write-back of a store's copy: the backup fails rather than naming a copy it could not flush.
    let spies = failing((path) => (path.endsWith('svc.db') ? errno('EIO') : undefined));
    try {
      await expect(backUpDataDir(dataDir, join(root, 'broken'))).rejects.toThrow(
        `backup failed: the copy could not be flushed to disk (${join(root, 'broken.partial', 'svc', 'svc.db')}: EIO: fsync); nothing was kept and ${join(root, 'broken')} was not made`,
      );
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(readdirSync(root).filter((name) => name.startsWith('broken'))).toEqual([]);
    // The rename's own flush fails: the copy is whole under its name, and the failure says so rather than a bare EIO.
    spies = failing((path) => (path === root ? errno('EIO') : undefined));
    try {
      const failed = backUpDataDir(dataDir, join(root, 'unflushed-name'));
      await expect(failed).rejects.toThrow(DataDirBackupError);
      await expect(failed).rejects.toThrow(`the copy is whole at ${join(root, 'unflushed-name')} (every file flushed), but its name could not be flushed to disk (${root}: EIO: fsync)`);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(readdirSync(join(root, 'unflushed-name', 'svc'))).toEqual(['svc.db']);
    rmSync(join(root, 'unflushed-name'), { recursive: true });
    // A file system that does not fsync directories (EINVAL) still gets its backup, its files flushed.
    spies = failing((path) => (fs.statSync(path).isDirectory() ? errno('EINVAL') : undefined));
    try {
      await expect(backUpDataDir(dataDir, join(root, 'backup'))).resolves.toMatchObject({ stores: ['svc/svc.db'] });
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    expect(existsSync(join(root, 'backup', 'svc', 'svc.db'))).toBe(true);
  });

  it('leaves out a store removed after the data dir was listed and before its moment, naming it, rather than failing', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    mkdirSync(join(dataDir, 'gone'), { recursive: true });
    new Database(join(dataDir, 'gone', 'gone.db')).exec('CREATE TABLE t (v TEXT)').close();
    const backup = join(root, 'backup');
    const result = await backUpDataDir(dataDir, backup, {
      // While the other files are copied (seconds for thousands of mails), an operator removes a store (a search index to rebuild).
      beforeHold: () => rmSync(join(dataDir, 'gone'), { recursive: true, force: true }),
    });
    expect(result).toMatchObject({ stores: ['svc/svc.db'], gone: ['gone/gone.db'] });
    expect(existsSync(join(backup, 'gone'))).toBe(false);
    expect(existsSync(join(backup, 'svc', 'svc.db'))).toBe(true);
    // A store file removed with its directory kept: the same.
    const second = await backUpDataDir(dataDir, join(root, 'second'), {
      beforeHold: () => {
        rmSync(join(dataDir, 'svc', 'svc.db'));
        new Database(join(dataDir, 'svc', 'other.db')).exec('CREATE TABLE t (v TEXT)').close();
      },
    });
    expect(second).toMatchObject({ stores: ['svc/other.db'], gone: ['svc/svc.db'] });
  });

  it('leaves out a directory removed while the data dir is listed (its parent listed it, it is gone when walked)', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    mkdirSync(join(dataDir, 'mail', 'old'), { recursive: true });
    writeFileSync(join(dataDir, 'mail', 'old', 'one.eml'), 'mail');
    const mail = join(dataDir, 'mail', 'old');
    const real = fs.readdirSync;
    // Another process removes the directory between its parent's listing and the backup's walk into it.
    const spy = jest.spyOn(fs, 'readdirSync').mockImplementation(((path: fs.PathLike, options?: unknown) => {
      if (String(path) === mail) rmSync(mail, { recursive: true, force: true });
      return (real as (p: fs.PathLike, o?: unknown) => unknown)(path, options);
    }) as typeof fs.readdirSync);
    let result;
    try {
      result = await backUpDataDir(dataDir, join(root, 'backup'));
    } finally {
      spy.mockRestore();
    }
    expect(result.stores).toEqual(['svc/svc.db']);
    expect(existsSync(join(root, 'backup', 'mail', 'old'))).toBe(false);
    expect(readFileSync(join(root, 'backup', 'files', 'objects', 'bytes-1'), 'utf8')).toBe('file bytes');
  });

  it('copies a store removed once its snapshot is begun as it was at the moment of the backup', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    const state = new Database(join(dataDir, 'svc', 'svc.db'));
    state.prepare('INSERT INTO applied (key) VALUES (?)').run('kept');
    state.close();
    const backup = join(root, 'backup');
    const result = await backUpDataDir(dataDir, backup, { whileWritesHeld: () => rmSync(join(dataDir, 'svc'), { recursive: true, force: true }) });
    expect(result).toMatchObject({ stores: ['svc/svc.db'], gone: [] });
    const copied = new Database(join(backup, 'svc', 'svc.db'), { readonly: true });
    try {
      expect(copied.prepare('SELECT key FROM applied').all()).toEqual([{ key: 'kept' }]);
    } finally {
      copied.close();
    }
  });

  it('backs up into a target named with a trailing slash, and leaves nothing under that name when it refuses', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    const empty = join(root, 'empty');
    mkdirSync(empty);
    await expect(backUpDataDir(empty, `${join(root, 'refused')}/`)).rejects.toThrow('no SQLite store');
    expect(readdirSync(root).sort()).toEqual(['data', 'empty']);
    const result = await backUpDataDir(dataDir, `${join(root, 'backup')}/`);
    expect(result.stores).toEqual(['svc/svc.db']);
    expect(readdirSync(root).sort()).toEqual(['backup', 'data', 'empty']);
    expect(readdirSync(join(root, 'backup')).sort()).toEqual(['files', 'svc']);
    expect(readFileSync(join(root, 'backup', 'files', 'objects', 'bytes-1'), 'utf8')).toBe('file bytes');
  });

  it('refuses a second backup into the same target while one runs, naming it, and takes over the claim of one that was killed', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    const backup = join(root, 'backup');
    let second: Promise<unknown> | undefined;
    const first = backUpDataDir(dataDir, backup, {
      beforeHold: () => {
        // The first's .partial is made and holds the data dir's other files: the second run starts now.
        second = backUpDataDir(dataDir, backup).catch((err: unknown) => err);
        return second.then(() => undefined);
      },
    });
    const result = await first;
    expect(result.stores).toEqual(['svc/svc.db']);
    const refused = (await second) as Error;
    expect(refused).toBeInstanceOf(DataDirBackupError);
    expect(refused.message).toContain(`another backup into ${backup} is under way (pid ${process.pid}`);
    expect(readdirSync(root).sort()).toEqual(['backup', 'data']);
    expect(readdirSync(join(backup, 'svc')).sort()).toEqual(['svc.db']);
    // A backup killed midway left its claim (a pid now gone) and its .partial: the next run takes both over.
    const killed = spawnSync(process.execPath, ['-e', '0']).pid as number;
    writeFileSync(join(root, 'again.partial.pid'), JSON.stringify({ pid: killed, host: hostname() }));
    mkdirSync(join(root, 'again.partial', 'svc'), { recursive: true });
    writeFileSync(join(root, 'again.partial', 'svc', 'svc.db.pages'), 'cut short');
    expect((await backUpDataDir(dataDir, join(root, 'again'))).stores).toEqual(['svc/svc.db']);
    expect(readdirSync(root).sort()).toEqual(['again', 'backup', 'data']);
    expect(readdirSync(join(root, 'again', 'svc')).sort()).toEqual(['svc.db']);
  });

  it('copies file bytes and secrets, never locks, SQLite side files or temporaries, privately, and refuses an existing target', async () => {
    const { dataDir } = dataDirWithConsumer(root);
    writeFileSync(join(dataDir, 'svc', 'secret'), 'k'.repeat(64), { mode: 0o600 });
    // A file an earlier release made 0644 (before the data dir was kept private) is private in the copy all the same.
    writeFileSync(join(dataDir, 'files', 'objects', 'bytes-0644'), 'older bytes');
    chmodSync(join(dataDir, 'files', 'objects', 'bytes-0644'), 0o644);
    const live = await consume(dataDir);
    const backup = join(root, 'backup');
    const umask = process.umask(0o077);
    try {
      await backUpDataDir(dataDir, backup);
    } finally {
      process.umask(umask);
      await live.close();
    }
    expect(readFileSync(join(backup, 'files', 'objects', 'bytes-1'), 'utf8')).toBe('file bytes');
    expect(readFileSync(join(backup, 'svc', 'secret'), 'utf8')).toBe('k'.repeat(64));
    for (const absent of ['svc.lock', 'files/objects/.tmp', 'svc/svc.db-wal', 'svc/svc.db-shm', 'events/events.db-wal', 'backup.partial']) expect(existsSync(join(backup, absent))).toBe(false);
    expect(statSync(join(backup, 'svc', 'svc.db')).mode & 0o077).toBe(0);
    expect(statSync(join(backup, 'svc', 'secret')).mode & 0o077).toBe(0);
    expect(readFileSync(join(backup, 'files', 'objects', 'bytes-0644'), 'utf8')).toBe('older bytes');
    expect(statSync(join(backup, 'files', 'objects', 'bytes-0644')).mode & 0o077).toBe(0);
    await expect(backUpDataDir(dataDir, backup)).rejects.toThrow(DataDirBackupError);
    await expect(backUpDataDir(join(root, 'nothing'), join(root, 'other'))).rejects.toThrow('no data dir');
    await expect(backUpDataDir(dataDir, join(dataDir, 'backups', 'today'))).rejects.toThrow('inside the data dir');
    expect(existsSync(join(dataDir, 'backups'))).toBe(false);
  });
});

describe('the backup command', () => {
  const run = async (argv: string[], env: Record<string, string | undefined>) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runBackupCommand(argv, env, logger, { out: (l) => out.push(l), err: (l) => err.push(l) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  };

  it('backs up DATA_DIR, refuses engines whose state is elsewhere, and answers 2 to bad usage', async () => {
    const root = testTempDir('cards-backup-command-');
    try {
      const { dataDir } = dataDirWithConsumer(root);
      const done = await run([join(root, 'copy')], { DATA_DIR: dataDir });
      expect(done).toMatchObject({ code: 0, err: '' });
      expect(done.out).toContain('1 store(s) (svc/svc.db) copied at one moment');
      expect(existsSync(join(root, 'copy', 'svc', 'svc.db'))).toBe(true);
      expect(await run([join(root, 'copy')], { DATA_DIR: dataDir })).toMatchObject({ code: 1, err: expect.stringContaining('exists already') });
      expect(await run([join(root, 'other')], { DATA_DIR: dataDir, MONGO_URL: 'mongodb://db', KAFKA_BROKERS: 'k:9092' })).toMatchObject({ code: 1, err: expect.stringContaining('MONGO_URL, KAFKA_BROKERS set') });
      expect(existsSync(join(root, 'other'))).toBe(false);
      expect((await run([], { DATA_DIR: dataDir })).code).toBe(2);
      expect((await run(['a', 'b'], { DATA_DIR: dataDir })).code).toBe(2);
      // A data dir without a store (DATA_DIR pointing at the wrong directory, or at one no service has used) is no backup.
      mkdirSync(join(root, 'empty', 'mail'), { recursive: true });
      writeFileSync(join(root, 'empty', 'mail', 'one.eml'), 'mail');
      const empty = await run([join(root, 'empty-copy')], { DATA_DIR: join(root, 'empty') });
      expect(empty).toEqual({ code: 1, out: '', err: `no SQLite store (*.db) in ${join(root, 'empty')}: is DATA_DIR the services' data dir? Nothing was backed up` });
      expect(existsSync(join(root, 'empty-copy'))).toBe(false);
      expect(existsSync(join(root, 'empty-copy.partial'))).toBe(false);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
