import type { OutgoingEvent, Page } from '@cards/platform';
import type { AuthorScore, Card, CardFingerprint, Collection, CollisionMove, DeletedIdempotencyKey, ReceivedVotes, Vote } from './model';

/** Thrown by CardRepository.update when the stored card is no longer the one the caller read (`ifUpdatedAt`). */
export class StaleCardError extends Error {
  constructor(cardId: string) {
    super(`card ${cardId} changed since it was read`);
  }
}

export interface CardUpdateOptions {
  /** Re-home collisions of this card (a card becoming a root loses its index id until search re-indexes it). */
  moves?: readonly CollisionMove[];
  /**
   * Write only if the stored card still has this `updatedAt` (the one the caller read); StaleCardError otherwise.
   * Without it, a concurrent change of another field could write back a privacy read before it changed.
   */
  ifUpdatedAt?: Date;
  /** The card's link was removed: its verification score (of a page it no longer cites) is cleared. */
  clearVerification?: boolean;
  /** The card, a collision until now, becomes a root of its own (collisionOf and its index id cleared). */
  becomesRoot?: boolean;
}

/** The events stored with a card moved under another root (as it is after the move, with the collections holding it). */
export type MovedCardEvents = (moved: Card, collectionIds: string[]) => OutgoingEvent[];

/**
 * Storage of cards, their duplicate fingerprints and collision links.
 * Every write takes the events describing it: they are stored atomically with the change (transactional outbox).
 */
export interface CardRepository {
  findById(id: string): Promise<Card | null>;
  /** The cards that exist among ids, in no particular order. */
  findByIds(ids: readonly string[]): Promise<Card[]>;
  findByIdempotencyKey(authorId: string, key: string): Promise<Card | null>;
  /** The key of the author's card created with it and deleted since (remove keeps it), or null. */
  findDeletedIdempotencyKey(authorId: string, key: string): Promise<DeletedIdempotencyKey | null>;
  /** Cards whose normalized content has this hash, oldest first. */
  findByContentHash(contentHash: string, limit: number): Promise<Card[]>;
  /** Cards sharing at least minShared values of the sketch, most shared first. */
  findBySketch(sketch: readonly number[], minShared: number, limit: number): Promise<Card[]>;
  /**
   * Root cards search has not announced as indexed yet (no vector point id) that changed at or after `since` and that
   * `viewerId` may see (public, or their own), most recently changed first.
   */
  findUnindexedRoots(viewerId: string, since: Date, limit: number): Promise<Card[]>;
  /**
   * Root cards created at or after `since` (and at or before `until`, when given) that `viewerId` may see (public, or
   * their own; null: every author's), newest first.
   */
  findRootsCreatedSince(viewerId: string | null, since: Date, limit: number, until?: Date): Promise<Card[]>;
  /** Collisions of the given roots, oldest first. */
  findCollisions(rootIds: readonly string[]): Promise<Card[]>;
  /**
   * At most `limit` of them in the same order (creation time, then id), starting after `after` (a `next` this
   * repository gave; omitted: the oldest), so a root with more collisions than one read should hold is read in parts.
   * Throws InvalidArgumentError naming page_token for a cursor it did not give.
   */
  findCollisionsPage(rootIds: readonly string[], limit: number, after?: string): Promise<Page<Card>>;
  /** Cards of any author that carry this file id, oldest first. */
  findByFile(fileId: string): Promise<Card[]>;

