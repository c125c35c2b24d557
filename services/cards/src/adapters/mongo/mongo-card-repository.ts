import { AlreadyExistsError, appendToMongoOutbox, appendToMongoOutboxOrUndo, creationCursor, isDuplicateKeyError, pageOfRows, type OutgoingEvent, type Page } from '@cards/platform';
import type { ClientSession, Filter } from 'mongodb';
import type { Card, CardFingerprint, CollisionMove, DeletedIdempotencyKey } from '../../domain/model';
import { StaleCardError, type AppliedFileChange, type CardRepository, type CardUpdateOptions, type MovedCardEvents } from '../../domain/ports';
import { changingGroups } from './mongo-bookmark-root-counts';
import {
  CARD_PROJECTION,
  findDeletedIdempotencyKey,
  fromCardDocument,
  idempotencyOf,
  keepDeletedIdempotencyKey,
  KEY_PROJECTION,
  movePublicVotes,
  toCardDocument,
  type CardDocument,
  type MongoCardsDatabase,
} from './mongo-cards-database';

/**
 * Cards in the cards service's MongoDB database (collection `cards`; the fingerprint is stored in the card document,
 * the sketch as a multikey-indexed array). On a replica set each write and its events commit in one transaction.
 * On a standalone server the state change is written first and the events right after it; a failed event write
 * undoes the change where it can (insert, update) — see docs/engines.md for what a crash in between leaves.
 */
export class MongoCardRepository implements CardRepository {
  constructor(private readonly store: MongoCardsDatabase) {}

  async findById(id: string): Promise<Card | null> {
    const doc = await this.store.cards.findOne({ _id: id }, { projection: CARD_PROJECTION });
    return doc ? fromCardDocument(doc) : null;
  }

