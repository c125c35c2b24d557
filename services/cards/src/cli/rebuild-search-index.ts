/**
 * Operators' tool that rebuilds the search index from the cards store: `tsx services/cards/src/cli/rebuild-search-index.ts`
 * (in the cards container: `tsx src/cli/rebuild-search-index.ts`). See docs/deploy.md.
 */
import { createLogger } from '@cards/platform';
import { runRebuildSearchIndexCommand } from './rebuild-search-index-command';

// Log lines go to stderr, so stdout holds only the progress.
const logger = createLogger('rebuild-search-index', process.env.LOG_LEVEL ?? 'warn', process.stderr);

runRebuildSearchIndexCommand(process.argv.slice(2), process.env, logger, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
