import { createLogger } from '@cards/platform';

/**
 * The CardService collaborators a test is not about: search finds no near duplicates, no file names, no join dates,
 * a silent log. Spread into the deps, then name what the test is about.
 */
export const uninvolvedCardServiceDeps = {
  nearDuplicates: { find: async () => [] },
  files: { visibleFile: async () => null },
  users: { joinDates: async () => new Map() },
  logger: createLogger('cards-test', 'silent'),
};
