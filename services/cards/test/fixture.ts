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
  /**
   * From now on the store refuses to delete bookmarks, as a process stopping (or its store answering no more) after a
   * removed collection's own delete and before its bookmarks' leaves it; see reopen.
   */
  refuseBookmarkDeletes?(): void;
  /** The same data opened again, as the next start opens it (refusals gone); this fixture is left as it is. */
  reopen?(): Promise<CardsStoreFixture>;
  close(): Promise<void>;
}

/** `keyExpiry`: how long the store keeps the keys of deleted resources, and its clock (24 h by the real one when not given). */
export type CardsStoreFactory = (options?: { keyExpiry?: KeptKeyExpiry }) => Promise<CardsStoreFixture>;
