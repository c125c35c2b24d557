import { createHash } from 'node:crypto';
import { events } from '@cards/proto';
import { changedSinceReadMessage } from '@cards/card-rules';
import { AlreadyExistsError, ChangedSinceReadError, InvalidArgumentError, newId, NotFoundError, PermissionDeniedError, earlierCreateForKey, RetryableUnavailableError, UnauthenticatedError, UnavailableError, type Logger } from '@cards/platform';
import { collisionMovesOnChange, isVisibleTo, leavesRoot, mayHoldCollision, rehomedCollisions, PAGE_SIZE, totalPages, withFileShownTo, type AuthorScore, type Card, type CardGroup, type CollisionMove, type Vote } from '../domain/model';
import { StaleCardError, type CardHtmlCleaner, type CardRepository, type CollectionRepository, type ContentLock, type FileDirectory, type NearDuplicateFinder, type UserDirectory, type VisibleFile, type VoteRepository } from '../domain/ports';
import { cardTextFromHtml, fingerprintOf, isNearCopy, legacyContentHash, legacySketch, NEAR_COPY_JACCARD, normalizeContent, ShingleComparison, SKETCH_MIN_SHARED, validLink, validOcFilePath, validTags } from '../domain/rules';
import { CardGroupReader, cardMessageBytes, type CardGroupsPart, type ViewedCard, type ViewedGroup } from './card-groups';
import { bookmarkChanged, cardCreated, cardDeleted, cardRehomed, cardUpdated, datedAfter, verificationKept, VERSIONED_WRITE_ATTEMPTS } from './events';
import { followFilePrivacy, isHiddenByFile, privacyAfterChange, type PrivacyChangedBy } from './file-privacy';

export type { CardGroupsPart, ViewedCard, ViewedGroup } from './card-groups';

export interface CreateCardInput {
  callerId: string;
  cardHtml: string;
  link: string;
  private: boolean;
  tags: readonly string[];
  fileId?: string;
  ocFilePath?: string;
  idempotencyKey?: string;
  /**
   * With a client's key (never ingestion's): the fingerprint of its request. A key stored with another fingerprint is
   * refused (IdempotencyKeyReusedError), and so is the key of a card deleted since (AlreadyExistsError); without it the
   * key answers the card it made whatever else is sent, and a deleted card's key makes the card again.
   */
  requestFingerprint?: string;
  /** Private because its file is private (ingestion of a private file): the file made public makes it public. */
  hiddenByFile?: boolean;
  /**
   * Ingestion: the card takes its file's privacy as the file directory answers it now (private then hidden by the file),
   * instead of `private` and `hiddenByFile`, so a file made private mid-ingestion gets no public card made after that.
   */
  privacyFromFile?: boolean;
}

export interface UpdateCardInput {
  callerId: string;
  cardId: string;
  link?: string;
  cardHtml?: string;
  private?: boolean;
  /**
   * The card's updatedAt as the caller read it (HTTP If-Match): the change is written only on that version, checked and
   * written in one step (the repository's ifUpdatedAt); ChangedSinceReadError when the card changed since.
   */
  ifUpdatedAt?: Date;
}

export interface UserCardsPage {
  cards: ViewedCard[];
  /** The page's cards after `cards`, when they would pass the size asked. */
  restCardIds: string[];
  totalCardsCreated: number;
  totalPages: number;
  upvotesReceived: number;
  downvotesReceived: number;
  votesCast: number;
}

export interface CardServiceDeps {
  cards: CardRepository;
  votes: VoteRepository;
  collections: CollectionRepository;
  /** Held while a new card looks for its root and is stored, per exact text. */
  contentLock: ContentLock;
  nearDuplicates: NearDuplicateFinder;
  files: FileDirectory;
  users: UserDirectory;
  /** Called after every commit that wrote events (kicks the outbox relay). */
  eventsWritten: () => void;
  logger: Logger;
  /** Cleans card HTML (the service's thread when not given: rules.ts cardTextFromHtml). */
  htmlCleaner?: CardHtmlCleaner;
}

const INLINE_CLEANER: CardHtmlCleaner = { clean: async (rawHtml) => cardTextFromHtml(rawHtml) };

const NEAR_DUPLICATE_CANDIDATES = 10;
/**
 * Roots not indexed yet that a new card's embedding check also compares with: the most recently changed ones the author
 * may see, changed within the lookback (search embeds each on every check, so they are bounded).
 */
const UNINDEXED_CANDIDATES = 16;
const UNINDEXED_LOOKBACK_MS = 5 * 60_000;
/** How many stored cards of the same or a near text a new root compares itself with after its insert. */
const SETTLE_CANDIDATES = 50;
/**
 * How far back a duplicate check notes the roots already stored, so that after its insert it can tell the ones stored
 * while it ran: longer than a root's time between its createdAt and its insert, and than the clock skew of replicas.
 */
const CONCURRENT_ROOTS_LOOKBACK_MS = 5_000;
const CONCURRENT_ROOTS_LIMIT = 50;
/**
 * How long before a create's file check it reads the file changes applied since (followFileChangedSinceCheck): longer
 * than the clock skew of replicas, which note changes by their own clocks.
 */
const FILE_CHANGE_LOOKBACK_MS = 5_000;
/** Cut-off collisions read at a time by recheckCutOffCollisions. */
const CUT_OFF_BATCH = 100;

/** Ranked authors whose join dates one round of fillJoinDates asks identity for and stores (one transaction). */
export const JOIN_DATE_ROUND = 100;
/**
 * Deliveries of search's announcement of a card whose near-duplicate lookup search still cannot answer (recordIndexed):
 * retried by the bus (at most 5 s apart, so about 5 minutes), then the card stays as it is, logged.
 */
export const OWED_LOOKUP_DELIVERIES = 60;

export function requireCaller(callerId: string | undefined): string {
  if (!callerId) throw new UnauthenticatedError('You must be logged in');
  return callerId;
}

export function validPage(page: number): number {
  if (!Number.isInteger(page) || page < 1) throw new InvalidArgumentError('page: must be a positive integer');
  return page;
}

/**
 * How long a large card's shingle comparisons run on the service's thread at most before other requests get a turn:
 * one candidate of 29,000 characters takes ~1 ms, and a card's checks compare with up to 50 (docs/benchmarks.md).
 */
const COMPARISON_SLICE_MS = 4;

/**
 * The candidates whose text is a near copy of the compared one by shingles (Jaccard >= NEAR_COPY_JACCARD), with their
 * similarity, in their order. Between two candidates, once COMPARISON_SLICE_MS have passed, the thread is let go
 * (setImmediate) so other requests are served meanwhile; the candidates and the verdicts are the same.
 */
