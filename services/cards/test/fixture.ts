import type { KeptKeyExpiry } from '@cards/platform';
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

/** `keyExpiry`: how long the store keeps the keys of deleted resources, and its clock (24 h by the real one when not given). */
export type CardsStoreFactory = (options?: { keyExpiry?: KeptKeyExpiry }) => Promise<CardsStoreFixture>;
