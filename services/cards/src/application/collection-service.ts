import { changedSinceReadMessage, truncatedToCharacters } from '@cards/card-rules';
import { AlreadyExistsError, ChangedSinceReadError, GRPC_PART_BYTES, InvalidArgumentError, newId, NotFoundError, pageLimit, PermissionDeniedError, earlierCreateForKey, UnavailableError, type Page } from '@cards/platform';
import { isCollectionVisibleTo, isVisibleTo, PAGE_SIZE, totalPages, type Collection } from '../domain/model';
import type { CardRepository, CollectionChange, CollectionRepository, FileDirectory } from '../domain/ports';
import { MAX_COLLECTION_NAME_CHARS, validCollectionDescription, validCollectionName } from '../domain/rules';
import { requireCaller, validPage, type CardService, type ViewedGroup } from './card-service';
import { bookmarkChanged, datedAfter, collectionCreated, collectionDeleted, VERSIONED_WRITE_ATTEMPTS } from './events';
import { setCollectionPrivacy } from './file-privacy';

export interface CollectionServiceDeps {
  collections: CollectionRepository;
  cards: CardRepository;
  cardService: CardService;
  /** The files service: whether a file's collection may be made public (only while its file is public). */
  files: FileDirectory;
  eventsWritten: () => void;
  /** Where a bookmark lookup page ends; GRPC_PART_BYTES unless a test sets less. */
  lookupPageBytes?: number;
}

export interface CollectionPatch {
  name?: string;
  description?: string;
  isPublic?: boolean;
}

/** Why a file's collection cannot be made public now. */
export const PRIVATE_FILE_COLLECTION =
  "is_public: the collection of a file is public exactly when the file is, and this collection's file is private; make the file public (PUT /api/file with private false) and its collection is made public with it";

/** Why a change with the caller's version (HTTP If-Match) was refused. */
const COLLECTION_CHANGED_SINCE_READ = changedSinceReadMessage('collection');

/** The most card ids one bookmark lookup may list. */
const MAX_LOOKUP_CARDS = 500;

/** A card of a bookmark lookup and the caller's collections that show it. */
export interface CardCollections {
  cardId: string;
  collectionIds: string[];
}

/** A page of a collection's entries; `more` when they go on past `maxGroupBytes` (read on with getCardGroupsPart). */
export interface CollectionCardsPage {
  collection: Collection;
  bookmarks: ViewedGroup[];
  totalPages: number;
  more?: { rootIds: string[]; pageToken: string };
}

/** How far before its check an update reads the file changes applied since: longer than replicas' clock skew. */
const FILE_CHANGE_LOOKBACK_MS = 5_000;

/** Use cases of collections and bookmarks. */
export class CollectionService {
  constructor(private readonly deps: CollectionServiceDeps) {}

  /**
   * Creates the caller's collection. With an idempotency key, a create repeated by the caller (a retry after a lost
   * answer, a second click, or both at once) answers the collection the first one made and makes none; AlreadyExistsError
   * when that collection was deleted since (the repeat is late: making it again would bring back what the user deleted),
   * and IdempotencyKeyReusedError when the key came with a request of another fingerprint.
   */
  async create(callerId: string | undefined, name: string, description: string, isPublic: boolean, idempotency: { key?: string; requestFingerprint?: string } = {}): Promise<Collection> {
    const authorId = requireCaller(callerId);
    const fields = { name: validCollectionName(name), description: validCollectionDescription(description), isPublic };
    const key = idempotency.key || undefined;
    if (key) {
      const earlier = await this.earlierCreate(authorId, key, idempotency.requestFingerprint);
      if (earlier) return earlier;
    }
    const now = new Date();
    const requestFingerprint = (key && idempotency.requestFingerprint) || null;
    const collection: Collection = { id: newId(), authorId, ...fields, fileId: null, idempotencyKey: key ?? null, requestFingerprint, createdAt: now, updatedAt: now };
    try {
      await this.deps.collections.insert(collection, [collectionCreated(collection)]);
    } catch (err) {
      // The same create at the same moment stored its collection first.
      const earlier = err instanceof AlreadyExistsError && key ? await this.earlierCreate(authorId, key, idempotency.requestFingerprint) : null;
      if (earlier) return earlier;
      throw err;
    }
    this.deps.eventsWritten();
    return collection;
  }