async function nearCopiesAmong<T extends { content: string }>(comparison: ShingleComparison, candidates: readonly T[]): Promise<{ c: T; j: number }[]> {
  const out: { c: T; j: number }[] = [];
  let sliceStart = performance.now();
  for (const c of candidates) {
    if (performance.now() - sliceStart >= COMPARISON_SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      sliceStart = performance.now();
    }
    const j = comparison.similarity(c.content);
    if (j >= NEAR_COPY_JACCARD) out.push({ c, j });
  }
  return out;
}

/** Use cases of cards, duplicates, votes, user pages and top users. */
export class CardService {
  private lastTick = 0;

  /** The join date fill under way (fillJoinDates), and whether the service stopping has ended fills. */
  private joinDateFill: { firstRound: Promise<void>; done: Promise<void> } | null = null;

  private joinDateFillStopped = false;

  private readonly groupReader: CardGroupReader;

  private readonly htmlCleaner: CardHtmlCleaner;

  constructor(private readonly deps: CardServiceDeps) {
    this.htmlCleaner = deps.htmlCleaner ?? INLINE_CLEANER;
    this.groupReader = new CardGroupReader({ cards: deps.cards, withVotes: (list, viewerId) => this.withVotes(list, viewerId) });
  }

  /** Strictly increasing timestamps, so "newest first" never depends on two writes sharing a millisecond. */
  private now(): Date {
    this.lastTick = Math.max(Date.now(), this.lastTick + 1);
    return new Date(this.lastTick);
  }

  async createCard(input: CreateCardInput): Promise<{ card: ViewedCard; duplicate: boolean }> {
    const callerId = requireCaller(input.callerId);
    const { cards } = this.deps;
    if (input.idempotencyKey) {
      const existing = await this.earlierCreate(callerId, input.idempotencyKey, input.requestFingerprint);
      // A retry of a create cut off after its insert (file ingestion after a crash) finishes what that create owes.
      if (existing) return asCreated((await this.finishOwedLookAgain(existing.id))?.card ?? existing);
    }
    // A file's ingestion (the only caller taking the file's privacy) waits for a busy cleaner instead of being refused;
    // a client's create counts toward its author's share of the cleaner.
    const { cardHtml, content } = await this.htmlCleaner.clean(input.cardHtml, { patient: input.privacyFromFile === true, caller: callerId });
    const link = validLink(input.link);
    const tags = validTags(input.tags);
    const ocFilePath = validOcFilePath(input.ocFilePath);
    // Changes of the file applied from here on (noted by clearFileReferences and applyFilePrivacy) may pass the card over.
    const fileCheckedAt = new Date(Date.now() - FILE_CHANGE_LOOKBACK_MS);
    const file = input.fileId ? await this.deps.files.visibleFile(input.fileId, callerId) : null;
    if (input.fileId && file === null) throw new InvalidArgumentError('file_uuid: no such file');
    const fromFile = input.privacyFromFile === true && file !== null;
    const isPrivate = fromFile ? file.private : input.private;
    const hiddenByFile = fromFile ? file.private : input.private && input.hiddenByFile === true && input.fileId !== undefined;
    // The text is shingled once for its sketch and every comparison of this create (findRoot, then the look-again).
    const comparison = new ShingleComparison(content);
    const fingerprint = fingerprintOf(content, comparison.shingles);
    // Copies of one text sent at the same moment are stored one after the other, so the later ones find the first.
    return this.deps.contentLock.run(fingerprint.contentHash, async () => {
      const { root, checked, lookupOwed } = await this.findRoot(comparison, fingerprint, callerId, isPrivate);
      const now = this.now();
      const card: Card = {
        id: newId(),
        authorId: callerId,
        content,
        cardHtml,
        link,
        private: isPrivate,
        hiddenByFile,
        tags,
        fileId: input.fileId ?? null,
        fileName: file?.name ?? null,
        filePrivate: file?.private ?? false,
        ocFilePath,
        vectorPointId: null,
        verificationScore: null,
        verifiedAt: null,
        collisionOf: root?.id ?? null,
        totalUpvotes: 0,
        totalDownvotes: 0,
        idempotencyKey: input.idempotencyKey ?? null,
        requestFingerprint: (input.idempotencyKey && input.requestFingerprint) || null,
        createdAt: now,
        updatedAt: now,
      };
      try {
        await cards.insert(card, fingerprint, [cardCreated(card)]);
      } catch (err) {
        if (err instanceof AlreadyExistsError && input.idempotencyKey) {
          const existing = await this.earlierCreate(callerId, input.idempotencyKey, input.requestFingerprint);
          if (existing) return asCreated(existing);
        }
        throw err;
      }
      this.deps.eventsWritten();
      const placed = (await this.lookAgain(card, fingerprint, root, checked, lookupOwed, comparison)).card;
      // A file's ingestion follows its file's deletion and privacy itself (the ingestion worker).
      if (file === null || fromFile || !(await this.followFileChangedSinceCheck(placed, file, fileCheckedAt))) return asCreated(placed);
      return asCreated((await cards.findById(card.id)) ?? placed);
    });
  }

  /**
   * The file a new card cites was checked before the card was stored; deleted or given another privacy in between, the
   * change may have been applied to the file's cards before the card existed, passing it over. Every change applied is
   * noted first (noteFileChange), so once the card is stored the changes applied since the check are read from this
   * service's own store, which answers whenever the create could store the card (before, the files service was asked
   * again, and a card whose re-read it did not answer kept naming a deleted file for good). A deletion leaves the card;
   * someone else's file made private leaves it too (as that change's event takes it from other authors' cards); its
   * owner's file with another privacy is followed as that change's event is (followFilePrivacy). A change applied after
   * this read reaches the card by itself. Answers whether the card was changed.
   *
   * A note read so may be older than the check (the read starts FILE_CHANGE_LOOKBACK_MS before it, for clock skew):
   * a file made private, its change applied and noted, then made public again before the check, with that event not
   * applied yet. A note that contradicts what the check saw is therefore put to the files service, which tells the file
   * as it is now; only when files does not answer is the note followed. Before, such a stale note took someone else's
   * public file from the new card for good (the pending event, applied later, gives back no reference).
   */
  private async followFileChangedSinceCheck(card: Card, checked: VisibleFile, checkedAt: Date): Promise<boolean> {
    const fileId = card.fileId!;
    const change = await this.deps.cards.fileChangeSince(fileId, checkedAt);
    if (change === null) return false;
    const ownFile = change.ownerId === card.authorId;
    const contradictsCheck = change.deleted || (change.private && !ownFile) || (ownFile && change.private !== checked.private);
    if (!contradictsCheck) return false;
    let now: VisibleFile | null | undefined;
    try {
      now = await this.deps.files.visibleFile(fileId, card.authorId);
    } catch (err) {
      this.deps.logger.warn({ err, cardId: card.id, fileId }, 'could not read the cited file again after creating the card: following the change noted');
    }
    if (now !== undefined) {
      if (now === null) {
        await this.deps.cards.clearFileReferenceOf(card.id, fileId);
        return true;
      }
      if (now.private === checked.private) return false;
      await this.followFilePrivacy(fileId, card.authorId, now.private);
      return true;
    }
    if (change.deleted || (change.private && change.ownerId !== card.authorId)) {
      await this.deps.cards.clearFileReferenceOf(card.id, fileId);
      return true;
    }
    if (change.private === checked.private || change.ownerId !== card.authorId) return false;
    await this.followFilePrivacy(fileId, card.authorId, change.private);
    return true;
  }

