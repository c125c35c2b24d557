import { createLogger } from '@cards/platform';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import type { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { CardService } from '../src/application/card-service';

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

/** Every CardService dependency on one SQLite database, with an in-process content lock and no events: name the rest. */
export function sqliteCardServiceDeps(db: ReturnType<typeof openCardsDatabase>) {
  return {
    ...uninvolvedCardServiceDeps,
    cards: new SqliteCardRepository(db),
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db),
    contentLock: new InProcessContentLock(),
    eventsWritten: () => undefined,
  };
}

/**
 * CollectionService's dependencies on one SQLite database (its CardService on the same one, no file a collection names,
 * no events): a new CollectionService(deps) is one replica, another on the same deps a second one.
 */
export function sqliteCollectionServiceDeps(db: ReturnType<typeof openCardsDatabase>) {
  const cardDeps = sqliteCardServiceDeps(db);
  const { cards, collections } = cardDeps;
  return { collections, cards, cardService: new CardService(cardDeps), files: uninvolvedCardServiceDeps.files, eventsWritten: () => undefined };
}