  /**
   * Stores a new card, marked in the same write as owing its look-again (the duplicate rules run once more after the
   * insert; see clearLookAgainOwed). Throws AlreadyExistsError when (authorId, idempotencyKey) is already taken.
   */
  insert(card: Card, fingerprint: CardFingerprint, events: OutgoingEvent[]): Promise<void>;
  /**
   * The card while it still owes its look-again (its create is finishing it, or was cut off before it did); null for
   * a card that owes none (cards stored before the mark existed owe none) or does not exist. The mark is never part of
   * a Card.
   */
  findWithLookAgainOwed(cardId: string): Promise<Card | null>;
  /** Collisions that still owe their look-again, oldest first (creation time, then id). */
  findCollisionsWithLookAgainOwed(limit: number): Promise<Card[]>;
  /** The card's look-again is done: clears the mark alone (no `updatedAt` change, no events); nothing for an unknown card. */
  clearLookAgainOwed(cardId: string): Promise<void>;
  /**
   * Replaces the card's mutable fields (content, html, link, privacy, hiddenByFile); a new fingerprint when the content changed.
   * A privacy change moves the card's vote totals into or out of its author's public counters in the same step.
   */
  update(card: Card, fingerprint: CardFingerprint | null, events: OutgoingEvent[], options?: CardUpdateOptions): Promise<void>;
  /**
   * Deletes a card with its votes (taking them off its author's received totals, public ones too) and bookmarks.
   * `moves` re-home the card's collisions (see update). False (nothing changed, no events stored) when the card was
   * already gone, e.g. taken by a concurrent removal. Its idempotency key, if any, is kept (findDeletedIdempotencyKey).
   */
  remove(cardId: string, moves: readonly CollisionMove[], events: OutgoingEvent[]): Promise<boolean>;

  /**
   * Makes a collision a root of its own (losing its index id), with its events, if it is still a collision of rootId.
   * Returns whether it was.
   */
  detachCollision(cardId: string, rootId: string, events: OutgoingEvent[]): Promise<boolean>;

  /**
   * Makes `cardId`, a root until now, a collision of `rootId` together with the collisions it held (it loses its index
   * id; its `updatedAt` becomes `at`): how two near copies that became roots at the same moment are settled. Only when
   * the card is still a root last changed at `ifUpdatedAt` and `rootId` is still a root; false (nothing stored) otherwise.
   * Every card moved stores `eventsOf(the card as moved, the collections holding it)`.
   */
  joinRoot(cardId: string, rootId: string, ifUpdatedAt: Date, at: Date, eventsOf: MovedCardEvents): Promise<boolean>;

  /**
   * Moves every collision of `fromRootId` under `toRootId`, each with `eventsOf` (collisions stored under a root while it
   * joined another). Returns how many moved.
   */
  moveCollisions(fromRootId: string, toRootId: string, eventsOf: MovedCardEvents): Promise<number>;

  /** Cards of an author, newest update first; private ones only when includePrivate. */
  listByAuthor(authorId: string, includePrivate: boolean, offset: number, limit: number): Promise<Card[]>;
  countByAuthor(authorId: string, includePrivate: boolean): Promise<number>;
  /** Every card, collisions included. */
  count(): Promise<number>;
  /**
   * Every card, collisions included, at most `limit` at a time in id order, starting after `after` (a `next` this
   * repository gave; omitted: the first), so the whole store is read in parts whatever its size.
   */
  pageAll(limit: number, after?: string): Promise<Page<Card>>;

  /** Index id from the search service; ignored for collisions and unknown cards. Returns whether it changed. */
  setVectorPointId(cardId: string, vectorPointId: string): Promise<boolean>;
  /**
   * Verification result, unless a newer one is already stored or the card no longer links to `link` (the page
   * verified; '' from a search service that did not say, which is not checked) or, when `content` is given, no longer
   * holds that content (the text the page was compared with). Returns whether it was kept; only then are `events`
   * stored (with it, atomically).
   */
  setVerification(cardId: string, score: number, at: Date, link: string, events?: readonly OutgoingEvent[], content?: string): Promise<boolean>;
  /**
   * The file was deleted: its cards keep living without file_id/file_name, its collection without file_id. With
   * `exceptAuthorId` only the cards of other authors lose the reference, and collections keep theirs.
   */
  clearFileReferences(fileId: string, exceptAuthorId?: string): Promise<void>;
  /** One card loses its reference to the file (file_id/file_name), if it still carries that file; nothing else changes. */
  clearFileReferenceOf(cardId: string, fileId: string): Promise<void>;
  /** The file's privacy changed: every card carrying it records it (Card.filePrivate); nothing else changes, `updatedAt` included. */
  setFilePrivacy(fileId: string, isPrivate: boolean): Promise<void>;
  /**
   * Notes a change of the file that is about to be applied to its cards (its deletion, or its privacy), as of `at`; a
   * deletion stays noted whatever comes after it. Kept APPLIED_FILE_CHANGES_KEPT_MS, which is all a create needs.
   */
  noteFileChange(fileId: string, change: AppliedFileChange): Promise<void>;
  /** The file's latest change noted at or after `since` (see noteFileChange), or null. */
  fileChangeSince(fileId: string, since: Date): Promise<AppliedFileChange | null>;
}

