/** A card as the cards service keeps it. A card with `collisionOf` set is a duplicate (collision) of that root card. */
export interface Card {
  id: string;
  authorId: string;
  content: string;
  cardHtml: string;
  link: string;
  private: boolean;
  tags: string[];
  fileId: string | null;
  fileName: string | null;
  ocFilePath: string | null;
  vectorPointId: string | null;
  verificationScore: number | null;
  /** When the verification score was measured; an older verification never overwrites a newer one. */
  verifiedAt: Date | null;
  collisionOf: string | null;
  totalUpvotes: number;
  totalDownvotes: number;
  idempotencyKey: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What the duplicate rules need to find a card again: its normalized-content hash and shingle sketch. */
export interface CardFingerprint {
  contentHash: string;
  /** Bottom-k hashes of the card's word shingles (MinHash sketch). */
  sketch: number[];
}

export interface Vote {
  id: string;
  userId: string;
  cardId: string;
  /** true = upvote. */
  value: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export interface AuthorScore {
  userId: string;
  score: number;
}

/** Votes an author received over all their cards. */
export interface ReceivedVotes {
  upvotes: number;
  downvotes: number;
}

export interface Collection {
  id: string;
  authorId: string;
  name: string;
  description: string;
  isPublic: boolean;
  fileId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A root card and the collisions a viewer may see. */
export interface CardGroup {
  root: Card;
  collisions: Card[];
}

export const PAGE_SIZE = 25;

export function isVisibleTo(card: Pick<Card, 'private' | 'authorId'>, viewerId: string | undefined | null): boolean {
  return !card.private || card.authorId === viewerId;
}

export function isCollectionVisibleTo(c: Pick<Collection, 'isPublic' | 'authorId'>, viewerId: string | undefined | null): boolean {
  return c.isPublic || c.authorId === viewerId;
}

export function totalPages(items: number): number {
  return Math.ceil(items / PAGE_SIZE);
}