  /**
   * The card an earlier create with the caller's key made, or null. A client's request (with a fingerprint) is refused
   * when the key came with another request, or when its card was deleted since (a late repeat would bring it back).
   */
  private async earlierCreate(callerId: string, key: string, requestFingerprint: string | undefined): Promise<Card | null> {
    const { cards } = this.deps;
    return earlierCreateForKey(
      { live: () => cards.findByIdempotencyKey(callerId, key), deleted: () => cards.findDeletedIdempotencyKey(callerId, key) },
      requestFingerprint,
      'a card',
      'Idempotency-Key: the card this key created was deleted since; send a new key to create another',
      requestFingerprint !== undefined,
    );
  }

  /**
   * What a create owes after its insert, which stored the card marked as owing it (the mark is cleared at the end):
   * a collision checks its root again (recheckRoot), and a card that is a root then, unchanged since its creation,
   * settles with near copies stored at the same moment (settleNearCopyRoots). The request runs it; a create cut off
   * before the end (process killed, an error) leaves the mark, and finishOwedLookAgain runs it later. `found` and
   * `checked`: the root the duplicate check chose and the roots it noted; null when the look-again resumes after a cut.
   * `lookupOwed`: search could not answer the duplicate check. Answers the card as it ends up and whether it still owes
   * the lookup: search could not answer and it is still a root unchanged since its creation. The mark then stays, and
   * search's announcement of the card (recordIndexed, once search is back and has indexed it) runs the look-again again,
   * asking the whole index (embeddingCopyRoots) as the create's check would have.
   */
  private async lookAgain(
    card: Card,
    fingerprint: ReturnType<typeof fingerprintOf>,
    found: Card | null,
    checked: CheckedRoots | null,
    lookupOwed = false,
    comparison = new ShingleComparison(card.content),
  ): Promise<{ card: Card; owed: boolean }> {
    let placed = card;
    let owed = lookupOwed;
    if (placed.collisionOf) placed = await this.recheckRoot(placed, found);
    // A root changed since its creation is left as its change made it: an edited card never becomes a collision.
    if (!placed.collisionOf && placed.updatedAt.getTime() === placed.createdAt.getTime()) {
      // Search did not answer the check a moment ago: not asked again here (the owed look-again asks it).
      const settled = await this.settleNearCopyRoots(placed, fingerprint, checked, !lookupOwed, comparison);
      placed = settled.card;
      if (settled.owed) owed = true;
      if (owed && !placed.collisionOf) return { card: placed, owed: true };
    }
    await this.deps.cards.clearLookAgainOwed(card.id);
    return { card: placed, owed: false };
  }

  /**
   * A create cut off after its insert (process killed, an error) left the card owing its look-again: it is run now,
   * by the announcement of the card by search, by a retry of the create with its idempotency key, or (a collision's
   * root check, as search announces roots only) by recheckCutOffCollisions at start. Under the content lock of the
   * card's text, so it waits for a request still finishing it, and only while the mark is set. A create whose
   * near-duplicate lookup search could not answer owes its look-again the same way (lookAgain). Answers the card as it
   * ends up and whether it still owes the lookup (search still cannot answer); null when it owed nothing (then nothing
   * but the mark is read).
   */
  private async finishOwedLookAgain(cardId: string): Promise<{ card: Card; owed: boolean } | null> {
    const owed = await this.deps.cards.findWithLookAgainOwed(cardId);
    if (!owed) return null;
    return this.deps.contentLock.run(fingerprintOf(owed.content).contentHash, async () => {
      const card = await this.deps.cards.findWithLookAgainOwed(cardId);
      return card && this.lookAgain(card, fingerprintOf(card.content), null, null);
    });
  }

  /**
   * A new collision's root may have been deleted, made private or edited into other text while the card was being made
   * (neither saw the other): the card leaves it. A root that joined an earlier near copy (settleNearCopyRoots) before
   * the card was stored under it: the card follows it. `found`: the root as the duplicate check read it; null when the
   * look-again resumes after a cut, when the text is compared only if the root was changed within the look-back either
   * side of the card's creation (a later change of the root checked its collisions itself).
   */
  private async recheckRoot(card: Card, found: Card | null): Promise<Card> {
    const rootId = card.collisionOf!;
    const current = await this.deps.cards.findById(rootId);
    const changedAround = (root: Card) => root.updatedAt.getTime() !== root.createdAt.getTime() && Math.abs(root.updatedAt.getTime() - card.createdAt.getTime()) <= CONCURRENT_ROOTS_LOOKBACK_MS;
    const textMayHaveChanged = current !== null && (found ? current.content !== found.content : changedAround(current));
    if (!current || !mayHoldCollision(current, card) || (textMayHaveChanged && !isNearCopy(current.content, card.content))) {
      const detached = { ...card, collisionOf: null };
      return (await this.detach(detached, rootId)) ? detached : card;
    }
    if (current.collisionOf) {
      await this.moveCollisions(rootId, current.collisionOf);
      return { ...card, collisionOf: current.collisionOf };
    }
    return card;
  }

  /**
   * Collisions whose create was cut off before it checked their root again: search announces roots only, so nothing
   * else reaches them; run when the service starts. A collision still under a root that may hold it is done; one that
   * leaves its root keeps its mark, and the announcement of it as a root (search indexes it from the detach's event)
   * settles it with its near copies, embedding verdict included. Answers how many were checked.
   */
  async recheckCutOffCollisions(): Promise<number> {
    const seen = new Set<string>();
    for (;;) {
      const batch = (await this.deps.cards.findCollisionsWithLookAgainOwed(CUT_OFF_BATCH)).filter((c) => !seen.has(c.id));
      if (batch.length === 0) return seen.size;
      for (const card of batch) {
        seen.add(card.id);
        await this.recheckRoot(card, null);
        const now = await this.deps.cards.findWithLookAgainOwed(card.id);
        if (now?.collisionOf) await this.deps.cards.clearLookAgainOwed(card.id);
      }
    }
  }