/**
 * A change of a file the cards service applied to its cards (CardService.clearFileReferences, applyFilePrivacy), noted
 * before it was applied: a card created citing the file reads it after its insert, so a change applied while the
 * create ran (before the card existed, passing it over) still reaches the card, without asking the files service again.
 */
export interface AppliedFileChange {
  deleted: boolean;
  /** The file's privacy (false for a deletion). */
  private: boolean;
  /** The file's owner ('' for a deletion: not told). */
  ownerId: string;
  at: Date;
}

/** How long a noted file change is kept: far longer than a create runs between its file check and its insert. */
export const APPLIED_FILE_CHANGES_KEPT_MS = 60 * 60_000;

/**
 * Votes, one per user per card, and the received-vote counters of authors: over all their cards, and over their public
 * cards only (what everyone else may see, and what ranks them). Counters on the card and the author change in the same
 * atomic step as the vote, so they stay exact under concurrency; a card's privacy change moves its totals between them.
 */
export interface VoteRepository {
  /**
   * Creates or flips the user's vote on the card (its author's counters follow); null when the card does not exist. A
   * repeat of the vote as stored changes nothing, `updatedAt` included. With `publicOnly`, also null (and nothing
   * stored) when the card is private at the moment of the write: a vote racing the card being made private is either
   * counted before the change (which then moves it out of the public counters) or refused, never counted after it.
   */
  upsert(userId: string, cardId: string, value: boolean, at: Date, newId: string, options?: { publicOnly?: boolean }): Promise<Vote | null>;
  /** Removes the user's vote on the card; false when there was none. */
  remove(userId: string, cardId: string): Promise<boolean>;
  /** The user's votes on these cards (card id -> value). */
  votesOf(userId: string, cardIds: readonly string[]): Promise<Map<string, boolean>>;
  /** Votes received on the author's public cards; on all their cards when includePrivate. */
  received(authorId: string, includePrivate?: boolean): Promise<ReceivedVotes>;
  countCastBy(userId: string): Promise<number>;
  /** Votes the user cast on cards the viewer may see (public ones, and the viewer's own). */
  countCastOnVisible(userId: string, viewerId: string | null): Promise<number>;
  /** Authors with at least one vote received on a public card, by public score desc, then join date, then id. */
  topAuthors(offset: number, limit: number): Promise<AuthorScore[]>;
  countRankedAuthors(): Promise<number>;
  /** Ranked authors whose join date is not known yet (used as the tie-break of the ranking). */
  authorsWithoutJoinDate(limit: number): Promise<string[]>;
  recordJoinDates(dates: ReadonlyMap<string, Date>): Promise<void>;
}

/** The fields a collection update sets; those left out keep their stored value. */
export interface CollectionChange {
  name?: string;
  description?: string;
  isPublic?: boolean;
  updatedAt: Date;
  /**
   * Only if the stored collection's updatedAt is still this one (the version the caller read), checked in the write's
   * own step: otherwise (or when it is gone) nothing is written and no event stored. Without it, the write stores
   * versionAfterStored(updatedAt, the stored version), decided in the same step: a change landing between the caller's
   * read and this write (dated after the same version) never shares its version, so an If-Match naming it is refused.
   */
  ifUpdatedAt?: Date;
}

/**
 * The version a collection write without ifUpdatedAt stores: its own date, or 1 ms after the stored version when that
 * is not before it. Versions (ETags) only grow, so no two states of a collection ever share one.
 */
export const versionAfterStored = (updatedAt: Date, stored: Date): Date =>
  updatedAt.getTime() > stored.getTime() ? updatedAt : new Date(stored.getTime() + 1);

/** What CollectionRepository.addBookmark did. */
export type BookmarkAddition = 'added' | 'already-there' | 'card-gone' | 'collection-gone';

export interface BookmarkAdditionOptions {
  /**
   * The card must be one the collection's owner may see (public, or theirs) at the moment of the write: a card made
   * private by its author is then 'card-gone' as a deleted one, whatever the interleaving of the two requests (the
   * bookmark is added before the change, or refused after it).
   */
  visibleToOwner?: boolean;
  /** Stored when a bookmark found, right after its write, to cite a card its owner may no longer see is taken back. */
  takenBackEvents?: OutgoingEvent[];
}

