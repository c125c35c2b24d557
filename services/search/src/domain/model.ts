/** What the index keeps about one root card. Collisions are not indexed on their own. */
export interface IndexedCard {
  cardId: string;
  authorId: string;
  /** Plain-text content: embedded for semantic search, tokenized for full-text search. */
  content: string;
  tags: string[];
  link: string;
  private: boolean;
  /** Unit-length embedding of the content. */
  vector: Float32Array;
  /** Stable id of the card's point in the vector index (the Card's vector_point_id). */
  vectorPointId: string;
  /** Set when the card is a collision of that root card: stored, not searched. */
  collisionOf?: string;
  /** The card's own updated_at: an older snapshot never overwrites a newer one. */
  updatedAt: Date;
  /**
   * The card's created_at, which breaks ties between equal scores (compareTies). Absent on a card stored before the
   * index kept it, until a reindex (its republished snapshot) fills it; a snapshot without it keeps the stored one.
   */
  createdAt?: Date;
}

/** A card as the index holds it: the last snapshot applied, and the collections bookmark events put it in. */
export interface StoredCard extends IndexedCard {
  /** Collections bookmarking the card, in id order. */
  collectionIds: string[];
}

/** What announcing a stored card needs, without its text or vector: its vector point id, and whether it is a collision. */
export type StoredPoint = Pick<IndexedCard, 'vectorPointId' | 'collisionOf'>;

/** Which cards a search may return. */
export interface SearchScope {
  /** The caller sees public cards and their own private ones; anonymous callers only public ones. */
  callerId?: string;
  /** Any of these tags (case-insensitive); empty = no tag filter. */
  tags: string[];
  /** Link contains any of these strings (case-insensitive); empty = no link filter. */
  links: string[];
  /** Only cards bookmarked in this collection. */
  collectionId?: string;
}

/**
 * The order of cards with equal scores, on every engine and in every search (semantic, full-text, collection-scoped):
 * the newer card first (createdAt descending), a card without createdAt after every dated one, then by card id
 * ascending (code-unit order, as Elasticsearch orders the ASCII ids of keyword fields). Card ids are random (UUID v4),
 * so the id only separates cards created in the same millisecond. Negative when `a` ranks first.
 */
export function compareTies(a: { cardId: string; createdAt?: number }, b: { cardId: string; createdAt?: number }): number {
  const at = a.createdAt ?? -Infinity;
  const bt = b.createdAt ?? -Infinity;
  if (at !== bt) return at > bt ? -1 : 1;
  return a.cardId < b.cardId ? -1 : a.cardId > b.cardId ? 1 : 0;
}

export interface IndexHit {
  cardId: string;
  score: number;
}

export interface IndexPage {
  hits: IndexHit[];
  /** How many cards in the scope match at all. */
  total: number;
  /**
   * How many of those matches paging can reach (at most `total`): an engine that serves no hit past a fixed depth
   * (Elasticsearch: 10,000) answers fewer. total_pages counts only these, so every page it announces holds hits.
   */
  reachable: number;
}

export interface PageRequest {
  offset: number;
  limit: number;
  /** The call's signal: aborted when its caller went away (a cancelled call), so the index need not score for nobody. */
  signal?: AbortSignal;
}

/**
 * Ends a search whose call was cancelled (its caller, the gateway's client, went away) before it scores the index: an
 * AbortError, which the gRPC server (and the in-process path) take for the cancelled call it is, not a failure.
 */
export function stopIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new DOMException('The call was cancelled: its caller went away', 'AbortError');
}

/** total_pages: ceil(matching items / page size). */
export function totalPages(total: number, pageSize: number): number {
  return Math.ceil(total / pageSize);
}

/** Whether a card is visible to a caller: public, or their own. */
export function isVisibleTo(card: Pick<IndexedCard, 'private' | 'authorId'>, callerId: string | undefined): boolean {
  return !card.private || (callerId !== undefined && card.authorId === callerId);
}

/** Whether a vector is all zeros: the embedding of a text without a word the embedder knows, which means nothing. */
export function isZeroVector(vector: Float32Array): boolean {
  for (let i = 0; i < vector.length; i++) if (vector[i] !== 0) return false;
  return true;
}
