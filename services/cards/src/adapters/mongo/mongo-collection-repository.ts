import { AlreadyExistsError, appendToMongoOutbox, appendToMongoOutboxOrUndo, creationCursor, isDuplicateKeyError, pageOfRows, type OutgoingEvent, type Page } from '@cards/platform';
import type { ClientSession, Filter } from 'mongodb';
import type { Collection, DeletedIdempotencyKey } from '../../domain/model';
import { BOOKMARK_BLOCK, blockHolding, type BookmarkAddition, type BookmarkAdditionOptions, type CollectionChange, type CollectionRepository, type HeldCard, type StoredBookmark, versionAfterStored } from '../../domain/ports';
import {
  bookmarkId,
  findDeletedIdempotencyKey,
  fromCollectionDocument,
  idempotencyOf,
  keepDeletedIdempotencyKey,
  KEY_PROJECTION,
  toCollectionDocument,
  type BookmarkDocument,
  type CollectionDocument,
  type MongoCardsDatabase,
} from './mongo-cards-database';
import { addBlock, blocksOfGroups, changingGroups, dropRootCounts, forgetRootCounts, keptRoots, markBlocks, type KeptRoots } from './mongo-bookmark-root-counts';

/** Collections being removed whose bookmarks may remain (MongoCollectionRepository.remove, resumeBookmarkSweeps). */
export const BOOKMARK_SWEEPS = 'collection_bookmark_sweeps';

/**
 * The roots of the bookmarked cards the viewer may see (private cards only for their author), one row each (`_id` the
 * root id) with `first`, the order of the group's first bookmark.
 */
function visibleBookmarkedRootsPipeline(collectionId: string, viewerId: string | null): object[] {
  const visible = viewerId === null ? { 'card.private': false } : { $or: [{ 'card.private': false }, { 'card.authorId': viewerId }] };
  return [
    { $match: { collectionId } },
    { $lookup: { from: 'cards', localField: 'cardId', foreignField: '_id', as: 'card' } },
    { $unwind: '$card' },
    { $match: visible },
    { $group: { _id: { $ifNull: ['$card.collisionOf', '$card._id'] }, first: { $min: '$ord' } } },
  ];
}

/**
 * Collections (`collections`, one per file by a sparse unique index) and bookmarks (`bookmarks`, `_id` =
 * collection:card, so a card is bookmarked once per collection) in the cards service's MongoDB database. Bookmark order
 * numbers come from a `$inc` counter on the collection. On a replica set each write commits with its events; on a
 * standalone server the events are written right after the change (see docs/engines.md).
 */
/** The fields a collection update sets (CollectionChange without its condition). */
type CollectionSet = Partial<Pick<Collection, 'name' | 'description' | 'isPublic'>> & { updatedAt: Date };

export class MongoCollectionRepository implements CollectionRepository {
  constructor(private readonly store: MongoCardsDatabase) {}

  async insert(collection: Collection, events: OutgoingEvent[]): Promise<void> {
    try {
      await this.store.change(async (session) => {
        await this.store.collections.insertOne(toCollectionDocument(collection), { session });
        await appendToMongoOutboxOrUndo(this.store.db, events, session, () => this.store.collections.deleteOne({ _id: collection.id }));
      });
    } catch (err) {
      if (isDuplicateKeyError(err, 'idempotency')) throw new AlreadyExistsError('A collection with this idempotency key already exists');
      throw err;
    }
  }

  async findByIdempotencyKey(authorId: string, key: string): Promise<Collection | null> {
    const doc = await this.store.collections.findOne({ idempotency: idempotencyOf(authorId, key) });
    return doc ? fromCollectionDocument(doc) : null;
  }

  async findDeletedIdempotencyKey(authorId: string, key: string): Promise<DeletedIdempotencyKey | null> {
    return findDeletedIdempotencyKey(this.store, 'collection', authorId, key);
  }

