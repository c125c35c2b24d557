/** A card as the cards service keeps it. A card with `collisionOf` set is a duplicate (collision) of that root card. */
export interface Card {
  id: string;
  authorId: string;
  content: string;
  cardHtml: string;
  link: string;
  private: boolean;
  /**
   * Private because its file is private (made private from a private file, or hidden when its file was made private),
   * not by its owner's own choice: the file made public again makes it public. Set only on private cards; absent means
   * false (the stores always give it).
   */
  hiddenByFile?: boolean;
  tags: string[];
  fileId: string | null;
  fileName: string | null;
  /**
   * The file it carries is private, as the cards service last learned it: from the files service when the card was made,
   * then from each privacy change of the file (ApplyFilePrivacy). Absent means false (the stores always give it).
   */
  filePrivate?: boolean;
  ocFilePath: string | null;
  vectorPointId: string | null;
  verificationScore: number | null;
  /** When the verification score was measured; an older verification never overwrites a newer one. */
  verifiedAt: Date | null;
  collisionOf: string | null;
  totalUpvotes: number;
  totalDownvotes: number;
  idempotencyKey: string | null;
  /** The fingerprint of the client's request that carried the key (null: none sent, or stored before fingerprints). */
  requestFingerprint: string | null;
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

/** Votes an author received (over all their cards, or over their public cards only). */
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
  /** The client's key of the create that made it (per author): a repeat of that create answers this collection. */
  idempotencyKey: string | null;
  /** The fingerprint of the request that carried the key (null: stored before fingerprints). */
  requestFingerprint: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What is kept of a resource's idempotency key after the resource was deleted, so a late repeat of its create makes no new one. */
export interface DeletedIdempotencyKey {
  requestFingerprint: string | null;
  deletedAt: Date;
}

/** A root card and the collisions a viewer may see. */
export interface CardGroup {
  root: Card;
  collisions: Card[];
}

export const PAGE_SIZE = 25;

/**
 * The card as `viewerId` is shown it: the id and name of a private file only to the card's author, as the files service
 * shows the file itself (anyone else reads null for both, as for a deleted file).
 */
export function withFileShownTo<T extends Pick<Card, 'authorId' | 'fileId' | 'fileName' | 'filePrivate'>>(card: T, viewerId: string | undefined | null): T {
  return card.filePrivate === true && card.fileId !== null && card.authorId !== viewerId ? { ...card, fileId: null, fileName: null } : card;
}

export function isVisibleTo(card: Pick<Card, 'private' | 'authorId'>, viewerId: string | undefined | null): boolean {
  return !card.private || card.authorId === viewerId;
}

/**
 * Whether `root` may hold `card` as a collision: the card's author may see the root, and the root is at least as
 * visible as the card. Otherwise the collision would reveal someone else's private card (duplicate: true), or a public
 * card would vanish from search behind a root others cannot see.
 */
export function mayHoldCollision(root: Pick<Card, 'private' | 'authorId'>, card: Pick<Card, 'private' | 'authorId'>): boolean {
  return isVisibleTo(root, card.authorId) && (card.private || !root.private);
}

/** A card leaving its root: `collisionOf` null makes it a root of its own. */
export interface CollisionMove {
  cardId: string;
  collisionOf: string | null;
}

/**
 * Where collisions go that leave their root: the oldest public one becomes a root and takes every other leaving card
 * it may hold (that is, all of them); a leaving card no new root may hold (a private card of another author) becomes
 * a root too, taking the later ones of its own author. `leaving` is oldest first.
 */
export function rehomedCollisions(leaving: readonly Card[]): CollisionMove[] {
  const ordered = [...leaving.filter((c) => !c.private), ...leaving.filter((c) => c.private)];
  const roots: Card[] = [];
  const moves: CollisionMove[] = [];
  for (const card of ordered) {
    const newRoot = roots.find((r) => mayHoldCollision(r, card));
    if (newRoot) moves.push({ cardId: card.id, collisionOf: newRoot.id });
    else {
      roots.push(card);
      moves.push({ cardId: card.id, collisionOf: null });
    }
  }
  return moves;
}

/** Whether a collision leaves its root after the root changed: the root may no longer hold it, or it no longer copies the root. */
export function leavesRoot(root: Pick<Card, 'private' | 'authorId'>, collision: Card, stillCopies: (collision: Card) => boolean = () => true): boolean {
  return !mayHoldCollision(root, collision) || !stillCopies(collision);
}

/**
 * Where the collisions of `root` go once it has changed (made private, or edited into other text): the ones that leave
 * it (leavesRoot) are re-homed, oldest first.
 */
export function collisionMovesOnChange(root: Pick<Card, 'private' | 'authorId'>, collisions: readonly Card[], stillCopies?: (collision: Card) => boolean): CollisionMove[] {
  return rehomedCollisions(collisions.filter((c) => leavesRoot(root, c, stillCopies)));
}

/**
 * A card's privacy once the privacy of the file it was made from changed: the file made private hides a public card
 * and marks it so; made public, it gives back only the cards it hid. A card its owner made private stays private.
 */
export function privacyAfterFileChange(card: Pick<Card, 'private' | 'hiddenByFile'>, filePrivate: boolean): { private: boolean; hiddenByFile: boolean } {
  const hidden = card.private && card.hiddenByFile === true;
  if (filePrivate) return { private: true, hiddenByFile: hidden || !card.private };
  return hidden ? { private: false, hiddenByFile: false } : { private: card.private, hiddenByFile: false };
}

export function isCollectionVisibleTo(c: Pick<Collection, 'isPublic' | 'authorId'>, viewerId: string | undefined | null): boolean {
  return c.isPublic || c.authorId === viewerId;
}

export function totalPages(items: number): number {
  return Math.ceil(items / PAGE_SIZE);
}
