import type { CardRepository, CollectionRepository, OneTimeTasks, VoteRepository } from '../src/domain/ports';

/** One store (all three ports on the same data) for the contract suites; fresh and empty for every test. */
export interface CardsStoreFixture {
  cards: CardRepository;
  votes: VoteRepository;
  collections: CollectionRepository;
  oneTimeTasks: OneTimeTasks;
  /** Topics of the events stored with the changes and not yet relayed, oldest first. */
  pendingEventTopics(): Promise<string[]>;
  close(): Promise<void>;
}

export type CardsStoreFactory = () => Promise<CardsStoreFixture>;