  /** What an earlier create with the caller's key made: its collection, or null for none (see create for the refusals). */
  private async earlierCreate(authorId: string, key: string, requestFingerprint: string | undefined): Promise<Collection | null> {
    const { collections } = this.deps;
    return earlierCreateForKey(
      { live: () => collections.findByIdempotencyKey(authorId, key), deleted: () => collections.findDeletedIdempotencyKey(authorId, key) },
      requestFingerprint,
      'a collection',
      'Idempotency-Key: the collection this key created was deleted since; send a new key to create another',
    );
  }

  /**
   * Changes the caller's collection. A file's collection is public exactly when its file is (docs/files.md), so making it
   * public while the file is private is refused (InvalidArgumentError naming the rule): it would show the file's name
   * (in the collection's name) and id to everyone while the file is private. The file's privacy is read again after the
   * write, so a file made private meanwhile, whose change may have found the collection still private, leaves it private.
   */
  async update(callerId: string | undefined, collectionId: string, patch: CollectionPatch, ifUpdatedAt?: Date): Promise<Date> {
    const caller = requireCaller(callerId);
    for (let attempt = 1; ; attempt++) {
      const written = await this.updateOnce(caller, collectionId, patch, ifUpdatedAt);
      if (written) return written;
      if (attempt >= VERSIONED_WRITE_ATTEMPTS) throw new UnavailableError('The collection is being changed by another request; try again');
    }
  }

  /**
   * One attempt of update(): the version it wrote, or undefined when, without the caller's version, another change
   * landed between its read and its write (nothing written: read again and retry).
   */
  private async updateOnce(callerId: string, collectionId: string, patch: CollectionPatch, ifUpdatedAt: Date | undefined): Promise<Date | undefined> {
    const collection = await this.ownCollection(collectionId, callerId);
    // The caller's version (If-Match): a collection changed since is refused; one still at it is written only on it
    // (the repository's ifUpdatedAt, checked in the write's own step), so a change landing between this read and the
    // write is not replaced either.
    if (ifUpdatedAt !== undefined && ifUpdatedAt.getTime() !== collection.updatedAt.getTime()) throw new ChangedSinceReadError(COLLECTION_CHANGED_SINCE_READ);
    // Only the fields asked for: a concurrent change of another field (a privacy flip) must not be written back. Dated
    // after the collection's last change (as a card's), so every change is a new version, whatever this clock says.
    // Written on the version read even without the caller's: another change landing meanwhile could otherwise be dated
    // the same (both after the one version they read, from clocks behind it), two states under one ETag, so an
    // If-Match naming the first would take the second for it; that attempt writes nothing and is made again.
    const change: CollectionChange = { updatedAt: datedAfter(collection.updatedAt, new Date()), ifUpdatedAt: ifUpdatedAt ?? collection.updatedAt };
    // The name sent back exactly as stored (trimmed, as it is stored) is kept, not judged again: a name stored before the
    // rule of names refused invisible characters (70b168a: "Reading\u200Blist") would otherwise make every save of the
    // edit form, which always sends the name, fail until the user retypes a character they cannot see. Usernames sent
    // back unchanged are kept the same way. Any other name follows today's rule.
    if (patch.name !== undefined && patch.name.trim() !== collection.name) change.name = validCollectionName(patch.name);
    if (patch.description !== undefined) change.description = validCollectionDescription(patch.description);
    if (patch.isPublic !== undefined) change.isPublic = patch.isPublic;
    const publishesFileCollection = patch.isPublic === true && collection.fileId !== null;
    // Changes of the file applied from here on (noted by CardService.applyFilePrivacy) may find the collection private.
    const checkedAt = new Date(Date.now() - FILE_CHANGE_LOOKBACK_MS);
    if (publishesFileCollection && (await this.fileIsPrivate(collection))) throw new InvalidArgumentError(PRIVATE_FILE_COLLECTION);
    if (!(await this.deps.collections.update(collection.id, change, []))) {
      // Without the caller's version: read again (a collection deleted meanwhile is 404 then) and retry.
      if (ifUpdatedAt === undefined) return undefined;
      if (!(await this.deps.collections.findById(collection.id))) throw new NotFoundError('Collection not found');
      throw new ChangedSinceReadError(COLLECTION_CHANGED_SINCE_READ);
    }
    if (publishesFileCollection && (await this.madePrivateSince(collection, checkedAt))) {
      // Written on the version read (this write's, or a later change's), dated after it, as the file's own change is.
      const collections = this.deps.collections;
      await setCollectionPrivacy({ collections, now: () => new Date() }, () => collections.findById(collection.id), () => false);
      throw new InvalidArgumentError(PRIVATE_FILE_COLLECTION);
    }
    // The version the write above stored (not read again, so never a later writer's).
    return change.updatedAt;
  }

