/**
 * Operators' tool for the event bus's dead letters: `tsx packages/platform/src/cli/dead-letters.ts <list|replay> ...`
 * (in a service's container: `tsx node_modules/@cards/platform/src/cli/dead-letters.ts ...`). See docs/deploy.md.
 */
import { runDeadLettersCommand } from './dead-letters-command';
import { runOperatorCommand } from './operator-command';

runOperatorCommand('dead-letters', runDeadLettersCommand);
