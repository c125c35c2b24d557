import type { IndexedCard, IndexPage, PageRequest, SearchScope, StoredCard, StoredPoint } from './model';

/**
 * Turns text into a vector whose cosine to another text's vector measures how alike their meanings are.
 * Each embedder carries its own calibrated near-duplicate threshold, because cosine scales differ between models.
 */
export interface Embedder {
  /** Identifies model and pooling; the index re-embeds its cards when this changes. */
  readonly id: string;
  readonly dimensions: number;
  /** Resolves once the model is usable (loading may happen in the background). */
  ready(): Promise<void>;
  /**
   * One unit-length vector per text, in order. A text without known words gives the zero vector. `signal`: a search's
   * call's (aborted when its caller went away); an embedder that asks a remote model stops asking with it (AbortError).
   */
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /**
   * False for bag-of-words models: they cannot tell a text from the same words in another order, so their
   * duplicate verdict must be confirmed by word-shingle overlap.
   */
  readonly orderAware: boolean;
  /** The cosine at or above which a card of this length is a near duplicate of another. */
  duplicateThreshold(contentLength: number): number;
}

/**
 * The search index of root cards: vectors for semantic search, word trigrams for typo-tolerant full-text search,
 * and the fields that filter (author, privacy, tags, link, collections). Writes are idempotent: upserting the same
 * snapshot twice or removing twice changes nothing, and a snapshot older than the stored one is ignored.
 * A card's collections come from setBookmark alone, in whatever order bookmark and card writes arrive: upsert and
 * promote never change them, so card events need not list a card's collections, however many hold it.
 */
export interface CardIndex {
  /**
   * Stores or replaces a card; false when the stored card is newer or the card was removed after this snapshot.
   * A card with `collisionOf` is kept but never searched, so it can be promoted when its root goes.
   */
  upsert(card: IndexedCard): Promise<boolean>;
  /** Makes a stored collision a searchable root card; false when the card is unknown. */
  promote(cardId: string): Promise<boolean>;
  /** Removes a card (and remembers the removal so a late older snapshot cannot bring it back). */
  remove(cardId: string, removedAt: Date): Promise<void>;
  /**
   * Adds or removes a bookmark; `at` orders concurrent changes of one (collection, card) pair, the latest wins. A
   * bookmark of a card not stored yet applies once the card comes; one of a removed card is not kept.
   */
  setBookmark(collectionId: string, cardId: string, added: boolean, at: Date): Promise<void>;
  /**
   * Forgets at most `limit` of the markers that only keep event order right (a removed card's tombstone, a removed
   * bookmark) whose time is before `before`: no event older than them can still arrive (the event retention). A late
   * event older than a forgotten marker would apply again. Returns how many were forgotten.
   */
  pruneMarkers(before: Date, limit: number): Promise<number>;
  /**
   * Runs `apply`, which may call the write methods above, concurrently for different cards, and resolves once every
   * write it made is searchable. Each write method alone is searchable when it resolves; an adapter that makes writes
   * visible with a costly step (an Elasticsearch refresh) takes that step once per batch instead of once per write.
   */
  batch<T>(apply: () => Promise<T>): Promise<T>;
  get(cardId: string): Promise<StoredCard | undefined>;
  /** The stored card's vector point id and the root it collides with, read without its text or vector; undefined when not stored. */
  vectorPointOf(cardId: string): Promise<StoredPoint | undefined>;
  /** The stored card's text, read without its vector or other fields; undefined when not stored. */
  contentOf(cardId: string): Promise<string | undefined>;
  /**
   * Cards in scope ranked by cosine to the unit-length query vector, best first; every card in scope matches. The zero
   * vector (a text without a word the embedder knows) has no direction to rank by: it matches no card.
   */
  nearest(query: Float32Array, scope: SearchScope, page: PageRequest): Promise<IndexPage>;
  /**
   * Cards in scope matching the query's words (typos tolerated), ranked by trigram similarity in [0, 1], best first.
   * What a caller gets never depends on cards they may not see: whether a query word is known, its variants and its
   * weight come from public cards and the caller's own private ones only.
   */
  matchText(query: string, scope: SearchScope, page: PageRequest): Promise<IndexPage>;
  count(): Promise<number>;
  /**
   * Whether opening the index at this start created it: the embedded file was absent or held no tables yet, the
   * Elasticsearch cards index did not exist. Together with whether the indexing consumer group had handled events
   * before, it tells a lost index from a new one (application/lost-index.ts). Also true while the lost-index check of
   * an earlier start that created it has not settled (lostIndexCheckSettled not called since: that start was killed
   * before it sent the rebuild request it decided on), so the next start checks again.
   */
  createdAtStart(): Promise<boolean>;
  /** The lost-index check of the start that created the index is done (found not lost, or the rebuild request sent). */
  lostIndexCheckSettled(): Promise<void>;
  close(): Promise<void>;
}