  async findByIds(ids: readonly string[]): Promise<Card[]> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return [];
    const docs = await this.store.cards.find({ _id: { $in: unique } }, { projection: CARD_PROJECTION }).toArray();
    return docs.map(fromCardDocument);
  }

  async findByIdempotencyKey(authorId: string, key: string): Promise<Card | null> {
    const doc = await this.store.cards.findOne({ idempotency: idempotencyOf(authorId, key) }, { projection: CARD_PROJECTION });
    return doc ? fromCardDocument(doc) : null;
  }

  async findDeletedIdempotencyKey(authorId: string, key: string): Promise<DeletedIdempotencyKey | null> {
    return findDeletedIdempotencyKey(this.store, 'card', authorId, key);
  }

  async findByContentHash(contentHash: string, limit: number): Promise<Card[]> {
    const docs = await this.store.cards.find({ contentHash }, { projection: CARD_PROJECTION }).sort({ createdAt: 1, _id: 1 }).limit(limit).toArray();
    return docs.map(fromCardDocument);
  }

  async findBySketch(sketch: readonly number[], minShared: number, limit: number): Promise<Card[]> {
    const values = [...new Set(sketch)];
    if (values.length === 0 || limit <= 0) return [];
    const ranked = await this.store.cards
      .aggregate<{ _id: string; shared: number }>([
        { $match: { sketch: { $in: values } } },
        { $project: { createdAt: 1, shared: { $size: { $setIntersection: ['$sketch', values] } } } },
        { $match: { shared: { $gte: minShared } } },
        { $sort: { shared: -1, createdAt: 1, _id: 1 } },
        { $limit: limit },
        { $project: { _id: 1, shared: 1 } },
      ])
      .toArray();
    const byId = new Map((await this.findByIds(ranked.map((r) => r._id))).map((c) => [c.id, c]));
    return ranked.flatMap((r) => byId.get(r._id) ?? []);
  }

  async findUnindexedRoots(viewerId: string, since: Date, limit: number): Promise<Card[]> {
    const docs = await this.store.cards
      .find({ vectorPointId: null, collisionOf: null, updatedAt: { $gte: since }, $or: [{ private: false }, { authorId: viewerId }] }, { projection: CARD_PROJECTION })
      .sort({ updatedAt: -1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map(fromCardDocument);
  }

  async findRootsCreatedSince(viewerId: string | null, since: Date, limit: number, until?: Date): Promise<Card[]> {
    const visible = viewerId === null ? {} : { $or: [{ private: false }, { authorId: viewerId }] };
    const createdAt = until ? { $gte: since, $lte: until } : { $gte: since };
    const docs = await this.store.cards
      .find({ collisionOf: null, createdAt, ...visible }, { projection: CARD_PROJECTION })
      .sort({ createdAt: -1, _id: 1 })
      .limit(limit)
      .toArray();
    return docs.map(fromCardDocument);
  }

  async findCollisions(rootIds: readonly string[]): Promise<Card[]> {
    const unique = [...new Set(rootIds)];
    if (unique.length === 0) return [];
    const docs = await this.store.cards.find({ collisionOf: { $in: unique } }, { projection: CARD_PROJECTION }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(fromCardDocument);
  }

  async findCollisionsPage(rootIds: readonly string[], limit: number, after?: string): Promise<Page<Card>> {
    let filter: Filter<CardDocument> = { collisionOf: { $in: [...new Set(rootIds)] } };
    if (after !== undefined) {
      const { createdAt, id } = creationCursor.parse(after);
      // The $gte bound narrows the scan; the $or is the exact (createdAt, _id) position after the cursor.
      filter = { ...filter, createdAt: { $gte: createdAt }, $or: [{ createdAt: { $gt: createdAt } }, { _id: { $gt: id } }] };
    }
    const docs = await this.store.cards.find(filter, { projection: CARD_PROJECTION }).sort({ createdAt: 1, _id: 1 }).limit(limit + 1).toArray();
    return pageOfRows(docs.map(fromCardDocument), limit, creationCursor.after);
  }

  async findByFile(fileId: string): Promise<Card[]> {
    const docs = await this.store.cards.find({ fileId }, { projection: CARD_PROJECTION }).sort({ createdAt: 1, _id: 1 }).toArray();
    return docs.map(fromCardDocument);
  }

  async insert(card: Card, fingerprint: CardFingerprint, events: OutgoingEvent[]): Promise<void> {
    const doc: CardDocument = { ...toCardDocument(card, fingerprint.contentHash, fingerprint.sketch), lookAgainOwed: true };
    try {
      await this.store.change(async (session) => {
        await this.store.cards.insertOne(doc, { session });
        await appendToMongoOutboxOrUndo(this.store.db, events, session, () => this.store.cards.deleteOne({ _id: card.id }));
      });
    } catch (err) {
      if (isDuplicateKeyError(err, 'idempotency')) throw new AlreadyExistsError('A card with this idempotency key already exists');
      throw err;
    }
  }

  async findWithLookAgainOwed(cardId: string): Promise<Card | null> {
    const doc = await this.store.cards.findOne({ _id: cardId, lookAgainOwed: true }, { projection: CARD_PROJECTION });
    return doc ? fromCardDocument(doc) : null;
  }

  async findCollisionsWithLookAgainOwed(limit: number): Promise<Card[]> {
    const docs = await this.store.cards.find({ lookAgainOwed: true, collisionOf: { $ne: null } }, { projection: CARD_PROJECTION }).sort({ createdAt: 1, _id: 1 }).limit(limit).toArray();
    return docs.map(fromCardDocument);
  }

  async clearLookAgainOwed(cardId: string): Promise<void> {
    await this.store.cards.updateOne({ _id: cardId, lookAgainOwed: true }, { $unset: { lookAgainOwed: '' } });
  }

  async update(card: Card, fingerprint: CardFingerprint | null, events: OutgoingEvent[], { moves = [], ifUpdatedAt, becomesRoot = false, clearVerification = false }: CardUpdateOptions = {}): Promise<void> {
    await this.changingCards(() => [card.id, ...moves.map((m) => m.cardId)], () => this.store.change(async (session) => {
      const set: Partial<CardDocument> = {
        content: card.content,
        cardHtml: card.cardHtml,
        link: card.link,
        private: card.private,
        hiddenByFile: card.hiddenByFile,
        tags: [...card.tags],
        updatedAt: card.updatedAt,
      };
      if (fingerprint) {
        set.contentHash = fingerprint.contentHash;
        set.sketch = [...new Set(fingerprint.sketch)];
      }
      if (becomesRoot) {
        set.collisionOf = null;
        set.vectorPointId = null;
      }
      if (clearVerification) {
        set.verificationScore = null;
        set.verifiedAt = null;
      }
      // The image before the change carries the privacy and vote totals of that very moment (one atomic step), so the
      // totals moved into or out of the author's public counters are exactly the ones votes had added until then.
      const filter = ifUpdatedAt ? { _id: card.id, updatedAt: ifUpdatedAt } : { _id: card.id };
      const previous = await this.store.cards.findOneAndUpdate(filter, { $set: set }, { session, returnDocument: 'before' });
      if (!previous && ifUpdatedAt) throw new StaleCardError(card.id);
      if (previous) await movePublicVotes(this.store, previous, card.private, session);
      await this.applyMoves(card.id, moves, session);
      await appendToMongoOutboxOrUndo(this.store.db, events, session, async () => {
        if (!previous) return;
        for (const move of moves) await this.store.cards.updateOne({ _id: move.cardId, collisionOf: move.collisionOf }, { $set: { collisionOf: card.id } });
        const undo: Partial<CardDocument> = {};
        for (const key of Object.keys(set) as (keyof CardDocument)[]) (undo as Record<string, unknown>)[key] = previous[key];
        const undone = await this.store.cards.findOneAndUpdate({ _id: card.id, updatedAt: card.updatedAt }, { $set: undo }, { returnDocument: 'before' });
        if (undone) await movePublicVotes(this.store, undone, previous.private, undefined);
      });
    }));
  }

  async remove(cardId: string, moves: readonly CollisionMove[], events: OutgoingEvent[]): Promise<boolean> {
    // The card's bookmarks go with it: the blocks of its group's bookmarks are read before.
    return changingGroups(this.store, () => [cardId, ...moves.map((m) => m.cardId)], () => this.removeNow(cardId, moves, events));
  }

  private async removeNow(cardId: string, moves: readonly CollisionMove[], events: OutgoingEvent[]): Promise<boolean> {
    const removed = await this.store.change(async (session) => {
      const keyed = await this.store.cards.findOne({ _id: cardId }, { session, projection: KEY_PROJECTION });
      if (keyed) await keepDeletedIdempotencyKey(this.store, 'card', keyed, session);
      // The card goes first: votes cast from here on find no card (see MongoVoteRepository.upsert). Only the removal
      // that takes the document does the rest; a concurrent one finds nothing and reports the card gone.
      const card = await this.store.cards.findOneAndDelete({ _id: cardId }, { session, projection: { authorId: 1, private: 1, totalUpvotes: 1, totalDownvotes: 1 } });
      if (!card) return false;
      // The public counters lose the totals the card held when it went (votes reaching it later find no card and add none).
      if (!card.private) await movePublicVotes(this.store, card, true, session);
      // Each vote is taken out by exactly one party (this removal or the voter's own removal), which subtracts it.
      let up = 0;
      let down = 0;
      const votes = await this.store.votes.find({ cardId }, { session, projection: { _id: 1 } }).toArray();
      for (const v of votes) {
        const removed = await this.store.votes.findOneAndDelete({ _id: v._id }, { session });
        if (!removed) continue;
        if (removed.value) up++;
        else down++;
      }
      if (up + down > 0) {
        await this.store.authorScores.updateOne({ _id: card.authorId }, { $inc: { upvotes: -up, downvotes: -down } }, { session });
      }
      await this.store.bookmarks.deleteMany({ cardId }, { session });
      await this.applyMoves(cardId, moves, session);
      await appendToMongoOutbox(this.store.db, events, session);
      return true;
    });
    // Once the removal is visible (committed, in a transaction), sweep again: see MongoCollectionRepository.addBookmark.
    await this.store.bookmarks.deleteMany({ cardId });
    return removed;
  }

  async detachCollision(cardId: string, rootId: string, events: OutgoingEvent[]): Promise<boolean> {
    return this.changingCards(() => [cardId], () => this.store.change(async (session) => {
      const changed = await this.store.cards.updateOne({ _id: cardId, collisionOf: rootId }, { $set: { collisionOf: null, vectorPointId: null } }, { session });
      if (changed.modifiedCount === 0) return false;
      await appendToMongoOutboxOrUndo(this.store.db, events, session, () => this.store.cards.updateOne({ _id: cardId, collisionOf: null }, { $set: { collisionOf: rootId } }));
      return true;
    }));
  }

  async joinRoot(cardId: string, rootId: string, ifUpdatedAt: Date, at: Date, eventsOf: MovedCardEvents): Promise<boolean> {
    if (cardId === rootId) return false;
    return this.changingCards(() => this.withCollisions([cardId, rootId]), () => this.store.change(async (session) => {
      if (!(await this.store.cards.findOne({ _id: rootId, collisionOf: null }, { session, projection: { _id: 1 } }))) return false;
      const joined = await this.store.cards.findOneAndUpdate(
        { _id: cardId, collisionOf: null, updatedAt: ifUpdatedAt },
        { $set: { collisionOf: rootId, vectorPointId: null, updatedAt: at } },
        { session, returnDocument: 'after', projection: CARD_PROJECTION },
      );
      if (!joined) return false;
      // Without a transaction: the card is a collision before its collisions are read, so one stored later under it finds
      // it a collision when it checks its root after its insert, and follows it itself (CardService.createCard).
      const moved = await this.moveCollisionsNow(cardId, rootId, session);
      const events = await this.eventsOfMoved([fromCardDocument(joined), ...moved], eventsOf, session);
      await appendToMongoOutboxOrUndo(this.store.db, events, session, async () => {
        for (const card of moved) await this.store.cards.updateOne({ _id: card.id, collisionOf: rootId }, { $set: { collisionOf: cardId } });
        await this.store.cards.updateOne({ _id: cardId, collisionOf: rootId, updatedAt: at }, { $set: { collisionOf: null, updatedAt: ifUpdatedAt } });
      });
      return true;
    }));
  }

  async moveCollisions(fromRootId: string, toRootId: string, eventsOf: MovedCardEvents): Promise<number> {
    return this.changingCards(() => this.withCollisions([fromRootId, toRootId]), () => this.store.change(async (session) => {
      const moved = await this.moveCollisionsNow(fromRootId, toRootId, session);
      await appendToMongoOutbox(this.store.db, await this.eventsOfMoved(moved, eventsOf, session), session);
      return moved.length;
    }));
  }

  async listByAuthor(authorId: string, includePrivate: boolean, offset: number, limit: number): Promise<Card[]> {
    const filter = includePrivate ? { authorId } : { authorId, private: false };
    const docs = await this.store.cards.find(filter, { projection: CARD_PROJECTION }).sort({ updatedAt: -1, _id: 1 }).skip(offset).limit(limit).toArray();
    return docs.map(fromCardDocument);
  }

  async countByAuthor(authorId: string, includePrivate: boolean): Promise<number> {
    return this.store.cards.countDocuments(includePrivate ? { authorId } : { authorId, private: false });
  }

  /**
   * Every card, private ones and collisions included (the spec's total_count): every document of the collection, since
   * a removed card's document is deleted. Read from the collection's metadata (the count command without a filter),
   * not by walking every document as countDocuments({}) does.
   */
  async count(): Promise<number> {
    return this.store.cards.estimatedDocumentCount();
  }

  async pageAll(limit: number, after?: string): Promise<Page<Card>> {
    const docs = await this.store.cards.find(after === undefined ? {} : { _id: { $gt: after } }, { projection: CARD_PROJECTION }).sort({ _id: 1 }).limit(limit + 1).toArray();
    return pageOfRows(docs.map(fromCardDocument), limit, (last) => last.id);
  }

  async setVectorPointId(cardId: string, vectorPointId: string): Promise<boolean> {
    const result = await this.store.cards.updateOne({ _id: cardId, collisionOf: null, vectorPointId: { $ne: vectorPointId } }, { $set: { vectorPointId } });
    return result.modifiedCount > 0;
  }

  async setVerification(cardId: string, score: number, at: Date, link: string, events: readonly OutgoingEvent[] = [], content?: string): Promise<boolean> {
    return this.store.change(async (session) => {
      const before = await this.store.cards.findOneAndUpdate(
        { _id: cardId, $or: [{ verifiedAt: null }, { verifiedAt: { $lte: at } }], ...(link ? { link } : {}), ...(content !== undefined ? { content } : {}) },
        { $set: { verificationScore: score, verifiedAt: at } },
        { session, returnDocument: 'before', projection: { verificationScore: 1, verifiedAt: 1 } },
      );
      if (!before) return false;
      // Without a transaction, a result whose announcement could not be stored is taken back (unless a newer one came).
      await appendToMongoOutboxOrUndo(this.store.db, events, session, () =>
        this.store.cards.updateOne({ _id: cardId, verifiedAt: at, verificationScore: score }, { $set: { verificationScore: before.verificationScore ?? null, verifiedAt: before.verifiedAt ?? null } }),
      );
      return true;
    });
  }

  async noteFileChange(fileId: string, change: AppliedFileChange): Promise<void> {
    // A deletion stays noted: a privacy change noted after it (a late event) leaves deleted as it is.
    const set = { private: change.private, ownerId: change.ownerId, at: change.at };
    const update = change.deleted ? { $set: { ...set, deleted: true } } : { $set: set, $setOnInsert: { deleted: false } };
    await this.store.appliedFileChanges.updateOne({ _id: fileId }, update, { upsert: true });
  }

  async fileChangeSince(fileId: string, since: Date): Promise<AppliedFileChange | null> {
    const doc = await this.store.appliedFileChanges.findOne({ _id: fileId, at: { $gte: since } });
    return doc ? { deleted: doc.deleted, private: doc.private, ownerId: doc.ownerId, at: doc.at } : null;
  }

  async setFilePrivacy(fileId: string, isPrivate: boolean): Promise<void> {
    await this.store.cards.updateMany({ fileId, filePrivate: { $ne: isPrivate } }, { $set: { filePrivate: isPrivate } });
  }

  async clearFileReferenceOf(cardId: string, fileId: string): Promise<void> {
    await this.store.cards.updateOne({ _id: cardId, fileId }, { $set: { fileId: null, fileName: null } });
  }

  async clearFileReferences(fileId: string, exceptAuthorId?: string): Promise<void> {
    if (exceptAuthorId !== undefined) {
      await this.store.cards.updateMany({ fileId, authorId: { $ne: exceptAuthorId } }, { $set: { fileId: null, fileName: null } });
      return;
    }
    await this.store.change(async (session) => {
      await this.store.cards.updateMany({ fileId }, { $set: { fileId: null, fileName: null } }, { session });
      await this.store.collections.updateMany({ fileId }, { $unset: { fileId: '' } }, { session });
    });
  }

  /**
   * Runs a change that may alter these cards' privacy or roots, then marks the blocks of the bookmarks of their groups,
   * read before and after it, as changed in the kept collection counts (mongo-bookmark-root-counts); also when it
   * failed, as it may have been undone halfway.
   */
  private changingCards<T>(cardIds: () => string[] | Promise<string[]>, work: () => Promise<T>): Promise<T> {
    return changingGroups(this.store, cardIds, work);
  }

  /** These cards and their collisions. */
  private async withCollisions(rootIds: string[]): Promise<string[]> {
    const collisions = await this.store.cards.find({ collisionOf: { $in: rootIds } }, { projection: { _id: 1 } }).toArray();
    return [...rootIds, ...collisions.map((c) => c._id)];
  }

  /** The collisions of fromRootId go under toRootId, each by a step that moves it only if it still is one; answers the cards moved. */
  private async moveCollisionsNow(fromRootId: string, toRootId: string, session: ClientSession | undefined): Promise<Card[]> {
    const moved: Card[] = [];
    for (const doc of await this.store.cards.find({ collisionOf: fromRootId }, { session, projection: { _id: 1 } }).sort({ createdAt: 1, _id: 1 }).toArray()) {
      const after = await this.store.cards.findOneAndUpdate({ _id: doc._id, collisionOf: fromRootId }, { $set: { collisionOf: toRootId } }, { session, returnDocument: 'after', projection: CARD_PROJECTION });
      if (after) moved.push(fromCardDocument(after));
    }
    return moved;
  }

  private async eventsOfMoved(cards: readonly Card[], eventsOf: MovedCardEvents, session: ClientSession | undefined) {
    const events = [];
    for (const card of cards) {
      const held = await this.store.bookmarks.find({ cardId: card.id }, { session, projection: { collectionId: 1 } }).sort({ collectionId: 1 }).toArray();
      events.push(...eventsOf(card, held.map((b) => b.collectionId)));
    }
    return events;
  }

  /** Collisions of `rootId` leave it: to another root, or (collisionOf null) as roots of their own. */
  private async applyMoves(rootId: string, moves: readonly CollisionMove[], session: ClientSession | undefined): Promise<void> {
    for (const move of moves) {
      const moved = move.collisionOf === null ? { collisionOf: null, vectorPointId: null } : { collisionOf: move.collisionOf };
      await this.store.cards.updateOne({ _id: move.cardId, collisionOf: rootId }, { $set: moved }, { session });
    }
  }
}
