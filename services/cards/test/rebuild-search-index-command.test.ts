import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, SqliteOutboxStore } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteSearchIndexRebuildProgress } from '../src/adapters/sqlite/sqlite-search-index-rebuild-progress';
import { runRebuildSearchIndexCommand } from '../src/cli/rebuild-search-index-command';
import { sqliteCardsPath } from '../src/cards-store';
import { fingerprintOf } from '../src/domain/rules';
import { aCard } from './builders';

/**
 * The operator's rebuild-search-index records its progress as the service's rebuilds do, so a run cut short (Ctrl-C, a
 * dropped session) is resumed by the running cards service; and it starts from the start, taking over a rebuild the
 * service had under way.
 */
describe('rebuild-search-index command: recorded progress', () => {
  let dir: string;
  let db: ReturnType<typeof openCardsDatabase>;
  const logger = createLogger('rebuild-search-index', 'fatal');
  const io = { lines: [] as string[], out: (line: string) => void io.lines.push(line), err: (line: string) => void io.lines.push(line) };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cards-rebuild-command-'));
    // The service's connection to the store the command opens too.
    db = openCardsDatabase(sqliteCardsPath(dir));
    io.lines.length = 0;
  });
  afterEach(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('records each batch while it runs, from the start even over the service’s unfinished rebuild, and removes the record once done', async () => {
    const cards = new SqliteCardRepository(db);
    const stored: string[] = [];
    for (let i = 0; i < 5; i++) {
      const card = aCard().build();
      await cards.insert(card, fingerprintOf(card.content), []);
      stored.push(card.id);
    }
    stored.sort();
    const progress = new SqliteSearchIndexRebuildProgress(db);
    const services = await progress.begin('search found its index lost', 'cards@host');
    await progress.advance(services, { phase: 'bookmarks' });
    const relayView = new SqliteOutboxStore(db);
    const recorded = () => db.prepare('SELECT reason, phase, after, holder FROM search_index_rebuild').get() as Record<string, string | null> | undefined;

    // No relay yet: the command appends its first batch, then waits for room.
    let code: number | undefined;
    const running = runRebuildSearchIndexCommand(['--batch-size', '2', '--max-pending', '2'], { DATA_DIR: dir }, logger, io).then((c) => (code = c));
    for (let i = 0; i < 250 && (await relayView.count()) < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(recorded()).toEqual({ reason: 'the rebuild-search-index command', phase: 'cards', after: stored[1], holder: expect.stringMatching(/^rebuild-search-index@/) });
    // The service's rebuild was taken over: its holder learns it at its next batch.
    expect(await progress.advance(services, { phase: 'bookmarks', after: 'x y' })).toBe(false);
    // Alive: nobody takes it over within the lease.
    expect(await progress.claimUnfinished('cards@host', 60_000)).toBeUndefined();

    const told: string[] = [];
    const relay = async () => {
      const batch = await relayView.pending(100);
      told.push(...batch.map((e) => e.key));
      await relayView.remove(batch.map((e) => e.id));
    };
    while (code === undefined) {
      await relay();
      await new Promise((r) => setTimeout(r, 10));
    }
    await running;
    await relay();
    expect(code).toBe(0);
    expect(told.sort()).toEqual(stored);
    expect(recorded()).toBeUndefined();
  });
});