  /**
   * After a file's collection was made public: whether its file was made private meanwhile. The files service, when it
   * answers, tells the file as it is now, a change whose event is not applied yet included. When it does not answer,
   * the change applied since the check (noted in cards' own store) answers; with none noted the collection stays
   * public: a change's event, applied later, makes it private (before a29625e, the collection stayed public and the
   * caller was answered 503). The note is not read first: it may be older than the check (read from
   * FILE_CHANGE_LOOKBACK_MS before it), a file made private then public again with that event not applied yet, and
   * the collection of a public file was made private again and the caller answered 400 'file is private'.
   */
  private async madePrivateSince(collection: Collection, checkedAt: Date): Promise<boolean> {
    try {
      return await this.fileIsPrivate(collection);
    } catch (err) {
      if (!(err instanceof UnavailableError)) throw err;
      return (await this.deps.cards.fileChangeSince(collection.fileId!, checkedAt))?.private === true;
    }
  }

  /** Whether the file of the owner's file collection is private now (a deleted file is not: its collection keeps no file). */
  private async fileIsPrivate(collection: Collection): Promise<boolean> {
    try {
      return (await this.deps.files.visibleFile(collection.fileId!, collection.authorId))?.private === true;
    } catch (err) {
      if (err instanceof UnavailableError) throw new UnavailableError("The files service cannot tell whether this collection's file is private right now, try again");
      throw err;
    }
  }

  /** Deletes the collection and its bookmarks; the cards stay. */
  async delete(callerId: string | undefined, collectionId: string): Promise<void> {
    const collection = await this.ownCollection(collectionId, requireCaller(callerId));
    const cardIds = await this.deps.collections.bookmarkedCardIds(collection.id);
    const events = [...cardIds.map((cardId) => bookmarkChanged(collection.id, cardId, false)), collectionDeleted(collection)];
    if (!(await this.deps.collections.remove(collection.id, events))) throw new NotFoundError('Collection not found');
    this.deps.eventsWritten();
  }

  async get(collectionId: string, callerId: string | undefined): Promise<Collection> {
    const collection = await this.deps.collections.findById(collectionId);
    if (!collection || !isCollectionVisibleTo(collection, callerId)) throw new NotFoundError('Collection not found');
    return collection;
  }

  /** Bookmarks a card the caller may see in the caller's collection; already there is a no-op. */
  async addBookmark(callerId: string | undefined, collectionId: string, cardId: string): Promise<void> {
    const userId = requireCaller(callerId);
    const collection = await this.ownCollection(collectionId, userId);
    const card = await this.deps.cards.findById(cardId);
    if (!card || !isVisibleTo(card, userId)) throw new NotFoundError('Card not found');
    // The event dated as the bookmark is stored: its removal is dated after that (removeBookmark).
    const at = new Date();
    // Visible at the write too: a card made private (or deleted) by its author meanwhile is refused as it would be after
    // that change, never left bookmarked behind it (it would come back into the collection if made public again).
    const outcome = await this.deps.collections.addBookmark(collection.id, card.id, at, [bookmarkChanged(collection.id, card.id, true, at)], {
      visibleToOwner: true,
      takenBackEvents: [bookmarkChanged(collection.id, card.id, false, datedAfter(at))],
    });
    if (outcome === 'card-gone') throw new NotFoundError('Card not found');
    if (outcome === 'collection-gone') throw new NotFoundError('Collection not found');
    if (outcome === 'added') this.deps.eventsWritten();
  }

