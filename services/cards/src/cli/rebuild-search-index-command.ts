import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { errorMessage, loadConfig, type CommandOutput, type Logger } from '@cards/platform';
import { DEFAULT_REBUILD_LEASE_MS, rebuildHolder } from '../application/search-index-rebuild-requests';
import { DEFAULT_REBUILD_BATCH_SIZE, DEFAULT_REBUILD_MAX_PENDING, rebuildSearchIndex, type RepublishProgress } from '../application/search-index-republisher';
import { openCardsStore, sqliteCardsPath, type CardsStore } from '../cards-store';

export const USAGE = `Usage: rebuild-search-index [options]

Tells the search service every stored card and bookmark again, through the cards service's own outbox (its
running relay publishes them), so a search index that was lost or damaged is built again. Harmless on a healthy
index: search rewrites each card as it is (embedding it again), no page is verified again and nothing is notified.
Each run starts from the start and records its progress in the cards store, as the service's own rebuilds do: a
run cut short (Ctrl-C, a lost session) is resumed by the running cards service where it stopped, within a minute.

Options:
  --batch-size <n>    cards (then bookmarks) read and queued at a time (default ${DEFAULT_REBUILD_BATCH_SIZE})
  --max-pending <n>   wait while the outbox holds this many unpublished events (default ${DEFAULT_REBUILD_MAX_PENDING})
  --help

Reads DATA_DIR and MONGO_URL like the cards service (run it where the cards service runs, with its environment).`;

const EnvSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  MONGO_URL: z.string().optional(),
});

const positiveInt = (name: string, value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a whole number of at least 1, got ${JSON.stringify(value)}`);
  return n;
};

const progressLine = (p: RepublishProgress) =>
  p.bookmarks === 0 ? `cards: ${p.cards} of ${p.cardsAtStart} queued` : `cards: ${p.cards} queued; bookmarks: ${p.bookmarks} queued`;

/** Runs `rebuild-search-index`; returns the exit code (0 done, 1 failed, 2 bad usage). */
export async function runRebuildSearchIndexCommand(argv: string[], env: Record<string, string | undefined>, logger: Logger, io: CommandOutput): Promise<number> {
  let batchSize: number;
  let maxPending: number;
  try {
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'batch-size': { type: 'string', default: String(DEFAULT_REBUILD_BATCH_SIZE) },
        'max-pending': { type: 'string', default: String(DEFAULT_REBUILD_MAX_PENDING) },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    if (positionals.length > 0) throw new Error(`unexpected argument ${JSON.stringify(positionals[0])}`);
    batchSize = positiveInt('batch-size', values['batch-size']);
    maxPending = positiveInt('max-pending', values['max-pending']);
  } catch (err) {
    io.err(`${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }

  let store: CardsStore;
  try {
    const config = loadConfig(EnvSchema, env);
    // Opening a missing SQLite file would create an empty store and report 0 cards: a wrong DATA_DIR must say so.
    if (!config.MONGO_URL && !existsSync(sqliteCardsPath(config.DATA_DIR))) {
      throw new Error(`no cards store at ${sqliteCardsPath(config.DATA_DIR)}: set DATA_DIR (or MONGO_URL) as the cards service has it`);
    }
    store = await openCardsStore(config, logger);
  } catch (err) {
    io.err(`cannot open the cards store: ${errorMessage(err)}`);
    return 1;
  }

  const startedAt = Date.now();
  // Recorded like the service's rebuilds: a run cut short is resumed by the service (after the lease, or at once when it
  // failed here), and a rebuild the service had under way stops there, this run starting from the start anyway.
  let run: string | undefined;
  let takenOver = false;
  const alive = setInterval(() => void (run && store.searchIndexRebuild.keepAlive(run).catch(() => undefined)), DEFAULT_REBUILD_LEASE_MS / 4);
  alive.unref();
  try {
    run = await store.searchIndexRebuild.begin('the rebuild-search-index command', rebuildHolder('rebuild-search-index'));
    const done = await rebuildSearchIndex({
      cards: store.cards,
      collections: store.collections,
      outbox: store.eventOutbox,
      batchSize,
      maxPending,
      progress: (p) => io.out(progressLine(p)),
      waiting: (pending) => io.out(`waiting: ${pending} events not yet published from the cards outbox (is the cards service running?)`),
      checkpoint: async (at) => {
        if (!(await store.searchIndexRebuild.advance(run!, at))) {
          takenOver = true;
          throw new Error('the rebuild was begun again meanwhile (search asked the cards service, or another run of this command): that one tells search everything');
        }
      },
    });
    await store.searchIndexRebuild.finish(run);
    const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
    io.out(`done in ${seconds} s: ${done.cards} card(s) and ${done.bookmarks} bookmark(s) queued for search; the cards service publishes them and search indexes them within minutes (watch a search find them)`);
    return 0;
  } catch (err) {
    if (run && !takenOver) await store.searchIndexRebuild.release(run).catch(() => undefined);
    const rest = takenOver ? '' : run ? ' The running cards service resumes it where it stopped; running the command again is harmless.' : ' Running the command again is harmless.';
    io.err(`stopped: ${errorMessage(err)}. What was queued stays queued.${rest}`);
    return 1;
  } finally {
    clearInterval(alive);
    await store.close().catch(() => undefined);
  }
}
