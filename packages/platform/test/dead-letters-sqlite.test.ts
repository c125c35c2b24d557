import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { events } from '@cards/proto';
import { runDeadLettersCommand } from '../src/cli/dead-letters-command';
import { createEventBus } from '../src/events/create-event-bus';
import { Topics } from '../src/events/event-bus';
import { SqliteDeadLetters } from '../src/events/sqlite-dead-letters';
import { SqliteEventLog } from '../src/events/sqlite-event-log';
import { createLogger } from '../src/logger';
import { describeDeadLettersContract } from './dead-letters.contract';
import { testTempDir } from '../../../test/support/cleanup';

const logger = createLogger('dead-letters-test', process.env.LOG_LEVEL ?? 'fatal');

describeDeadLettersContract('sqlite (embedded log)', async () => {
  const dir = testTempDir('cards-dead-letters-');
  const path = join(dir, 'events.db');
  const bus = new SqliteEventLog({ path, logger, pollIntervalMs: 50, retryBaseMs: 20 });
  const deadLetters = new SqliteDeadLetters(path);
  return {
    bus,
    deadLetters,
    async close() {
      await bus.close();
      await deadLetters.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('dead-letters command on the embedded log (DATA_DIR)', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = testTempDir('cards-dead-letters-cli-');
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runDeadLettersCommand(argv, { DATA_DIR: dataDir }, logger, { out: (l) => void out.push(l), err: (l) => void err.push(l) });
    return { code, out: out.join('\n'), err: err.join('\n') };
  }

  it('lists a dead letter, replays it only with --yes, and a second replay hands back nothing', async () => {
    const bus = createEventBus({ DATA_DIR: dataDir }, logger);
    let broken = true;
    const handled: string[] = [];
    const subscription = await bus.subscribe({
      group: 'files-ingestion',
      topics: [Topics.file],
      maxAttempts: 1,
      handler: async (e) => {
        if (broken) throw new Error('cards service refused the privacy change');
        handled.push(events.FileEvent.decode(e.payload).eventId);
      },
    });
    try {
      const payload = events.FileEvent.encode({ eventId: 'evt-file-1', occurredAt: new Date(), kind: { $case: 'privacyChanged', value: { fileId: 'file-1', userId: 'user-1', private: true } } }).finish();
      await bus.publish([{ topic: Topics.file, key: 'file-1', payload }]);
      let listed = await run('list');
      for (let i = 0; i < 400 && !listed.out.includes('evt-file-1'); i++) {
        await new Promise((r) => setTimeout(r, 50));
        listed = await run('list');
      }
      expect(listed.code).toBe(0);
      expect(listed.out).toContain(`files-ingestion/${Topics.file}/1  dead  ${Topics.file}  files-ingestion  file-1  evt-file-1`);
      expect(listed.out).toContain('"cards service refused the privacy change"');
      expect(listed.out).toContain('1 dead letter(s): 1 dead, 0 replay requested, 0 replayed');
      expect((await run('list', '--group', 'search-index')).out).toBe('0 dead letter(s): 0 dead, 0 replay requested, 0 replayed');

      broken = false;
      const dryRun = await run('replay', '--group', 'files-ingestion');
      expect(dryRun.out).toContain('dry run: 1 dead letter(s) would be handed back');
      expect((await run('list')).out).toContain('1 dead, 0 replay requested');

      const replay = await run('replay', '--group', 'files-ingestion', '--yes');
      expect(replay.code).toBe(0);
      expect(replay.out).toContain('1 dead letter(s) handed back');
      for (let i = 0; i < 400 && handled.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(handled).toEqual(['evt-file-1']);
      let after = await run('list', '--all', '--json');
      for (let i = 0; i < 400 && !after.out.includes('"replayed"'); i++) {
        await new Promise((r) => setTimeout(r, 50));
        after = await run('list', '--all', '--json');
      }
      expect(JSON.parse(after.out)).toMatchObject({ group: 'files-ingestion', eventId: 'evt-file-1', state: 'replayed' });
      expect((await run('list')).out).toBe('0 dead letter(s): 0 dead, 0 replay requested, 0 replayed');

      expect((await run('replay', '--yes')).out).toBe('0 dead letter(s) handed back to the group that failed each; its running consumers deliver them (see list)');
      expect(handled).toEqual(['evt-file-1']);
    } finally {
      await subscription.close();
      await bus.close();
    }
  });

  it('refuses bad usage (2) and a DATA_DIR without an event log (1), creating nothing', async () => {
    expect(await run('purge')).toMatchObject({ code: 2, err: expect.stringContaining('Usage: dead-letters <list|replay>') });
    expect(await run('list', '--bogus')).toMatchObject({ code: 2, err: expect.stringContaining("Unknown option '--bogus'") });
    const missing = join(dataDir, 'nowhere');
    const out: string[] = [];
    const code = await runDeadLettersCommand(['list'], { DATA_DIR: missing }, logger, { out: (l) => void out.push(l), err: (l) => void out.push(l) });
    expect(code).toBe(1);
    expect(out.join('\n')).toContain(`no embedded event log at ${join(missing, 'events', 'events.db')}`);
    expect(existsSync(missing)).toBe(false);
  });

  it('runs as a script (tsx), as an operator starts it in a container', async () => {
    const bus = createEventBus({ DATA_DIR: dataDir }, logger);
    await bus.close();
    const root = resolve(__dirname, '../../..');
    const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), join(__dirname, '../src/cli/dead-letters.ts'), 'list'], {
      env: { ...process.env, DATA_DIR: dataDir, KAFKA_BROKERS: '' },
    });
    expect(stdout).toBe('0 dead letter(s): 0 dead, 0 replay requested, 0 replayed\n');
  });
});
