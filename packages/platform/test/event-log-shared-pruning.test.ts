import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { testTempDir } from '../../../test/support/cleanup';

const root = join(__dirname, '../../..');
const HOUR = 3_600_000;
const ROUNDS = 15;

// Services on the embedded event log (the separate-process layout) share DATA_DIR/events/events.db and each runs the
// retention: two processes publishing and pruning one file at once must neither fail (SQLITE_BUSY) nor delete an event
// a consumer group of its topic has not committed.
describe('two processes pruning one embedded event log', () => {
  let dir: string;
  beforeEach(() => (dir = testTempDir('event-log-shared-prune-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('both prune while both publish: no error, no event of a group that has not committed it lost, the committed ones deleted', async () => {
    const path = join(dir, 'events.db');
    const startFile = join(dir, 'go');
    const warnings: string[] = [];
    const bus = new SqliteEventLog({
      path,
      logger: pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) }),
      pollIntervalMs: 10,
      retention: { retentionMs: HOUR, unconsumedMs: 100 * HOUR, intervalMs: 3_600_000, batchSize: 50 },
    });
    // `fast` reads both topics; `slow` reads `shared` and is held on its first event, so commits none of them.
    const seen = new Map<string, number>();
    const fast = await bus.subscribe({ group: 'fast', topics: ['shared', 'other'], handler: async (e) => void seen.set(e.key, (seen.get(e.key) ?? 0) + 1) });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = await bus.subscribe({ group: 'slow', topics: ['shared'], handler: () => held });

    const child = spawn(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), join(__dirname, 'fixtures/prune-event-log-process.ts'), path, startFile, String(ROUNDS), 'child'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      await new Promise<void>((resolve) => child.stdout!.on('data', () => output.includes('waiting') && resolve()));
      writeFileSync(startFile, '');
      const errors: string[] = [];
      let deleted = 0;
      for (let round = 0; round < ROUNDS; round++) {
        try {
          const events = (topic: string) => Array.from({ length: 200 }, (_, i) => ({ topic, key: `parent-${topic}-${round}-${i}`, payload: new Uint8Array(300).fill(round) }));
          await bus.publish([...events('shared'), ...events('other')]);
          deleted += (await bus.prune(Date.now() + 2 * HOUR)).deleted;
        } catch (err) {
          errors.push(`${(err as { code?: string }).code ?? ''} ${(err as Error).message}`);
        }
        await new Promise((r) => setImmediate(r));
      }
      expect(await exited).toBe(0);
      const last = output.trim().split('\n').pop()!;
      const fromChild = JSON.parse(last) as { deleted: number; errors: string[] };
      expect({ parent: errors, child: fromChild.errors }).toEqual({ parent: [], child: [] });

      // Every event `fast` has to read, read once; then a last pass deletes every `other` event (committed by its only
      // group) and no `shared` one (`slow` committed none).
      const total = 2 * ROUNDS * 200;
      for (let i = 0; i < 1000 && seen.size < 2 * total; i++) await new Promise((r) => setTimeout(r, 10));
      expect({ read: seen.size, twice: [...seen.values()].filter((n) => n > 1).length }).toEqual({ read: 2 * total, twice: 0 });
      deleted += (await bus.prune(Date.now() + 2 * HOUR)).deleted;
      const db = new Database(path, { readonly: true });
      try {
        const count = (topic: string) => (db.prepare('SELECT COUNT(*) AS n FROM events WHERE topic = ?').get(topic) as { n: number }).n;
        expect({ shared: count('shared'), other: count('other') }).toEqual({ shared: total, other: 0 });
      } finally {
        db.close();
      }
      // The two passes together deleted each `other` event once.
      expect(deleted + fromChild.deleted).toBe(total);
      expect(warnings.filter((line) => /SQLITE_BUSY|retention failed/.test(line))).toEqual([]);
    } finally {
      release();
      child.kill();
      await exited;
      await slow.close();
      await fast.close();
      await bus.close();
    }
  }, 120_000);
});