  /**
   * Takes a card out of the caller's collection: a root takes its whole entry out (its own bookmark and its collisions'),
   * as the collection page shows a bookmarked collision in its root's entry and the root's lookup counts it; a
   * collision only its own bookmark. Bookmarks of cards the caller can no longer see (made private by their author) go
   * too, so they do not come back into the collection if made public again, but do not count as removed: with nothing
   * else removed the answer is 404, as for a deleted card, so their existence stays hidden.
   */
  async removeBookmark(callerId: string | undefined, collectionId: string, cardId: string): Promise<void> {
    const userId = requireCaller(callerId);
    const collection = await this.ownCollection(collectionId, userId);
    const removed = await this.deps.collections.removeEntry(collection.id, cardId, (removedId, addedAt) => [bookmarkChanged(collection.id, removedId, false, datedAfter(addedAt))]);
    if (removed.length > 0) this.deps.eventsWritten();
    const shown = (await this.deps.cards.findByIds(removed)).some((card) => isVisibleTo(card, userId));
    if (!shown) throw new NotFoundError('The card is not in this collection');
  }

  /**
   * A page of the collection's bookmarked cards the caller may see, grouped as search results are: each entry is a
   * root followed by its visible collisions, and a bookmarked collision is shown in its root's entry (DESIGN.md: a
   * collision appears inside its root's metadata array). Entries are in the order of their first bookmark.
   */
  async listCards(collectionId: string, callerId: string | undefined, page: number, maxGroupBytes = 0): Promise<CollectionCardsPage> {
    validPage(page);
    const collection = await this.get(collectionId, callerId);
    const viewer = callerId ?? null;
    // The count first: a page past the end reads no bookmark.
    const total = await this.deps.collections.countVisibleBookmarkedRoots(collection.id, viewer);
    const offset = (page - 1) * PAGE_SIZE;
    const rootIds = offset < total ? await this.deps.collections.listVisibleBookmarkedRoots(collection.id, viewer, offset, PAGE_SIZE) : [];
    const part = await this.deps.cardService.getCardGroupsPart(rootIds, callerId, maxGroupBytes, '');
    const more = part.next === undefined ? {} : { more: { rootIds, pageToken: part.next } };
    return { collection, bookmarks: part.groups, totalPages: totalPages(total), ...more };
  }

  /**
   * Public collections of a user, or all of them for the user themselves, newest first: at most `pageSize` (see
   * pageLimit) after the `pageToken` a previous page gave; page size 0 with no token lists them all in one page.
   */
  async listUserCollections(userId: string, callerId: string | undefined, pageSize = 0, pageToken = ''): Promise<Page<Collection>> {
    const includePrivate = userId === callerId;
    const limit = pageLimit(pageSize, pageToken);
    if (limit === undefined) return { items: await this.deps.collections.listByAuthor(userId, includePrivate) };
    return this.deps.collections.listPageByAuthor(userId, includePrivate, limit, pageToken === '' ? undefined : pageToken);
  }

  /**
   * For each card id (in order), the caller's collections whose page shows it. A collection page shows a card in its
   * group's entry (its root, then the duplicates of it the caller may see), whichever card of the group is bookmarked,
   * so every card of a group answers the same: the collections holding any card of the group the caller may see. A
   * bookmarked card the caller can no longer see (made private by its author) answers none, as a deleted one does, so
   * its existence stays hidden.
   *
   * A card's answer does not depend on the others asked with it, so the answer comes in pages of cards: at most
   * `pageSize` (see pageLimit), from the place the `pageToken` of the page before names in the same card ids, ending
   * early once the page's collection ids pass GRPC_PART_BYTES. Page size 0 with no token: all at once.
   */
  async findCardCollections(callerId: string | undefined, cardIds: readonly string[], pageSize = 0, pageToken = ''): Promise<Page<CardCollections>> {
    const userId = requireCaller(callerId);
    if (cardIds.length > MAX_LOOKUP_CARDS) throw new InvalidArgumentError(`collection_ids: at most ${MAX_LOOKUP_CARDS} card ids`);
    const unique = [...new Set(cardIds)];
    const limit = pageLimit(pageSize, pageToken, MAX_LOOKUP_CARDS);
    if (limit === undefined) return { items: await this.cardCollections(userId, unique) };
    const start = pageToken === '' ? 0 : Number(pageToken);
    if (!/^$|^[1-9]\d{0,2}$/.test(pageToken) || (pageToken !== '' && start >= unique.length)) throw new InvalidArgumentError('page_token: not a token this service gave for these card ids');
    const answered = await this.cardCollections(userId, unique.slice(start, start + limit));
    let end = 0;
    for (let bytes = 0; end < answered.length; end++) {
      // Protobuf bytes of the entry, near enough: each id with its tag and length.
      bytes += (1 + answered[end]!.collectionIds.length) * 38;
      if (end > 0 && bytes > (this.deps.lookupPageBytes ?? GRPC_PART_BYTES)) break;
    }
    const items = answered.slice(0, end);
    return start + end < unique.length ? { items, next: String(start + end) } : { items };
  }