  /**
   * Near copies (not the same text) created at the same moment each look for their root before the other is stored,
   * by other requests or cards replicas (the content lock is per exact text), so both would stay roots. After its insert
   * a root looks again, by the same content rules: of two near-copy roots the earlier (createdAt, then id) stays and the
   * later joins it with its collisions, when the earlier may hold it. Of two such inserts at least the later reader sees
   * the other, and a join whose card is no longer a root does nothing, so whichever request sees both settles them, once.
   * The embedding verdict is asked again only about roots stored while this card's check ran that could join it or take
   * it (embeddingCopyRoots). Answers the card as it ends up, and whether search could not answer (the lookup is owed).
   */
  private async settleNearCopyRoots(
    card: Card,
    fingerprint: ReturnType<typeof fingerprintOf>,
    checked: CheckedRoots | null,
    askSearch = true,
    comparison = new ShingleComparison(card.content),
  ): Promise<{ card: Card; owed: boolean }> {
    const byContent = await this.nearCopyRoots(card, fingerprint, comparison);
    const byEmbedding = askSearch ? await this.embeddingCopyRoots(card, checked, new Set(byContent.map((r) => r.id)), comparison) : null;
    return { card: await this.settleWith(card, [...byContent, ...(byEmbedding ?? [])]), owed: byEmbedding === null };
  }

  /** `card`, a root, joins the earliest of `found` that may hold it, or else takes the later ones it may hold. */
  private async settleWith(card: Card, found: Card[]): Promise<Card> {
    const roots = [...found].sort((a, b) => (isOlder(a, b) ? -1 : 1));
    for (const earlier of roots.filter((r) => isOlder(r, card) && mayHoldCollision(r, card))) {
      if (await this.joinRoot(card, earlier)) return { ...card, collisionOf: earlier.id };
      const current = await this.deps.cards.findById(card.id);
      // Another request settled it already (or it is gone, or was changed: its own update decides then).
      if (!current || current.collisionOf || current.updatedAt.getTime() !== card.updatedAt.getTime()) return current ?? card;
    }
    for (const later of roots.filter((r) => isOlder(card, r) && mayHoldCollision(card, r))) await this.joinRoot(later, card);
    return card;
  }

  /**
   * The cards whose normalized content is `content`'s: by its hash, then (cards stored before combining marks counted)
   * by its legacy hash, those whose text is the same now.
   */
  private async sameText(content: string, fingerprint: ReturnType<typeof fingerprintOf>, limit: number): Promise<Card[]> {
    const same = await this.deps.cards.findByContentHash(fingerprint.contentHash, limit);
    const legacy = legacyContentHash(content);
    if (legacy === undefined || same.length >= limit) return same;
    const normalized = normalizeContent(content);
    const older = (await this.deps.cards.findByContentHash(legacy, limit)).filter((c) => normalizeContent(c.content) === normalized);
    return [...same, ...older.filter((c) => !same.some((s) => s.id === c.id))].slice(0, limit);
  }

  /**
   * The cards sharing enough of `content`'s sketch to be compared: by its sketch, then (cards stored before combining
   * marks counted, whose sketch is of words cut at every mark) by its legacy sketch.
   */
  private async bySketch(content: string, fingerprint: ReturnType<typeof fingerprintOf>, limit: number): Promise<Card[]> {
    const found = await this.deps.cards.findBySketch(fingerprint.sketch, SKETCH_MIN_SHARED, limit);
    const legacy = legacySketch(content);
    if (legacy === undefined || found.length >= limit) return found;
    const older = await this.deps.cards.findBySketch(legacy, SKETCH_MIN_SHARED, limit);
    return [...found, ...older.filter((c) => !found.some((f) => f.id === c.id))].slice(0, limit);
  }

  /** The roots other than `card` whose text or whose collision's text is the same as its text or a near copy of it, oldest first. */
  private async nearCopyRoots(card: Card, fingerprint: ReturnType<typeof fingerprintOf>, comparison: ShingleComparison): Promise<Card[]> {
    const { cards } = this.deps;
    const sameText = await this.sameText(comparison.text, fingerprint, SETTLE_CANDIDATES);
    const nearText = (await nearCopiesAmong(comparison, await this.bySketch(comparison.text, fingerprint, SETTLE_CANDIDATES))).map((s) => s.c);
    const matched = [...sameText, ...nearText];
    const rootIds = new Set(matched.map((c) => c.collisionOf ?? c.id));
    rootIds.delete(card.id);
    const roots = (await cards.findByIds([...rootIds])).filter((r) => r.collisionOf === null);
    return roots.sort((a, b) => (isOlder(a, b) ? -1 : 1));
  }

  /**
   * The roots the search index's embedding verdict calls copies of `card` that were stored while its duplicate check ran
   * (not among the roots it noted before asking search), so neither check compared the two: the index holds neither
   * yet, or got the other after it was asked. Only roots that could settle with it by the creation rule go (an earlier one
   * that may hold it, a later one it may hold), so search is asked a second time only when such a root was stored during
   * this create's check; it embeds them as not indexed. A look-again resumed (after a cut, or owed because search could
   * not answer the create's check) asks about the indexed roots as well, as the create's check would have. Null when
   * search could not answer.
   */
  private async embeddingCopyRoots(card: Card, checked: CheckedRoots | null, known: ReadonlySet<string>, comparison: ShingleComparison): Promise<Card[] | null> {
    // Without the check's note (a collision that left its root, a look-again resumed after a cut): the roots created within
    // the look-back either side of the card's creation, as later ones found it stored when they looked.
    const since = checked?.since ?? new Date(card.createdAt.getTime() - CONCURRENT_ROOTS_LOOKBACK_MS);
    const until = checked ? undefined : new Date(card.createdAt.getTime() + CONCURRENT_ROOTS_LOOKBACK_MS);
    const recent = await this.deps.cards.findRootsCreatedSince(settlingViewer(card), since, CONCURRENT_ROOTS_LIMIT, until);
    const settlesWith = (r: Card) => (isOlder(r, card) && mayHoldCollision(r, card)) || (isOlder(card, r) && mayHoldCollision(card, r));
    const fresh = recent.filter((r) => r.id !== card.id && !checked?.known.has(r.id) && !known.has(r.id) && settlesWith(r));
    if (fresh.length === 0 && checked) return [];
    const verdicts = await this.deps.nearDuplicates.find(card.content, card.authorId, NEAR_DUPLICATE_CANDIDATES + fresh.length, fresh.map((r) => ({ cardId: r.id, content: r.content })));
    if (verdicts === null) return null;
    const copies = new Set(verdicts.filter((v) => v.duplicate).map((v) => v.cardId));
    const freshCopies = fresh.filter((r) => copies.has(r.id));
    if (checked) return freshCopies;
    const freshIds = new Set(fresh.map((r) => r.id));
    const hitIds = verdicts.map((v) => v.cardId).filter((id) => id !== card.id && !freshIds.has(id) && !known.has(id));
    return [...freshCopies, ...(await this.indexedCopyRoots(card, hitIds, copies, settlesWith, comparison))];
  }