/** Collections and their bookmarks; writes carry their events (transactional outbox). */
/** A card bookmarked in a collection. */
export interface HeldCard {
  cardId: string;
  collectionId: string;
}

/**
 * Adapters keep, per viewer, how many roots have their first visible bookmark in each block of BOOKMARK_BLOCK bookmark
 * orders (ord / BOOKMARK_BLOCK) of a collection, so a page starts reading at the block holding its first root instead
 * of walking every root before it, and a change counts again only the blocks holding a bookmark of a card group it
 * touched. (A stored SQLite migration uses the value: changing it needs a migration that drops what is kept.)
 */
export const BOOKMARK_BLOCK = 50;

/** The block holding root `offset` of a viewer's kept counts, and how many roots come before it (offset < the count). */
export function blockHolding(blocks: readonly number[], offset: number): { block: number; before: number } {
  let before = 0;
  for (let block = 0; block < blocks.length; block++) {
    if (before + blocks[block]! > offset) return { block, before };
    before += blocks[block]!;
  }
  return { block: blocks.length, before };
}

export interface CollectionRepository {
  /** Throws AlreadyExistsError when (authorId, idempotencyKey) is already taken by a stored collection. */
  insert(collection: Collection, events: OutgoingEvent[]): Promise<void>;
  /** The author's collection created with this key (keys of collections are apart from those of cards). */
  findByIdempotencyKey(authorId: string, key: string): Promise<Collection | null>;
  /** The key of the author's collection created with it and deleted since (remove keeps it), or null. */
  findDeletedIdempotencyKey(authorId: string, key: string): Promise<DeletedIdempotencyKey | null>;
  /**
   * Stores a file's collection with all its bookmarks at once. When a collection for this file already exists,
   * nothing changes and the existing one is returned.
   */
  insertFileCollection(collection: Collection, cardIds: readonly string[], events: (stored: Collection) => OutgoingEvent[]): Promise<{ collection: Collection; created: boolean }>;
  findById(id: string): Promise<Collection | null>;
  /** The collection made for a file (insertFileCollection), or null when there is none. */
  findByFileId(fileId: string): Promise<Collection | null>;
  /**
   * Sets the fields `change` names (and `updatedAt`) and leaves the others as stored, so two updates of different fields
   * made at once both stick: neither writes back what it read of the other's field (a collection just made private
   * stays private while it is renamed). Whether it wrote: false when the collection is gone, or is no longer at
   * `change.ifUpdatedAt` (nothing written, no events stored).
   */
  update(collectionId: string, change: CollectionChange, events: OutgoingEvent[]): Promise<boolean>;
  /**
   * Deletes the collection and its bookmarks; the cards stay. False (no events stored) when it was already gone. Its
   * idempotency key, if any, is kept (findDeletedIdempotencyKey).
   */
  remove(id: string, events: OutgoingEvent[]): Promise<boolean>;
  /**
   * Adds a bookmark with its events. Stores nothing (no events) when it was already there, or when the card or the
   * collection is already gone (the collection is named when both are): checks made before the call may be stale. A
   * bookmark never outlives its card or collection, whatever the interleaving with their removal; one found orphaned
   * right after its write is taken back (its event may be stored by then; it names a card or collection that no longer
   * exists).
   */
  addBookmark(collectionId: string, cardId: string, at: Date, events: OutgoingEvent[], options?: BookmarkAdditionOptions): Promise<BookmarkAddition>;
  /**
   * Removes the bookmarks of a card and of its collisions (every card whose collisionOf is it, visible or not): the
   * entry of a root, or a collision's own bookmark. Each removed bookmark stores `eventsOf(its card id, the time it was
   * added as stored)`, read with its delete (so a removal can be dated after the addition whatever this process's clock
   * says). Answers the card ids whose bookmark this call removed, in bookmark order; of concurrent calls, each bookmark
   * is removed (and its events stored) by one.
   */
  removeEntry(collectionId: string, cardId: string, eventsOf: (cardId: string, addedAt: Date) => OutgoingEvent[]): Promise<string[]>;
  /**
   * The roots of the bookmarked cards the viewer may see, each once, in the order of the first bookmark of its group: a
   * bookmarked collision stands for its root, as it does in search results.
   */
  listVisibleBookmarkedRoots(collectionId: string, viewerId: string | null, offset: number, limit: number): Promise<string[]>;
  /** How many roots listVisibleBookmarkedRoots gives for this viewer in all (the collection page's total). */
  countVisibleBookmarkedRoots(collectionId: string, viewerId: string | null): Promise<number>;
  /** Card ids bookmarked in a collection. */
  bookmarkedCardIds(collectionId: string): Promise<string[]>;
  /** Collections of an author, newest first (equal creation times by id); private ones only when includePrivate. */
  listByAuthor(authorId: string, includePrivate: boolean): Promise<Collection[]>;
  /**
   * At most `limit` of them in the same order, starting after `after` (a `next` this repository gave; omitted: the
   * newest). A position is a collection's creation time and id, which never change, so paging on while collections are
   * created, changed or deleted lists each one that stays listable throughout exactly once; privacy is applied on every
   * page. Throws InvalidArgumentError naming page_token for a cursor it did not give.
   */
  listPageByAuthor(authorId: string, includePrivate: boolean, limit: number, after?: string): Promise<Page<Collection>>;
  /**
   * The owner's bookmarks of the cards: one (card, collection) pair each, oldest collection first (creation time, then
   * id). Read from the cards' side, so its cost follows the bookmarks of these cards, not how many collections the
   * owner has.
   */
  collectionsOfOwnerHolding(ownerId: string, cardIds: readonly string[]): Promise<HeldCard[]>;
  /** Every collection holding the card. */
  collectionIdsHolding(cardId: string): Promise<string[]>;
  /**
   * The collections made for a file, at most `limit` at a time in id order, starting after `after` (a `next` this
   * repository gave; omitted: the first), so all of them are read in parts whatever their number.
   */
  pageFileCollections(limit: number, after?: string): Promise<Page<Collection>>;
  /**
   * Every bookmark of every collection, at most `limit` at a time in an order of the adapter's own, starting after
   * `after` (a `next` this repository gave; omitted: the first), so all of them are read in parts whatever their number.
   */
  pageBookmarks(limit: number, after?: string): Promise<Page<StoredBookmark>>;
}

