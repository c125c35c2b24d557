export { startCards } from './main';
// The store adapters, for benchmarks that compare the gateway with direct store access.
export { openCardsDatabase } from './adapters/sqlite/sqlite-cards-database';
export { SqliteCardRepository } from './adapters/sqlite/sqlite-card-repository';
export { SqliteVoteRepository } from './adapters/sqlite/sqlite-vote-repository';
export { SqliteCollectionRepository } from './adapters/sqlite/sqlite-collection-repository';
export { fingerprintOf, cardTextFromHtml } from './domain/rules';
export type { Card } from './domain/model';
