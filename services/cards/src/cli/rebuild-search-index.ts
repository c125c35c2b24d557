/**
 * Operators' tool that rebuilds the search index from the cards store: `tsx services/cards/src/cli/rebuild-search-index.ts`
 * (in the cards container: `tsx src/cli/rebuild-search-index.ts`). See docs/deploy.md.
 */
import { runOperatorCommand } from '@cards/platform';
import { runRebuildSearchIndexCommand } from './rebuild-search-index-command';

runOperatorCommand('rebuild-search-index', runRebuildSearchIndexCommand);