/**
 * Work done once per store after the service can reach its peers (a backfill asking another service), unlike a
 * migration, run when the store opens. Replicas starting together may each run a task before one records it, so a
 * task must be idempotent.
 */
export interface OneTimeTasks {
  isDone(name: string): Promise<boolean>;
  /** Records the task as done; recording it again changes nothing. */
  markDone(name: string, at: Date): Promise<void>;
}

/** Where a search index rebuild is: telling search the cards, then the bookmarks, each by keyset. */
export type SearchIndexRebuildPhase = 'cards' | 'bookmarks';

/** A point of a rebuild: the phase, and the keyset cursor of its last batch appended (none: from the phase's start). */
export interface SearchIndexRebuildCursor {
  phase: SearchIndexRebuildPhase;
  after?: string;
}

/** An unfinished rebuild as recorded, handed to whoever claimed it. */
export interface SearchIndexRebuildClaim extends SearchIndexRebuildCursor {
  /** The id of this holding of the rebuild: every later change is conditional on it (a new one on each begin or claim). */
  run: string;
  /** Why the rebuild began (the request's reason, or the operator's command). */
  reason: string;
  /** Who held it before, and when it last said it was alive. */
  previousHolder: string;
  previousHeartbeatAt: Date;
}

/**
 * The progress of the search index rebuild (at most one, recorded in the cards store), so a rebuild cut short by a stop
 * (SIGTERM during a rolling update, kill -9, OOM) is resumed where it stopped instead of leaving the rest of the cards
 * unfindable. Its holder (a cards replica, or the operator's rebuild-search-index command) records each batch appended
 * and says it is alive meanwhile; a holder silent for longer than a lease is taken to be gone, and exactly one claimer
 * takes the rebuild over. Every change after begin/claim is conditional on the run id they handed out, so a holder whose
 * rebuild was begun again or taken over learns it (false) and stops, and never moves the record of the newer run.
 */
