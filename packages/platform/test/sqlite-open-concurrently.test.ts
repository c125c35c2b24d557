import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openSqlite } from '../src/sqlite';
import { testTempDir } from '../../../test/support/cleanup';

const root = join(__dirname, '../../..');
const PROCESSES = 8;

// Services started together (the separate-process layout, or pods sharing a volume) open the same new event-log file
// at the same moment; each must find the schema complete, none may fail on a step another one applied.
describe('opening one new SQLite file from several processes at once', () => {
  let dir: string;
  beforeEach(() => (dir = testTempDir('sqlite-concurrent-')));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('applies every migration exactly once and every process opens it', async () => {
    for (let round = 0; round < 3; round++) {
      const path = join(dir, `shared-${round}.db`);
      const startFile = join(dir, `go-${round}`);
      const children = Array.from({ length: PROCESSES }, () => {
        const child = spawn(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), join(__dirname, 'fixtures/open-sqlite-process.ts'), path, startFile], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
        child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
        const waiting = new Promise<void>((resolve) => child.stdout!.on('data', () => output.includes('waiting') && resolve()));
        const exited = new Promise<{ code: number | null; output: string }>((resolve) => child.on('exit', (code) => resolve({ code, output })));
        return { waiting, exited };
      });
      await Promise.all(children.map((c) => c.waiting));
      writeFileSync(startFile, '');
      const results = await Promise.all(children.map((c) => c.exited));
      for (const { code, output } of results) {
        expect({ code, output: output.trim() }).toEqual({ code: 0, output: 'waiting\nversion 3' });
      }
      const db = openSqlite(path);
      expect(db.prepare('SELECT id FROM b').all()).toEqual([{ id: 1 }]);
      expect(db.prepare("SELECT name FROM pragma_table_info('a')").all()).toEqual([{ name: 'id' }, { name: 'note' }]);
      db.close();
    }
  }, 60_000);
});