  /**
   * The roots of the index's hits `hitIds` that copy `card` by the embedding verdict (`copies`) or by shingles, as
   * findRoot takes them (a hit made a collision since counts by its root), that could settle with it.
   */
  private async indexedCopyRoots(card: Card, hitIds: readonly string[], copies: ReadonlySet<string>, settlesWith: (r: Card) => boolean, comparison: ShingleComparison): Promise<Card[]> {
    if (hitIds.length === 0) return [];
    const found = await this.deps.cards.findByIds(hitIds);
    // A copy by the embedding verdict needs no comparison.
    const nearText = new Set((await nearCopiesAmong(comparison, found.filter((c) => !copies.has(c.id)))).map((s) => s.c));
    const hits = found.filter((c) => copies.has(c.id) || nearText.has(c));
    const rootIds = new Set(hits.map((c) => c.collisionOf ?? c.id));
    rootIds.delete(card.id);
    if (rootIds.size === 0) return [];
    return (await this.deps.cards.findByIds([...rootIds])).filter((r) => r.collisionOf === null && settlesWith(r));
  }

  /** `later`, a root, joins `earlier` with its collisions (settleNearCopyRoots); false when either is no longer a root. */
  private async joinRoot(later: Card, earlier: Card): Promise<boolean> {
    // Later than the card's own time even when it was made by a replica whose clock runs ahead, so search applies it.
    const at = new Date(Math.max(this.now().getTime(), later.updatedAt.getTime() + 1));
    const joined = await this.deps.cards.joinRoot(later.id, earlier.id, later.updatedAt, at, (moved, collectionIds) => [cardRehomed(moved, collectionIds)]);
    if (!joined) return false;
    this.deps.eventsWritten();
    // As for a new collision: the root may have been deleted, made private, edited or joined under another meanwhile.
    const current = await this.deps.cards.findById(earlier.id);
    if (current?.collisionOf) await this.moveCollisions(earlier.id, current.collisionOf);
    else await this.detachLateCollisions(current, earlier.id, current !== null && current.content !== earlier.content);
    return true;
  }

  /** Every collision of fromRootId (a root that became a collision) follows it under toRootId. */
  private async moveCollisions(fromRootId: string, toRootId: string): Promise<void> {
    const moved = await this.deps.cards.moveCollisions(fromRootId, toRootId, (card, collectionIds) => [cardRehomed(card, collectionIds)]);
    if (moved > 0) this.deps.eventsWritten();
  }

  /** Makes a collision a root of its own (it is still a collision of rootId); false when it no longer was. */
  private async detach(card: Card, rootId: string): Promise<boolean> {
    const event = cardRehomed({ ...card, collisionOf: null }, await this.deps.collections.collectionIdsHolding(card.id));
    const detached = await this.deps.cards.detachCollision(card.id, rootId, [event]);
    if (detached) this.deps.eventsWritten();
    return detached;
  }

  /** Collisions that reached a root while it was being made private, edited or deleted (after it looked for them) leave it. */
  private async detachLateCollisions(root: Card | null, rootId: string, textChanged = false): Promise<void> {
    for (const late of await this.deps.cards.findCollisions([rootId])) {
      if (!root || leavesRoot(root, late, stillCopies(root, textChanged))) await this.detach(late, rootId);
    }
  }

  /**
   * The root a new card duplicates, or null. Exact normalized content first, then a near copy by word shingles,
   * then the search index's embedding verdict over the indexed roots and those not indexed yet. A root qualifies when it may hold the new card (mayHoldCollision: the
   * author may see it, and it is at least as visible as the card); otherwise the new card is a root of its own.
   * `checked`: the roots stored when search was asked (null when it was not asked). `lookupOwed`: search could not
   * answer, so the card is a root by the exact and shingle rules for now and owes the lookup (lookAgain).
   */
  private async findRoot(comparison: ShingleComparison, fingerprint: ReturnType<typeof fingerprintOf>, callerId: string, isPrivate: boolean): Promise<{ root: Card | null; checked: CheckedRoots | null; lookupOwed: boolean }> {
    const content = comparison.text;
    let checked: CheckedRoots | null = null;
    const found = (root: Card | null, lookupOwed = false) => ({ root, checked, lookupOwed });
    const { cards } = this.deps;
    const rootCache = new Map<string, Card | null>();
    const qualifyingRoot = async (c: Card): Promise<Card | null> => {
      let root: Card | null = c;
      if (c.collisionOf) {
        if (!rootCache.has(c.collisionOf)) rootCache.set(c.collisionOf, await cards.findById(c.collisionOf));
        root = rootCache.get(c.collisionOf) ?? null;
      }
      if (!root || !mayHoldCollision(root, { authorId: callerId, private: isPrivate })) return null;
      return root;
    };
    const firstQualifying = async (candidates: readonly Card[]) => {
      for (const c of candidates) {
        const root = await qualifyingRoot(c);
        if (root) return root;
      }
      return null;
    };

    const exact = await firstQualifying(await this.sameText(content, fingerprint, 20));
    if (exact) return found(exact);

    const nearCopy = async (candidates: readonly Card[]) => {
      const scored = await nearCopiesAmong(comparison, candidates);
      scored.sort((a, b) => b.j - a.j);
      return firstQualifying(scored.map((s) => s.c));
    };
    const bySketch = await nearCopy(await this.bySketch(content, fingerprint, 20));
    if (bySketch) return found(bySketch);

    const since = new Date(Date.now() - CONCURRENT_ROOTS_LOOKBACK_MS);
    const storedBefore = await cards.findRootsCreatedSince(settlingViewer({ authorId: callerId, private: isPrivate }), since, CONCURRENT_ROOTS_LIMIT);
    // The index learns of new cards from events, so the roots it may not hold yet go along (those that may hold this card).
    const unindexed = (await cards.findUnindexedRoots(callerId, new Date(Date.now() - UNINDEXED_LOOKBACK_MS), UNINDEXED_CANDIDATES)).filter((r) => mayHoldCollision(r, { authorId: callerId, private: isPrivate }));
    checked = { since, known: new Set([...storedBefore, ...unindexed].map((r) => r.id)) };
    const candidates = await this.deps.nearDuplicates.find(content, callerId, NEAR_DUPLICATE_CANDIDATES, unindexed.map((r) => ({ cardId: r.id, content: r.content })));
    if (candidates === null) return found(null, true);
    if (candidates.length === 0) return found(null);
    const stored = new Map((await cards.findByIds(candidates.map((c) => c.cardId))).map((c) => [c.id, c]));
    const byIndexShingles = await nearCopy([...stored.values()]);
    if (byIndexShingles) return found(byIndexShingles);
    const verdicts = candidates.filter((c) => c.duplicate).sort((a, b) => b.cosine - a.cosine);
    return found(await firstQualifying(verdicts.flatMap((v) => stored.get(v.cardId) ?? [])));
  }

  async getCard(cardId: string, callerId: string | undefined): Promise<ViewedCard> {
    const card = await this.deps.cards.findById(cardId);
    if (!card || !isVisibleTo(card, callerId)) throw new NotFoundError('Card not found');
    return (await this.withVotes([card], callerId))[0]!;
  }