  async insertFileCollection(collection: Collection, cardIds: readonly string[], events: (stored: Collection) => OutgoingEvent[]): Promise<{ collection: Collection; created: boolean }> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.store.change(async (session) => {
          const existing = collection.fileId === null ? null : await this.store.collections.findOne({ fileId: collection.fileId }, { session });
          if (existing) return { collection: fromCollectionDocument(existing), created: false };
          // The sparse unique index on fileId decides between two concurrent calls for the same file.
          await this.store.collections.insertOne(toCollectionDocument(collection), { session });
          const unique = [...new Set(cardIds)];
          const present = new Set((await this.store.cards.find({ _id: { $in: unique } }, { session, projection: { _id: 1 } }).toArray()).map((d) => d._id));
          const bookmarks: BookmarkDocument[] = unique
            .filter((id) => present.has(id))
            .map((cardId, i) => ({ _id: bookmarkId(collection.id, cardId), collectionId: collection.id, cardId, ownerId: collection.authorId, ord: i + 1, createdAt: collection.createdAt }));
          if (bookmarks.length > 0) {
            await this.store.bookmarks.insertMany(bookmarks, { session, ordered: true });
            await this.store.collections.updateOne({ _id: collection.id }, { $inc: { bookmarkSeq: bookmarks.length } }, { session });
          }
          await appendToMongoOutboxOrUndo(this.store.db, events(collection), session, async () => {
            await this.store.bookmarks.deleteMany({ collectionId: collection.id });
            await this.store.collections.deleteOne({ _id: collection.id });
          });
          return { collection, created: true };
        });
        if (result.created) await this.takeBackBookmarksOfRemovedCards(collection.id);
        return result;
      } catch (err) {
        // Another call created this file's collection first: answer with it.
        if (attempt < 3 && collection.fileId !== null && isDuplicateKeyError(err, 'fileId')) continue;
        throw err;
      }
    }
  }

  /** A card removed while its file's collection was being written may have missed its sweep (as in addBookmark). */
  private async takeBackBookmarksOfRemovedCards(collectionId: string): Promise<void> {
    const cardIds = (await this.store.bookmarks.find({ collectionId }, { projection: { cardId: 1 } }).toArray()).map((b) => b.cardId);
    const present = new Set((await this.store.cards.find({ _id: { $in: cardIds } }, { projection: { _id: 1 } }).toArray()).map((c) => c._id));
    const removed = cardIds.filter((id) => !present.has(id));
    if (removed.length > 0) await this.store.bookmarks.deleteMany({ collectionId, cardId: { $in: removed } });
  }

  async findById(id: string): Promise<Collection | null> {
    const doc = await this.store.collections.findOne({ _id: id });
    return doc ? fromCollectionDocument(doc) : null;
  }

  async findByFileId(fileId: string): Promise<Collection | null> {
    const doc = await this.store.collections.findOne({ fileId });
    return doc ? fromCollectionDocument(doc) : null;
  }

  async update(id: string, change: CollectionChange, events: OutgoingEvent[]): Promise<boolean> {
    const set: CollectionSet = { updatedAt: change.updatedAt };
    if (change.name !== undefined) set.name = change.name;
    if (change.description !== undefined) set.description = change.description;
    if (change.isPublic !== undefined) set.isPublic = change.isPublic;
    // With ifUpdatedAt, the version is part of the filter: the check and the write are one atomic step.
    const filter = change.ifUpdatedAt === undefined ? { _id: id } : { _id: id, updatedAt: change.ifUpdatedAt };
    return this.store.change(async (session) => {
      const previous = change.ifUpdatedAt === undefined ? await this.updateAfterStored(id, set, session) : await this.store.collections.findOneAndUpdate(filter, { $set: set }, { session, returnDocument: 'before' });
      if (!previous && change.ifUpdatedAt !== undefined) return false;
      await appendToMongoOutboxOrUndo(this.store.db, events, session, async () => {
        if (!previous) return;
        const undo = Object.fromEntries(Object.keys(set).map((field) => [field, previous[field as keyof CollectionSet]]));
        const written = change.ifUpdatedAt === undefined ? versionAfterStored(change.updatedAt, previous.updatedAt) : change.updatedAt;
        await this.store.collections.updateOne({ _id: id, updatedAt: written }, { $set: undo });
      });
      return previous !== null;
    });
  }

  /**
   * An update without ifUpdatedAt: written on the version it reads, as versionAfterStored(set.updatedAt, that version),
   * read again when another write landed in between (each such loss is that write's success, so honest races end it).
   * One step would need an update pipeline ($add on the stored date), which the test engine (mongo-java-server) lacks.
   * The collection before the write, or null when it is gone.
   */
  private async updateAfterStored(id: string, set: CollectionSet, session: ClientSession | undefined) {
    for (;;) {
      const stored = await this.store.collections.findOne({ _id: id }, { session, projection: { updatedAt: 1 } });
      if (!stored) return null;
      const updatedAt = versionAfterStored(set.updatedAt, stored.updatedAt);
      const previous = await this.store.collections.findOneAndUpdate({ _id: id, updatedAt: stored.updatedAt }, { $set: { ...set, updatedAt } }, { session, returnDocument: 'before' });
      if (previous) return previous;
    }
  }

  /** Deleted collections whose bookmarks may not all be gone yet (`_id` the collection's id); see remove. */
  private get sweeps() {
    return this.store.db.collection<{ _id: string; at: Date }>(BOOKMARK_SWEEPS);
  }

  /**
   * Finishes the bookmark sweeps a stop cut short (remove): called when the store is opened. A marker whose collection
   * is still there is of a removal stopped before the collection went (or a remove still under way on another
   * process, which deletes its bookmarks itself): it is dropped; otherwise the collection's bookmarks and kept counts go.
   */
  async resumeBookmarkSweeps(): Promise<number> {
    let resumed = 0;
    for (const { _id: id } of await this.sweeps.find({}, { projection: { _id: 1 } }).toArray()) {
      if (!(await this.store.collections.findOne({ _id: id }, { projection: { _id: 1 } }))) {
        await this.store.bookmarks.deleteMany({ collectionId: id });
        await dropRootCounts(this.store, id);
        resumed++;
      }
      await this.sweeps.deleteOne({ _id: id });
    }
    return resumed;
  }

  async remove(id: string, events: OutgoingEvent[]): Promise<boolean> {
    // Without transactions (a standalone server) a stop between the collection's delete and its bookmarks' left those
    // bookmarks for good: the marker, written first and dropped once they are gone, lets the next start finish them.
    await this.sweeps.updateOne({ _id: id }, { $setOnInsert: { at: new Date() } }, { upsert: true });
    const removed = await this.store.change(async (session) => {
      const keyed = await this.store.collections.findOne({ _id: id }, { session, projection: KEY_PROJECTION });
      if (keyed) await keepDeletedIdempotencyKey(this.store, 'collection', keyed, session);
      // The collection goes first, so no bookmark can be added to it afterwards; then its bookmarks. Only the removal
      // that deleted the document writes the events; a concurrent one reports the collection gone.
      const { deletedCount } = await this.store.collections.deleteOne({ _id: id }, { session });
      await this.store.bookmarks.deleteMany({ collectionId: id }, { session });
      if (deletedCount === 0) return false;
      await appendToMongoOutbox(this.store.db, events, session);
      return true;
    });
    // Once the removal is visible (committed, in a transaction), sweep again: see addBookmark's look after its write.
    await this.store.bookmarks.deleteMany({ collectionId: id });
    await dropRootCounts(this.store, id);
    await this.sweeps.deleteOne({ _id: id });
    return removed;
  }

  async addBookmark(collectionId: string, cardId: string, at: Date, events: OutgoingEvent[], options: BookmarkAdditionOptions = {}): Promise<BookmarkAddition> {
    const _id = bookmarkId(collectionId, cardId);
    let outcome: BookmarkAddition;
    let ord = 0;
    try {
      outcome = await this.store.change(async (session): Promise<BookmarkAddition> => {
        if (await this.store.bookmarks.findOne({ _id }, { session, projection: { _id: 1 } })) return 'already-there';
        // The counter's $inc also finds out whether the collection is still there (and, in a transaction, conflicts with its
        // removal). It comes before the card's check, so with both gone the collection is named, as on SQLite; a number
        // taken for a card that is gone only leaves a gap in the collection's order.
        const counter = await this.store.collections.findOneAndUpdate({ _id: collectionId }, { $inc: { bookmarkSeq: 1 } }, { session, returnDocument: 'after', projection: { bookmarkSeq: 1, authorId: 1 } });
        if (!counter) return 'collection-gone';
        const card = await this.store.cards.findOne({ _id: cardId }, { session, projection: { authorId: 1, private: 1 } });
        if (!card || (options.visibleToOwner && card.private && card.authorId !== counter.authorId)) return 'card-gone';
        ord = counter.bookmarkSeq;
        await this.store.bookmarks.insertOne({ _id, collectionId, cardId, ownerId: counter.authorId, ord, createdAt: at }, { session });
        await appendToMongoOutboxOrUndo(this.store.db, events, session, () => this.store.bookmarks.deleteOne({ _id }));
        return 'added';
      });
    } catch (err) {
      if (isDuplicateKeyError(err)) return 'already-there'; // added by a concurrent call: no events of ours
      // The bookmark may have been written and taken back, at an order not known here: counts are read whole again.
      await forgetRootCounts(this.store, [collectionId]);
      throw err;
    }
    if (outcome !== 'added') return outcome;
    // The group's first visible bookmark, for any viewer, is now this one or where it was. It was before only if it is
    // a later bookmark of an add that took its order after this one's and was stored first: between this order and the
    // counter as it is now (normally the same block).
    const now = (await this.store.collections.findOne({ _id: collectionId }, { projection: { bookmarkSeq: 1 } }))?.bookmarkSeq ?? ord;
    const blocks = new Map<string, Set<number>>();
    for (let block = Math.floor(ord / BOOKMARK_BLOCK); block <= Math.floor(now / BOOKMARK_BLOCK); block++) addBlock(blocks, collectionId, block * BOOKMARK_BLOCK);
    await markBlocks(this.store, blocks);
    return this.takenBackIfOrphaned(collectionId, cardId, options);
  }

  /**
   * A removal of the card or the collection running alongside may have swept their bookmarks before this one was
   * written (or committed). Looking again once it is written settles it: a removal either shows here, and the bookmark
   * goes, or it ends after this write and its own sweep (which runs after the document is gone: see remove, and
   * MongoCardRepository.remove) takes the bookmark. Its event is already stored then; search keeps a bookmark of a card
   * or collection that no longer exists, which no search reaches.
   */
  private async takenBackIfOrphaned(collectionId: string, cardId: string, options: BookmarkAdditionOptions): Promise<BookmarkAddition> {
    const [collection, card] = await Promise.all([
      this.store.collections.findOne({ _id: collectionId }, { projection: { authorId: 1 } }),
      this.store.cards.findOne({ _id: cardId }, { projection: { authorId: 1, private: 1 } }),
    ]);
    // Likewise a card made private by its author while the bookmark was written (neither write touches the other's
    // document, so no transaction orders them): seen public here, the change came after the bookmark, which it hides as
    // it hides every earlier bookmark of the card; seen private, the bookmark is taken back, as if it came after.
    const hidden = collection !== null && card !== null && options.visibleToOwner === true && card.private && card.authorId !== collection.authorId;
    if (collection && card && !hidden) return 'added';
    const gone = await this.store.bookmarks.findOneAndDelete({ _id: bookmarkId(collectionId, cardId) }, { projection: { ord: 1 } });
    if (gone && hidden && options.takenBackEvents?.length) await appendToMongoOutbox(this.store.db, options.takenBackEvents, undefined);
    const blocks = await blocksOfGroups(this.store, [cardId], collectionId);
    if (gone) addBlock(blocks, collectionId, gone.ord);
    await markBlocks(this.store, blocks);
    return collection ? 'card-gone' : 'collection-gone';
  }

  async removeEntry(collectionId: string, cardId: string, eventsOf: (cardId: string, addedAt: Date) => OutgoingEvent[]): Promise<string[]> {
    // The blocks of the entry's bookmarks, read before and after (also when it failed: some may have been put back).
    return changingGroups(this.store, () => [cardId], () => this.store.change(async (session) => {
        const collisions = await this.store.cards.find({ collisionOf: cardId }, { session, projection: { _id: 1 } }).toArray();
        const held = await this.store.bookmarks
          .find({ collectionId, cardId: { $in: [cardId, ...collisions.map((c) => c._id)] } }, { session, projection: { cardId: 1 } })
          .sort({ ord: 1 })
          .toArray();
        const removed: string[] = [];
        for (const { _id, cardId: heldId } of held) {
          // Only the call that deleted a bookmark stores its events; a concurrent removal may have taken it since the find.
          const gone = await this.store.bookmarks.findOneAndDelete({ _id }, { session });
          if (!gone) continue;
          await appendToMongoOutboxOrUndo(this.store.db, eventsOf(heldId, gone.createdAt), session, () => this.store.bookmarks.insertOne(gone));
          removed.push(heldId);
        }
        return removed;
      }), collectionId);
  }

  /**
   * Starts at the block (of bookmark orders) holding the first visible bookmark of root `offset` (keptRoots) and reads
   * the bookmarks in their order from there (bookmarks_order), a batch at a time with their cards, keeping the first
   * visible bookmark of each group: a group seen before the start (an earlier visible bookmark of it) is left out. So a
   * page reads at most about BOOKMARK_BLOCK + limit roots wherever it is, and a page past the end none. (Grouping every
   * bookmark, then sorting the groups, read and sorted the whole collection for each page.) Orders are distinct in a
   * collection (a counter).
   */
  async listVisibleBookmarkedRoots(collectionId: string, viewerId: string | null, offset: number, limit: number): Promise<string[]> {
    if (limit <= 0) return [];
    const { n, blocks } = await this.keptRoots(collectionId, viewerId);
    if (offset >= n) return [];
    const { block, before } = blockHolding(blocks, offset);
    const wanted = offset - before + limit;
    return (await this.rootsFrom(collectionId, viewerId, block * BOOKMARK_BLOCK, Infinity, wanted)).slice(wanted - limit);
  }

  /** Up to `wanted` roots whose first visible bookmark has an order in [fromOrd, toOrd), in that order. */
  private async rootsFrom(collectionId: string, viewerId: string | null, fromOrd: number, toOrd: number, wanted: number): Promise<string[]> {
    const visible = (card: { private: boolean; authorId: string }) => !card.private || card.authorId === viewerId;
    const roots: string[] = [];
    const seen = new Set<string>();
    // Some to spare for collisions and cards the viewer may not see, so a page usually takes one read.
    const batch = Math.min(Math.ceil(wanted * 1.5) + 10, 1000);
    const below = toOrd === Infinity ? {} : { $lt: toOrd };
    let position: Filter<BookmarkDocument> = { ord: { $gte: fromOrd, ...below } };
    while (roots.length < wanted) {
      const marks = await this.store.bookmarks.find({ collectionId, ...position }, { projection: { cardId: 1, ord: 1 } }).sort({ ord: 1 }).limit(batch).toArray();
      if (marks.length === 0) break;
      const cards = await this.store.cards.find({ _id: { $in: marks.map((m) => m.cardId) } }, { projection: { private: 1, authorId: 1, collisionOf: 1 } }).toArray();
      const rootOf = new Map(cards.filter(visible).map((c) => [c._id, c.collisionOf ?? c._id]));
      const fresh = [...new Set([...rootOf.values()].filter((root) => !seen.has(root)))];
      const before = fromOrd < BOOKMARK_BLOCK ? new Set<string>() : await this.rootsBookmarkedBefore(collectionId, fresh, fromOrd, visible);
      for (const mark of marks) {
        const root = rootOf.get(mark.cardId);
        if (root === undefined || seen.has(root)) continue;
        seen.add(root);
        if (before.has(root)) continue;
        roots.push(root);
        if (roots.length === wanted) break;
      }
      if (marks.length < batch) break;
      position = { ord: { $gt: marks[marks.length - 1]!.ord, ...below } };
    }
    return roots;
  }

  async countVisibleBookmarkedRoots(collectionId: string, viewerId: string | null): Promise<number> {
    return (await this.keptRoots(collectionId, viewerId)).n;
  }

  /** Of these roots, those whose group (the root, or a collision of it) has a bookmark the viewer may see before `ord`. */
  private async rootsBookmarkedBefore(collectionId: string, roots: string[], ord: number, visible: (card: { private: boolean; authorId: string }) => boolean): Promise<Set<string>> {
    if (roots.length === 0) return new Set();
    const members = await this.store.cards
      .find({ $or: [{ _id: { $in: roots } }, { collisionOf: { $in: roots } }] }, { projection: { private: 1, authorId: 1, collisionOf: 1 } })
      .toArray();
    const rootOf = new Map(members.filter(visible).map((c) => [c._id, c.collisionOf ?? c._id]));
    if (rootOf.size === 0) return new Set();
    const earlier = await this.store.bookmarks.find({ collectionId, cardId: { $in: [...rootOf.keys()] }, ord: { $lt: ord } }, { projection: { cardId: 1 } }).toArray();
    return new Set(earlier.map((b) => rootOf.get(b.cardId)!));
  }

  /**
   * The viewer's count per block of bookmark orders: read by one grouping of the collection once per viewer, then
   * kept and mended after a change by counting again the blocks it marked (mongo-bookmark-root-counts).
   */
  private keptRoots(collectionId: string, viewerId: string | null): Promise<KeptRoots> {
    return keptRoots(
      this.store,
      collectionId,
      viewerId,
      async () => {
        const firsts = await this.store.bookmarks
          .aggregate<{ first: number }>([...visibleBookmarkedRootsPipeline(collectionId, viewerId), { $project: { _id: 0, first: 1 } }])
          .toArray();
        return firsts.map((r) => r.first);
      },
      async (block) => (await this.rootsFrom(collectionId, viewerId, block * BOOKMARK_BLOCK, (block + 1) * BOOKMARK_BLOCK, Infinity)).length,
    );
  }

  async bookmarkedCardIds(collectionId: string): Promise<string[]> {
    const docs = await this.store.bookmarks.find({ collectionId }, { projection: { cardId: 1 } }).sort({ ord: 1 }).toArray();
    return docs.map((d) => d.cardId);
  }

  async listByAuthor(authorId: string, includePrivate: boolean): Promise<Collection[]> {
    const docs = await this.store.collections.find(includePrivate ? { authorId } : { authorId, isPublic: true }).sort({ createdAt: -1, _id: 1 }).toArray();
    return docs.map(fromCollectionDocument);
  }

  async listPageByAuthor(authorId: string, includePrivate: boolean, limit: number, after?: string): Promise<Page<Collection>> {
    let filter: Filter<CollectionDocument> = includePrivate ? { authorId } : { authorId, isPublic: true };
    if (after !== undefined) {
      const { createdAt, id } = creationCursor.parse(after);
      // The $lte bound lets the collections_author index narrow the scan; the $or is the exact (createdAt desc, _id asc) position after the cursor.
      filter = { ...filter, createdAt: { $lte: createdAt }, $or: [{ createdAt: { $lt: createdAt } }, { _id: { $gt: id } }] };
    }
    const docs = await this.store.collections.find(filter).sort({ createdAt: -1, _id: 1 }).limit(limit + 1).toArray();
    return pageOfRows(docs.map(fromCollectionDocument), limit, creationCursor.after);
  }

  async collectionsOfOwnerHolding(ownerId: string, cardIds: readonly string[]): Promise<HeldCard[]> {
    const unique = [...new Set(cardIds)];
    if (unique.length === 0) return [];
    // Only the owner's bookmarks of these cards (bookmarks_card_owner), then their collections by _id for the order:
    // neither all of the owner's collections nor all users' bookmarks of the cards. A bookmark without an owner was
    // written by an older replica during a rolling upgrade, and keeps none once the start-time backfill is recorded as
    // done: read too, and kept only if its collection is the owner's.
    const rows = await this.store.bookmarks
      .find({ cardId: { $in: unique }, $or: [{ ownerId }, { ownerId: { $exists: false } }] }, { projection: { cardId: 1, collectionId: 1 } })
      .toArray();
    if (rows.length === 0) return [];
    const owned = await this.store.collections
      .find({ _id: { $in: [...new Set(rows.map((r) => r.collectionId))] }, authorId: ownerId }, { projection: { _id: 1 } })
      .sort({ createdAt: 1, _id: 1 })
      .toArray();
    const rank = new Map(owned.map((c, i) => [c._id, i]));
    return rows
      .filter((r) => rank.has(r.collectionId))
      .sort((a, b) => rank.get(a.collectionId)! - rank.get(b.collectionId)!)
      .map((r) => ({ cardId: r.cardId, collectionId: r.collectionId }));
  }

  async collectionIdsHolding(cardId: string): Promise<string[]> {
    const docs = await this.store.bookmarks.find({ cardId }, { projection: { collectionId: 1 } }).sort({ collectionId: 1 }).toArray();
    return docs.map((d) => d.collectionId);
  }

  /** In `_id` order (collection id, then card id); the cursor is the last bookmark's `_id`. */
  async pageFileCollections(limit: number, after?: string): Promise<Page<Collection>> {
    const filter: Filter<CollectionDocument> = after === undefined ? { fileId: { $type: 'string' } } : { fileId: { $type: 'string' }, _id: { $gt: after } };
    const docs = await this.store.collections.find(filter).sort({ _id: 1 }).limit(limit + 1).toArray();
    return pageOfRows(docs.map(fromCollectionDocument), limit, (last) => last.id);
  }

  async pageBookmarks(limit: number, after?: string): Promise<Page<StoredBookmark>> {
    const docs = await this.store.bookmarks
      .find(after === undefined ? {} : { _id: { $gt: after } }, { projection: { collectionId: 1, cardId: 1, createdAt: 1 } })
      .sort({ _id: 1 })
      .limit(limit + 1)
      .toArray();
    const bookmarks = docs.map((d) => ({ collectionId: d.collectionId, cardId: d.cardId, createdAt: d.createdAt }));
    return pageOfRows(bookmarks, limit, (last) => bookmarkId(last.collectionId, last.cardId));
  }
}
