/**
 * Operators' tool for the event bus's dead letters: `tsx packages/platform/src/cli/dead-letters.ts <list|replay> ...`
 * (in a service's container: `tsx node_modules/@cards/platform/src/cli/dead-letters.ts ...`). See docs/deploy.md.
 */
import { createLogger } from '../logger';
import { runDeadLettersCommand } from './dead-letters-command';

// Log lines (Kafka client warnings) go to stderr, so stdout holds only the listing.
const logger = createLogger('dead-letters', process.env.LOG_LEVEL ?? 'warn', process.stderr);

runDeadLettersCommand(process.argv.slice(2), process.env, logger, {
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