export interface SearchIndexRebuildProgress {
  /** Records a new rebuild from the very start, held by `holder`, replacing any recorded one (the index was lost again). */
  begin(reason: string, holder: string): Promise<string>;
  /** Records the batch appended (and that the holder is alive). False: `run` is no longer the recorded rebuild. */
  advance(run: string, at: SearchIndexRebuildCursor): Promise<boolean>;
  /** The holder is alive (a batch may wait long for the outbox relay). False: `run` is no longer the recorded rebuild. */
  keepAlive(run: string): Promise<boolean>;
  /** The holder stops without finishing (a graceful stop): the next claim need not wait for its lease to end. */
  release(run: string): Promise<void>;
  /** The rebuild of `run` ended: nothing left to resume (a newer run recorded since stays). */
  finish(run: string): Promise<void>;
  /**
   * The unfinished rebuild, if its holder has said nothing for `staleAfterMs` or more (or released it), now held by
   * `holder` under a new run id: a conditional update, so of claimers racing for it exactly one gets it.
   */
  claimUnfinished(holder: string, staleAfterMs: number): Promise<SearchIndexRebuildClaim | undefined>;
}

/** A bookmark as stored: the card, the collection, and when it was added. */
export interface StoredBookmark extends HeldCard {
  createdAt: Date;
}

/**
 * The service's transactional outbox written to without a change of state: for republishing what is already stored.
 * Its relay (the running service's) publishes what is appended here.
 */
export interface EventOutbox {
  /** Stores the events in order (a write cut midway may keep the first ones: republishing is idempotent). */
  append(events: readonly OutgoingEvent[]): Promise<void>;
  /** Entries the relay has not published yet (every writer's). */
  pending(): Promise<number>;
}

/**
 * Serialises work on one content fingerprint across every process sharing the store, so of two cards with the same
 * text created at the same moment the later one finds the first and becomes its collision.
 */
export interface ContentLock {
  /**
   * Runs `task` once no other holder of `key` runs one, and lets the next in when it settles (fulfilled or not).
   * Tasks under different keys run side by side. An adapter shared between processes may give up with
   * UnavailableError when the key stays taken for too long.
   */
  run<T>(key: string, task: () => Promise<T>): Promise<T>;
}

/** A search-index candidate for being the same card as a new one. */
export interface NearDuplicateCandidate {
  cardId: string;
  /** The embedder's own calibrated verdict. */
  duplicate: boolean;
  cosine: number;
}

/** A root card the search index may not hold yet, compared by the finder as if it were indexed. */
export interface UnindexedRoot {
  cardId: string;
  content: string;
}

/**
 * Asks the search index for cards semantically close to new content. Never throws: an index without the lookup answers
 * [], and null means the lookup could not run now (search unreachable, still loading, too slow): the caller owes it.
 */
export interface NearDuplicateFinder {
  /** Candidates among the indexed roots the caller may see and `unindexed` (roots the caller may see, not indexed yet). */
  find(content: string, callerId: string, limit: number, unindexed?: readonly UnindexedRoot[]): Promise<NearDuplicateCandidate[] | null>;
}

/** A file as a card carrying it needs it. */
export interface VisibleFile {
  name: string;
  private: boolean;
  /** The file's owner (the files service always tells it); CreateFileCollection makes a collection only for its owner. */
  ownerId?: string;
}

/** The files service's view of a file. */
export interface FileDirectory {
  /**
   * The file's name and privacy when it exists and the caller may see it, null otherwise.
   * Throws UnavailableError when the files service cannot answer.
   */
  visibleFile(fileId: string, callerId: string): Promise<VisibleFile | null>;
}

/** Join dates of users (from identity), the tie-break of the top-users ranking. */
export interface UserDirectory {
  /** Join dates of the users that exist; an unreachable directory answers an empty map. */
  joinDates(userIds: readonly string[]): Promise<Map<string, Date>>;
}

/**
 * Cleans card HTML: rules.ts's cardTextFromHtml (the HTML reduced to the allow-list and its text, the limits enforced:
 * InvalidArgumentError otherwise), perhaps off the service's thread. An adapter bounding the work it takes at once may
 * refuse with UnavailableError when it is busy, but never a patient caller (a file's ingestion), which waits its turn;
 * and ResourceExhaustedError when `caller` (the user a create or update is for) already has their share of that work.
 */
export interface CardHtmlCleaner {
  clean(rawHtml: string, options?: { patient?: boolean; caller?: string }): Promise<{ cardHtml: string; content: string }>;
}
