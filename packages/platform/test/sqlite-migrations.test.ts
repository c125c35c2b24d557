import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite, type SqliteDatabase, type SqliteMigration } from '../src/sqlite';
import { testTempDir } from '../../../test/support/cleanup';

describe('openSqlite migrations', () => {
  it('runs a step given as a function once, in order, and rolls it back with its version when it throws', () => {
    const dir = testTempDir('cards-sqlite-migrations-');
    const path = join(dir, 'x.db');
    try {
      const calls: string[] = [];
      const fill = (db: SqliteDatabase) => {
        calls.push('fill');
        const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
        for (const v of ['a', 'b']) insert.run(v.toUpperCase());
      };
      const steps: SqliteMigration[] = ['CREATE TABLE t (v TEXT)', fill];
      openSqlite(path, steps).close();
      const again = openSqlite(path, steps);
      expect(calls).toEqual(['fill']);
      expect(again.prepare('SELECT v FROM t ORDER BY v').pluck().all()).toEqual(['A', 'B']);
      again.close();
      const failing: SqliteMigration[] = [...steps, (db) => {
        db.exec("INSERT INTO t (v) VALUES ('C')");
        throw new Error('step failed');
      }];
      expect(() => openSqlite(path, failing)).toThrow('step failed');
      const after = openSqlite(path);
      expect(after.pragma('user_version', { simple: true })).toBe(2);
      expect(after.prepare('SELECT count(*) FROM t').pluck().get()).toBe(2);
      after.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