  private async cardCollections(userId: string, ids: readonly string[]): Promise<CardCollections[]> {
    const rootIdOf = new Map((await this.deps.cards.findByIds(ids)).filter((c) => isVisibleTo(c, userId)).map((c) => [c.id, c.collisionOf ?? c.id]));
    const roots = (await this.deps.cards.findByIds([...new Set(rootIdOf.values())])).filter((r) => isVisibleTo(r, userId));
    const group = new Map(roots.map((r) => [r.id, [r.id]]));
    for (const copy of await this.deps.cards.findCollisions([...group.keys()])) if (isVisibleTo(copy, userId)) group.get(copy.collisionOf!)?.push(copy.id);
    const held = await this.deps.collections.collectionsOfOwnerHolding(userId, [...group.values()].flat());
    // Oldest first across the group too: each collection by its first place in the repository's order.
    const rank = new Map<string, number>();
    const heldBy = new Map<string, string[]>();
    for (const { cardId, collectionId } of held) {
      if (!rank.has(collectionId)) rank.set(collectionId, rank.size);
      const list = heldBy.get(cardId);
      if (list) list.push(collectionId);
      else heldBy.set(cardId, [collectionId]);
    }
    const membersOf = (cardId: string) => (rootIdOf.has(cardId) ? (group.get(rootIdOf.get(cardId)!) ?? [cardId]) : []);
    return ids.map((cardId) => {
      const collectionIds = [...new Set(membersOf(cardId).flatMap((id) => heldBy.get(id) ?? []))];
      collectionIds.sort((a, b) => rank.get(a)! - rank.get(b)!);
      return { cardId, collectionIds };
    });
  }

  /**
   * The collection of an ingested file, all its cards bookmarked; idempotent per file id. A file that no longer exists
   * (deleted during its ingestion, after the ingestion's last look) or is not the owner's gets none: InvalidArgumentError
   * `file_id: no such file`, as a card naming a missing file is refused. A repeat for a file whose collection exists
   * answers it even when the file was deleted since (a deleted file's collection stays).
   */
  async createFileCollection(ownerId: string, fileId: string, fileName: string, isPublic: boolean, cardIds: readonly string[]): Promise<Collection> {
    requireCaller(ownerId);
    if (!fileId) throw new InvalidArgumentError('file_id: is required');
    const made = await this.deps.collections.findByFileId(fileId);
    if (made) return made;
    // Throws UnavailableError when the files service cannot answer, so the ingestion tries again.
    const file = await this.deps.files.visibleFile(fileId, ownerId);
    if (file === null || file.ownerId !== ownerId) throw new InvalidArgumentError('file_id: no such file');
    const existingCards = new Set((await this.deps.cards.findByIds(cardIds)).map((c) => c.id));
    const kept = [...new Set(cardIds)].filter((id) => existingCards.has(id));
    const now = new Date();
    const collection: Collection = {
      id: newId(),
      authorId: ownerId,
      name: truncatedToCharacters(`Collection for file ${fileName}`, MAX_COLLECTION_NAME_CHARS),
      description: '',
      isPublic,
      fileId,
      idempotencyKey: null,
      requestFingerprint: null,
      createdAt: now,
      updatedAt: now,
    };
    const result = await this.deps.collections.insertFileCollection(collection, kept, (stored) => [collectionCreated(stored), ...kept.map((cardId) => bookmarkChanged(stored.id, cardId, true, stored.createdAt))]);
    if (result.created) this.deps.eventsWritten();
    return result.collection;
  }

  /** The caller's own collection: 404 when invisible to them, 403 when someone else's visible one. */
  private async ownCollection(collectionId: string, callerId: string): Promise<Collection> {
    const collection = await this.deps.collections.findById(collectionId);
    if (!collection || !isCollectionVisibleTo(collection, callerId)) throw new NotFoundError('Collection not found');
    if (collection.authorId !== callerId) throw new PermissionDeniedError('Only the owner can change this collection');
    return collection;
  }
}