  /** Root cards with the collisions the caller may see, in the order of the ids; collisions map to their root. */
  async getCardGroups(cardIds: readonly string[], callerId: string | undefined): Promise<ViewedGroup[]> {
    return (await this.groupReader.read(cardIds, callerId, 0, '')).groups;
  }

  /** The same a part at a time, each at most `maxBytes` of cards: see CardGroupReader.read. */
  async getCardGroupsPart(cardIds: readonly string[], callerId: string | undefined, maxBytes: number, pageToken: string): Promise<CardGroupsPart> {
    return this.groupReader.read(cardIds, callerId, maxBytes, pageToken);
  }

  /**
   * Changes the caller's card. The write applies only to the card as read here; when another change came in between
   * (StaleCardError), the change is worked out again on the fresh card, so a concurrent edit never writes back an old
   * privacy (or anything else it did not change). A privacy sent by the owner is their choice, even the one the card
   * has: it clears the mark of a card its file hid, so making the file public later leaves the card as chosen.
   * Answers the card's version (updatedAt) as this update left it: the one its own conditional write stored, or the one
   * it found when there was nothing to change; never read again, so never a later writer's.
   */
  async updateCard(input: UpdateCardInput): Promise<Date> {
    return this.changeCard(input, 'owner');
  }

  private async changeCard(input: UpdateCardInput, privacyBy: PrivacyChangedBy): Promise<Date> {
    const callerId = requireCaller(input.callerId);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.updateCardOnce(input, callerId, privacyBy);
      } catch (err) {
        if (!(err instanceof StaleCardError)) throw err;
        if (attempt >= VERSIONED_WRITE_ATTEMPTS) throw new UnavailableError('The card is being changed by another request; try again');
      }
    }
  }

  private async updateCardOnce(input: UpdateCardInput, callerId: string, privacyBy: PrivacyChangedBy): Promise<Date> {
    const card = await this.ownCard(input.cardId, callerId);
    // The caller's version (If-Match): a card changed since is refused; one still at it is written with ifUpdatedAt
    // (card.updatedAt, the same instant), so a change landing between this read and the write fails the write
    // (StaleCardError) and the next attempt refuses it here.
    if (input.ifUpdatedAt !== undefined && input.ifUpdatedAt.getTime() !== card.updatedAt.getTime()) {
      throw new ChangedSinceReadError(changedSinceReadMessage('card'));
    }
    const next: Card = { ...card };
    let fingerprint = null;
    if (input.cardHtml !== undefined) {
      const derived = await this.htmlCleaner.clean(input.cardHtml, { caller: callerId });
      next.cardHtml = derived.cardHtml;
      next.content = derived.content;
      if (next.content !== card.content) fingerprint = fingerprintOf(next.content);
    }
    // A link stored under an earlier rule (credentials, a host like "x..com") sent back unchanged is kept without being judged again.
    if (input.link !== undefined) next.link = input.link.trim() === card.link && card.link !== '' ? card.link : validLink(input.link);
    // A collision edited into text that no longer copies its root's is a root of its own (else search could never find it).
    const textChanged = next.content !== card.content;
    let becomesRoot = card.collisionOf !== null && textChanged && !(await this.isCopyOfCard(card.collisionOf, next.content));
    if (becomesRoot) {
      next.collisionOf = null;
      next.vectorPointId = null;
    }
    /** The root a collision its file hid is given back under, public (checked again after the write). */
    let givenBackUnder: Card | null = null;
    if (input.private !== undefined) {
      const privacy = privacyAfterChange(card, input.private, privacyBy);
      if (card.private && !privacy.private && next.collisionOf) {
        // The owner may not publish a private duplicate (DESIGN: 400). A file made public gives back the card it hid
        // (the file's change only ever publishes those), in its place among its copies: under its root when the root
        // may hold it public, else (root gone or private) it leaves it as a collision leaves a root made private, a root
        // of its own.
        if (privacyBy !== 'file') throw new InvalidArgumentError('private: a private duplicate cannot be made public');
        const root = await this.deps.cards.findById(next.collisionOf);
        if (root && !leavesRoot(root, { ...next, ...privacy })) givenBackUnder = root;
        else {
          becomesRoot = true;
          next.collisionOf = null;
          next.vectorPointId = null;
        }
      }
      Object.assign(next, privacy);
    }
    // contentChanged is the card's text (content), which verification compares with the linked page (its only reader):
    // HTML rewritten to the current form alone (an older release's table rows, 2b64475) is stored and announced, and
    // starts no new verification.
    const htmlChanged = next.cardHtml !== card.cardHtml;
    const changes = { contentChanged: next.content !== card.content, linkChanged: next.link !== card.link, privacyChanged: next.private !== card.private };
    if (!htmlChanged && !changes.contentChanged && !changes.linkChanged && !changes.privacyChanged && isHiddenByFile(next) === isHiddenByFile(card)) return card.updatedAt;
    // A score says how well the card matches the page it cites: without a link there is no such page, and a changed
    // link cites another one (its own result, when it comes, is stored then).
    const clearVerification = changes.linkChanged && (card.verificationScore !== null || card.verifiedAt !== null);
    if (clearVerification) Object.assign(next, { verificationScore: null, verifiedAt: null });
    // Later than the card's last change even when a replica whose clock runs ahead made it: search keeps the latest snapshot.
    next.updatedAt = datedAfter(card.updatedAt, this.now());
    const collectionIds = await this.deps.collections.collectionIdsHolding(card.id);
    const events = [cardUpdated(next, collectionIds, changes)];
    let moves: CollisionMove[] = [];
    // A root made private lets go of the collisions it may no longer hold (public ones, other authors' private ones);
    // a root edited into other text lets go of those that no longer copy it.
    const reviewsCollisions = !card.collisionOf && ((next.private && !card.private) || textChanged);
    if (reviewsCollisions) {
      const collisions = await this.deps.cards.findCollisions([card.id]);
      moves = collisionMovesOnChange(next, collisions, stillCopies(next, textChanged));
      events.push(...(await this.movedEvents(collisions, moves)));
    }
    await this.deps.cards.update(next, fingerprint, events, { moves, ifUpdatedAt: card.updatedAt, becomesRoot, clearVerification });
    this.deps.eventsWritten();
    if (reviewsCollisions) await this.detachLateCollisions(next, card.id, textChanged);
    // As for a new collision: the root may have been made private, deleted or joined under another meanwhile.
    if (givenBackUnder) await this.recheckRoot(next, givenBackUnder);
    // The version the write above stored (its ifUpdatedAt condition held, so this and nothing else is the card's now).
    return next.updatedAt;
  }

  private async isCopyOfCard(cardId: string, content: string): Promise<boolean> {
    const other = await this.deps.cards.findById(cardId);
    return other !== null && isNearCopy(other.content, content);
  }

  /**
   * Deletes the caller's card with its votes and bookmarks. A deleted root hands its place to its oldest public
   * collision, which takes the others; with only private collisions, each author's oldest becomes a root (rehomedCollisions).
   */
  async deleteCard(callerId: string | undefined, cardId: string): Promise<void> {
    const card = await this.ownCard(cardId, requireCaller(callerId));
    const events = [];
    let moves: CollisionMove[] = [];
    if (!card.collisionOf) {
      const collisions = await this.deps.cards.findCollisions([card.id]);
      moves = rehomedCollisions(collisions);
      events.push(...(await this.movedEvents(collisions, moves)));
    }
    for (const collectionId of await this.deps.collections.collectionIdsHolding(card.id)) events.push(bookmarkChanged(collectionId, card.id, false));
    events.unshift(cardDeleted(card, moves.find((m) => m.collisionOf === null)?.cardId ?? null));
    if (!(await this.deps.cards.remove(card.id, moves, events))) throw new NotFoundError('Card not found');
    this.deps.eventsWritten();
    if (!card.collisionOf) await this.detachLateCollisions(null, card.id);
  }

  /** The events telling search where moved collisions went (a new root gets indexed). */
  private async movedEvents(collisions: readonly Card[], moves: readonly CollisionMove[]) {
    const events = [];
    for (const move of moves) {
      const moved = collisions.find((c) => c.id === move.cardId)!;
      events.push(cardRehomed({ ...moved, collisionOf: move.collisionOf }, await this.deps.collections.collectionIdsHolding(moved.id)));
    }
    return events;
  }

  async countCards(): Promise<number> {
    return this.deps.cards.count();
  }

  async castVote(callerId: string | undefined, cardId: string, value: boolean): Promise<Vote> {
    const userId = requireCaller(callerId);
    const card = await this.deps.cards.findById(cardId);
    if (!card || !isVisibleTo(card, userId)) throw new NotFoundError('Card not found');
    if (card.private) throw new InvalidArgumentError('card_metadata_id: private cards cannot be voted on');
    // Public at the write, not only at the read above: made private (or deleted) meanwhile, the vote is refused as it
    // would have been after the change, never counted on a card its voter may no longer see.
    const vote = await this.deps.votes.upsert(userId, cardId, value, new Date(), newId(), { publicOnly: true });
    if (vote) return vote;
    const now = await this.deps.cards.findById(cardId);
    if (now && now.private && isVisibleTo(now, userId)) throw new InvalidArgumentError('card_metadata_id: private cards cannot be voted on');
    throw new NotFoundError('Card not found');
  }

  /**
   * Takes back the caller's vote on a card. A vote on a card the caller can no longer see (made private by its author)
   * goes too, but the answer is 404 as for a deleted card (whose votes went with it), so it does not tell a former
   * voter that the card still exists.
   */
  async deleteVote(callerId: string | undefined, cardId: string): Promise<void> {
    const userId = requireCaller(callerId);
    const removed = await this.deps.votes.remove(userId, cardId);
    const card = removed ? await this.deps.cards.findById(cardId) : null;
    if (!card || !isVisibleTo(card, userId)) throw new NotFoundError('You have no vote on this card');
  }

  /**
   * A user's cards page. The received-vote totals count the votes on the cards the viewer may see: all of them for the
   * owner, the public ones for everyone else (votes on a card made private stop counting there until it is public again).
   * Likewise the votes cast count only votes on cards the viewer may see.
   */
  /**
   * A page of the user's cards (private ones for the user themselves). With `maxBytes`, only the first cards within it
   * (at least one) come whole; the others are named in `restCardIds`, for a caller whose message limit they would pass.
   */
  async listUserCards(userId: string, callerId: string | undefined, page: number, maxBytes = 0): Promise<UserCardsPage> {
    validPage(page);
    const includePrivate = callerId === userId;
    const { cards, votes } = this.deps;
    const [list, total, received, cast] = await Promise.all([
      cards.listByAuthor(userId, includePrivate, (page - 1) * PAGE_SIZE, PAGE_SIZE),
      cards.countByAuthor(userId, includePrivate),
      votes.received(userId, includePrivate),
      votes.countCastOnVisible(userId, callerId ?? null),
    ]);
    if (!Number.isInteger(maxBytes) || maxBytes < 0) throw new InvalidArgumentError('max_bytes: must be 0 or more');
    let whole = list.length;
    if (maxBytes > 0) {
      for (let i = 0, bytes = 0; i < list.length; i++) {
        bytes += cardMessageBytes(list[i]!);
        if (i > 0 && bytes > maxBytes) {
          whole = i;
          break;
        }
      }
    }
    return {
      cards: await this.withVotes(list.slice(0, whole), callerId),
      restCardIds: list.slice(whole).map((c) => c.id),
      totalCardsCreated: total,
      totalPages: totalPages(total),
      upvotesReceived: received.upvotes,
      downvotesReceived: received.downvotes,
      votesCast: cast,
    };
  }

  /**
   * Authors with at least one vote received on a public card, by their public score, then join date; 25 per page.
   * Authors whose join date is not known yet rank after the others of their score until it is (fillJoinDates): the
   * request waits for the fill's first JOIN_DATE_ROUND only (a few new authors are placed at once), the rest is filled
   * behind it. Before, each request filled up to 10,000 first: after 50,000 new authors the first requests took ~1 s.
   */
  async topUsers(page: number): Promise<{ users: AuthorScore[]; totalPages: number }> {
    validPage(page);
    const { votes } = this.deps;
    await this.fillJoinDates().firstRound;
    const [users, total] = await Promise.all([votes.topAuthors((page - 1) * PAGE_SIZE, PAGE_SIZE), votes.countRankedAuthors()]);
    return { users, totalPages: totalPages(total) };
  }

  /**
   * Fills the join dates (identity) of the ranked authors without one, JOIN_DATE_ROUND a round, until none is left,
   * identity does not answer, or it knows some of them no more (tried again by the next fill). One fill at a time: a
   * call while one runs gets it (`firstRound` settled once its first round is stored, `done` at its end). Started at
   * the service's start and by top users; never rejects (an error is logged, the next call tries again).
   */
  fillJoinDates(): { firstRound: Promise<void>; done: Promise<void> } {
    if (this.joinDateFill) return this.joinDateFill;
    const { votes, users } = this.deps;
    let firstRoundDone: () => void = () => undefined;
    const firstRound = new Promise<void>((resolve) => (firstRoundDone = resolve));
    const done = (async () => {
      while (!this.joinDateFillStopped) {
        const unknown = await votes.authorsWithoutJoinDate(JOIN_DATE_ROUND);
        if (unknown.length === 0) break;
        const dates = await users.joinDates(unknown);
        if (dates.size === 0 || this.joinDateFillStopped) break;
        await votes.recordJoinDates(dates);
        firstRoundDone();
        if (dates.size < unknown.length) break;
        // A turn for other requests between rounds (an all-in-one's stores and calls may answer without one).
        await new Promise((resolve) => setImmediate(resolve));
      }
    })()
      .catch((err: unknown) => this.deps.logger.warn({ err }, 'filling the join dates of top users failed; the next top users request tries again'))
      .finally(() => {
        firstRoundDone();
        this.joinDateFill = null;
      });
    this.joinDateFill = { firstRound, done };
    return this.joinDateFill;
  }

  /** Ends a join date fill under way after its current round (the service stopping); resolves once it has ended. */
  async stopFillingJoinDates(): Promise<void> {
    this.joinDateFillStopped = true;
    await this.joinDateFill?.done;
  }

  async clearFileReferences(fileId: string): Promise<void> {
    if (!fileId) throw new InvalidArgumentError('file_id: is required');
    // Noted first: a create citing the file that stores its card after the clearing below reads it (createCard).
    await this.deps.cards.noteFileChange(fileId, { deleted: true, private: false, ownerId: '', at: new Date() });
    await this.deps.cards.clearFileReferences(fileId);
  }

  /** The owner changed a file's privacy: its cards and collection follow (followFilePrivacy). */
  async applyFilePrivacy(fileId: string, ownerId: string, isPrivate: boolean): Promise<void> {
    if (!fileId) throw new InvalidArgumentError('file_id: is required');
    requireCaller(ownerId);
    // Noted first, as a deletion (clearFileReferences).
    await this.deps.cards.noteFileChange(fileId, { deleted: false, private: isPrivate, ownerId, at: new Date() });
    await this.followFilePrivacy(fileId, ownerId, isPrivate);
  }

  private async followFilePrivacy(fileId: string, ownerId: string, isPrivate: boolean): Promise<void> {
    await followFilePrivacy(
      {
        cards: this.deps.cards,
        collections: this.deps.collections,
        changeCardPrivacy: async (cardId) => {
          await this.changeCard({ callerId: ownerId, cardId, private: isPrivate }, 'file');
        },
        now: () => this.now(),
      },
      fileId,
      ownerId,
      isPrivate,
    );
  }

  /**
   * The search service indexed a root card. A card whose create was cut off before it finished its look-again (the
   * process killed after the insert) still owes it, and this announcement, durable like every event and delivered again
   * when its handling was cut, reaches it after the restart: the whole look-again runs then (finishOwedLookAgain). So does
   * a card made while search could not answer its near-duplicate lookup (restarting, loading its index, down): search
   * announces it once it is back and has indexed it. A card whose create finished it reads nothing more. `delivery`: how
   * many times the announcement was delivered before (the bus's attempt).
   */
  async recordIndexed(cardId: string, vectorPointId: string, delivery = 0): Promise<void> {
    await this.deps.cards.setVectorPointId(cardId, vectorPointId);
    const after = await this.finishOwedLookAgain(cardId);
    if (!after?.owed) return;
    // Search announced the card but could not answer its lookup (overloaded, restarting again): the bus delivers the
    // announcement again a while later, never dead-lettered; not forever: then the card stays a root, as it was made.
    if (delivery + 1 < OWED_LOOKUP_DELIVERIES) throw new RetryableUnavailableError('The search service did not answer the near-duplicate lookup of a card it indexed; trying again');
    await this.deps.cards.clearLookAgainOwed(cardId);
    this.deps.logger.warn({ cardId, deliveries: delivery + 1 }, 'search did not answer the near-duplicate lookup of a card it indexed, again and again: the card stays a root by the exact and shingle rules');
  }

  /**
   * The search service verified a card against its link (CardVerified). A result for a link the card no longer has, for
   * content it no longer holds (its html changed while the page was checked), or older than the one it holds, is
   * dropped; a kept one is announced on cards.verification.v1 in the same write, and only that announcement notifies the
   * author. Search drops a result whose card it already knows to link elsewhere, but an edit can reach search after the
   * result was announced: cards, where the edit was made, decides. Returns whether it was kept.
   */
  async recordVerification(verified: events.CardVerified): Promise<boolean> {
    if (!verified.cardId) return false;
    const link = verified.link.trim();
    let content: string | undefined;
    // From a search service of an earlier release the content is not named, and not checked.
    if (verified.contentSha256) {
      const card = await this.deps.cards.findById(verified.cardId);
      if (!card || createHash('sha256').update(card.content).digest('hex') !== verified.contentSha256) return false;
      // Written only if the card still holds it then (an edit may come between this read and the write).
      content = card.content;
    }
    return this.deps.cards.setVerification(verified.cardId, verified.score, verified.occurredAt ?? new Date(), link, [verificationKept({ ...verified, link })], content);
  }

  /** Cards as the viewer is shown them (every read of cards goes through here): with the viewer's vote, and a private file's id and name only for the card's author. */
  async withVotes(list: readonly Card[], viewerId: string | undefined): Promise<ViewedCard[]> {
    const mine = viewerId && list.length > 0 ? await this.deps.votes.votesOf(viewerId, list.map((c) => c.id)) : new Map<string, boolean>();
    return list.map((c) => ({ ...withFileShownTo(c, viewerId), viewerVote: mine.get(c.id) ?? null }));
  }

  /** The caller's own card: 404 when it is invisible to them, 403 when it is someone else's visible card. */
  private async ownCard(cardId: string, callerId: string): Promise<Card> {
    const card = await this.deps.cards.findById(cardId);
    if (!card || !isVisibleTo(card, callerId)) throw new NotFoundError('Card not found');
    if (card.authorId !== callerId) throw new PermissionDeniedError('Only the author can change this card');
    return card;
  }
}

const asCreated = (card: Card) => ({ card: { ...card, viewerVote: null }, duplicate: card.collisionOf !== null });

/** The roots a duplicate check noted before asking search: those created since `since` (`known`) and the unindexed ones it sent. */
interface CheckedRoots {
  since: Date;
  known: Set<string>;
}

/**
 * Whose roots a card settles with: every author's for a public card (a later copy it may hold may be another's private
 * card), the author's own and public ones for a private card (only those may hold it or be held by it).
 */
function settlingViewer(card: Pick<Card, 'authorId' | 'private'>): string | null {
  return card.private ? card.authorId : null;
}

/** Whether `a` was created before `b` (createdAt, then id): of two near-copy roots the older stays a root. */
export function isOlder(a: Pick<Card, 'createdAt' | 'id'>, b: Pick<Card, 'createdAt' | 'id'>): boolean {
  const diff = a.createdAt.getTime() - b.createdAt.getTime();
  return diff < 0 || (diff === 0 && a.id < b.id);
}

/** After a root's text changed, its collisions still copy it only when they are near copies of the new text. */
function stillCopies(root: Card, textChanged: boolean): (collision: Card) => boolean {
  return (collision) => !textChanged || isNearCopy(root.content, collision.content);
}

export type { CardGroup };
