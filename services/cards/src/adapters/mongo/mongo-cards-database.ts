import { keptKeyExpiry, keptKeysExpiredAt, removeExpiredKeptKeys, withOptionalTransaction, type KeptKeyExpiry, type MongoConnection } from '@cards/platform';
import type { ClientSession, Collection, Db, Document } from 'mongodb';
import type { Card, CardFingerprint, Collection as CardCollection, DeletedIdempotencyKey } from '../../domain/model';
import { APPLIED_FILE_CHANGES_KEPT_MS } from '../../domain/ports';
import type { ContentLockDocument } from './mongo-content-lock';
import { runStartMigrations, type MigrationDocument } from './mongo-start-migrations';

/** A card; `_id` is the card id. The fingerprint lives beside the card's fields. */
export type CardDocument = Omit<Card, 'id'> &
  CardFingerprint & {
    _id: string;
    /**
     * `<authorId>\n<idempotencyKey>`, present only when the card has a key: the sparse unique index on it
     * makes (author, key) unique without partial indexes.
     */
    idempotency?: string;
    /** Present (true) only while the card owes its look-again after its insert; missing: owes none (older cards too). */
    lookAgainOwed?: true;
  };

/** One vote per (userId, cardId), enforced by a unique index. */
export interface VoteDocument {
  _id: string;
  userId: string;
  cardId: string;
  /** The card's author (never changes): whoever takes the vote out can correct the author's counters even after the card is gone. */
  cardAuthorId: string;
  value: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Received-vote counters of an author (`_id` = user id), changed only with `$inc`: over all their cards (seen by the
 * author) and over their public cards (seen by everyone else, and the ranking).
 */
export interface AuthorScoreDocument {
  _id: string;
  upvotes: number;
  downvotes: number;
  publicUpvotes: number;
  publicDownvotes: number;
  /** publicUpvotes - publicDownvotes, kept by the same `$inc` so the ranking can use an index. */
  publicScore: number;
  /** publicUpvotes + publicDownvotes: ranked when > 0. */
  publicVotes: number;
  joinedAt: Date | null;
  /** true until the join date is known: unknown dates rank after known ones (null would sort first). */
  joinUnknown: boolean;
}

export interface CollectionDocument {
  _id: string;
  authorId: string;
  name: string;
  description: string;
  isPublic: boolean;
  /** Present only when the collection belongs to a file (sparse unique index: one collection per file). */
  fileId?: string;
  /** The client's key of its create, present only when there was one; `idempotency` as on cards (sparse unique). */
  idempotencyKey?: string;
  idempotency?: string;
  /** The fingerprint of the request that carried the key, present only when there was one. */
  requestFingerprint?: string;
  createdAt: Date;
  updatedAt: Date;
  /**
   * Last bookmark order number handed out (`$inc`), so concurrent bookmarks get distinct, increasing orders. Every
   * collection is stored with 0 (toCollectionDocument), and `$inc` would create it anyway.
   */
  bookmarkSeq: number;
}

/** `_id` = `<collectionId>:<cardId>`: a card is bookmarked at most once per collection. */
export interface BookmarkDocument {
  _id: string;
  collectionId: string;
  cardId: string;
  /**
   * The collection's owner (a collection never changes owner), so the bookmark lookup finds only the caller's
   * bookmarks of a card (bookmarks_card_owner). Bookmarks written before it existed lack it until the store next
   * opens; so may those an older replica writes during a rolling upgrade, for good once the backfill is recorded as done
   * (the lookup reads a card's ownerless bookmarks too).
   */
  ownerId?: string;
  ord: number;
  createdAt: Date;
}

/** A file change applied to its cards lately (CardRepository.noteFileChange); `_id` = the file id. Expires by a TTL index on `at`. */
export interface AppliedFileChangeDocument {
  _id: string;
  deleted: boolean;
  private: boolean;
  ownerId: string;
  at: Date;
}

/** The kept key of a deleted resource; `_id` = `<kind>\n<authorId>\n<key>` (kind: 'card' or 'collection'). */
export interface DeletedIdempotencyKeyDocument {
  _id: string;
  requestFingerprint: string | null;
  deletedAt: Date;
}

/** The cards service's MongoDB database: its collections, and how to run a multi-document change. */
export interface MongoCardsDatabase {
  connection: MongoConnection;
  db: Db;
  cards: Collection<CardDocument>;
  votes: Collection<VoteDocument>;
  authorScores: Collection<AuthorScoreDocument>;
  collections: Collection<CollectionDocument>;
  bookmarks: Collection<BookmarkDocument>;
  contentLocks: Collection<ContentLockDocument>;
  deletedIdempotencyKeys: Collection<DeletedIdempotencyKeyDocument>;
  appliedFileChanges: Collection<AppliedFileChangeDocument>;
  /** How long the keys of deleted resources are kept (IDEMPOTENCY_KEY_TTL_HOURS), and by which clock. */
  keyExpiry: KeptKeyExpiry;
  /** The start-time migrations of older documents this database no longer needs. */
  migrations: Collection<MigrationDocument>;
  /** A transaction on a replica set; otherwise `work` runs with no session (its steps are ordered to stay safe). */
  change<T>(work: (session: ClientSession | undefined) => Promise<T>): Promise<T>;
}

/**
 * Opens the collections, creates the indexes that enforce the store's rules and serve its reads, drops those it no
 * longer uses, and migrates older documents until that is recorded as done (idempotent; replicas may open at once).
 */
export async function openMongoCardsDatabase(connection: MongoConnection, keyExpiry: KeptKeyExpiry = keptKeyExpiry()): Promise<MongoCardsDatabase> {
  const { db } = connection;
  const cards = db.collection<CardDocument>('cards');
  const votes = db.collection<VoteDocument>('votes');
  const authorScores = db.collection<AuthorScoreDocument>('author_scores');
  const collections = db.collection<CollectionDocument>('collections');
  const bookmarks = db.collection<BookmarkDocument>('bookmarks');
  const contentLocks = db.collection<ContentLockDocument>('content_locks');
  const migrations = db.collection<MigrationDocument>('migrations');
  const deletedIdempotencyKeys = db.collection<DeletedIdempotencyKeyDocument>('deleted_idempotency_keys');
  const appliedFileChanges = db.collection<AppliedFileChangeDocument>('applied_file_changes');
  await Promise.all([
    appliedFileChanges.createIndex({ at: 1 }, { expireAfterSeconds: APPLIED_FILE_CHANGES_KEPT_MS / 1000, name: 'applied_file_changes_expiry' }),
    cards.createIndex({ idempotency: 1 }, { unique: true, sparse: true, name: 'cards_idempotency' }),
    cards.createIndex({ authorId: 1, updatedAt: -1, _id: 1 }, { name: 'cards_author_updated' }),
    // A user's cards page for anyone but its owner ({authorId, private: false}, newest change first) and its count: read
    // from the index alone (skip and count over index keys), not from every card document of the author to test private.
    cards.createIndex({ authorId: 1, private: 1, updatedAt: -1, _id: 1 }, { name: 'cards_author_visibility' }),
    cards.createIndex({ contentHash: 1, createdAt: 1 }, { name: 'cards_content_hash' }),
    // A root's collisions in their order (findCollisions, findCollisionsPage sort by createdAt then _id): a page of a
    // card's collisions is read from the index in order, not all of them sorted in memory. It serves every read by
    // collisionOf that cards_collision_of served (dropped below).
    cards.createIndex({ collisionOf: 1, createdAt: 1, _id: 1 }, { name: 'cards_collisions_order' }),
    cards.createIndex({ fileId: 1 }, { name: 'cards_file' }),
    cards.createIndex({ sketch: 1 }, { name: 'cards_sketch' }),
    cards.createIndex({ vectorPointId: 1, collisionOf: 1, updatedAt: -1 }, { name: 'cards_unindexed_roots' }),
    cards.createIndex({ collisionOf: 1, createdAt: -1 }, { name: 'cards_recent_roots' }),
    cards.createIndex({ lookAgainOwed: 1 }, { sparse: true, name: 'cards_look_again_owed' }),
    votes.createIndex({ userId: 1, cardId: 1 }, { unique: true, name: 'votes_user_card' }),
    votes.createIndex({ cardId: 1 }, { name: 'votes_card' }),
    authorScores.createIndex({ publicScore: -1, joinUnknown: 1, joinedAt: 1, _id: 1 }, { name: 'author_scores_public_rank' }),
    authorScores.createIndex({ publicVotes: 1 }, { name: 'author_scores_public_votes' }),
    // The ranked authors still waiting for their join date, looked for on every top-users request: without it, each
    // request fetched every ranked author's document by publicVotes to test joinUnknown.
    authorScores.createIndex({ joinUnknown: 1, publicVotes: 1 }, { name: 'author_scores_join_unknown' }),
    collections.createIndex({ authorId: 1, createdAt: -1 }, { name: 'collections_author' }),
    collections.createIndex({ fileId: 1 }, { unique: true, sparse: true, name: 'collections_file' }),
    collections.createIndex({ idempotency: 1 }, { unique: true, sparse: true, name: 'collections_idempotency' }),
    bookmarks.createIndex({ collectionId: 1, cardId: 1 }, { unique: true, name: 'bookmarks_collection_card' }),
    bookmarks.createIndex({ collectionId: 1, ord: 1 }, { name: 'bookmarks_order' }),
    bookmarks.createIndex({ cardId: 1, ownerId: 1 }, { name: 'bookmarks_card_owner' }),
    contentLocks.createIndex({ expiresAt: 1 }, { expireAfterSeconds: 0, name: 'content_locks_expiry' }),
    // Expired kept keys, oldest first, for the deletions that remove them (removeExpiredKeptKeys: not a TTL index).
    deletedIdempotencyKeys.createIndex({ deletedAt: 1 }, { name: 'deleted_idempotency_keys_deleted_at' }),
  ]);
  // bookmarks_card_owner (cardId first) serves every read by card alone: the older index only cost writes and memory.
  await dropIndexIfPresent(bookmarks, 'bookmarks_card');
  await dropIndexIfPresent(cards, 'cards_collision_of');
  await runStartMigrations(migrations, [
    { name: 'author-public-votes', run: () => countPublicVotesOfOlderAuthors(cards, authorScores) },
    { name: 'cards-hidden-by-file', run: () => markCardsHiddenByTheirFileAtUpload(cards) },
    { name: 'bookmark-owners', run: () => giveOlderBookmarksTheirOwner(collections, bookmarks) },
    { name: 'cards-file-privacy', run: () => giveOlderFileCardsTheirFilePrivacy(cards, collections) },
  ]);
  return {
    connection,
    db,
    cards,
    votes,
    authorScores,
    collections,
    bookmarks,
    contentLocks,
    deletedIdempotencyKeys,
    appliedFileChanges,
    keyExpiry,
    migrations,
    change: (work) => withOptionalTransaction(connection, work),
  };
}

export function toCardDocument(card: Card, contentHash: string, sketch: readonly number[]): CardDocument {
  const { id, ...rest } = card;
  const doc: CardDocument = { _id: id, ...rest, tags: [...card.tags], contentHash, sketch: [...new Set(sketch)] };
  if (card.idempotencyKey !== null) doc.idempotency = idempotencyOf(card.authorId, card.idempotencyKey);
  return doc;
}

export const idempotencyOf = (authorId: string, key: string) => `${authorId}\n${key}`;

/** Card fields only (the fingerprint is never read back into the domain). */
export const CARD_PROJECTION = { sketch: 0, contentHash: 0, idempotency: 0 } as const;

export function fromCardDocument(d: Omit<CardDocument, 'sketch' | 'contentHash'>): Card {
  return {
    id: d._id,
    authorId: d.authorId,
    content: d.content,
    cardHtml: d.cardHtml,
    link: d.link,
    private: d.private,
    hiddenByFile: d.hiddenByFile ?? false,
    tags: d.tags,
    fileId: d.fileId ?? null,
    fileName: d.fileName ?? null,
    filePrivate: d.filePrivate ?? false,
    ocFilePath: d.ocFilePath ?? null,
    vectorPointId: d.vectorPointId ?? null,
    verificationScore: d.verificationScore ?? null,
    verifiedAt: d.verifiedAt ?? null,
    collisionOf: d.collisionOf ?? null,
    totalUpvotes: d.totalUpvotes,
    totalDownvotes: d.totalDownvotes,
    idempotencyKey: d.idempotencyKey ?? null,
    requestFingerprint: d.requestFingerprint ?? null,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

export function toCollectionDocument(c: CardCollection): CollectionDocument {
  const doc: CollectionDocument = {
    _id: c.id,
    authorId: c.authorId,
    name: c.name,
    description: c.description,
    isPublic: c.isPublic,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    bookmarkSeq: 0,
  };
  if (c.fileId !== null) doc.fileId = c.fileId;
  if (c.idempotencyKey !== null) Object.assign(doc, { idempotencyKey: c.idempotencyKey, idempotency: idempotencyOf(c.authorId, c.idempotencyKey) });
  if (c.requestFingerprint !== null) doc.requestFingerprint = c.requestFingerprint;
  return doc;
}

export function fromCollectionDocument(d: CollectionDocument): CardCollection {
  return {
    id: d._id,
    authorId: d.authorId,
    name: d.name,
    description: d.description,
    isPublic: d.isPublic,
    fileId: d.fileId ?? null,
    idempotencyKey: d.idempotencyKey ?? null,
    requestFingerprint: d.requestFingerprint ?? null,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

/** The kinds of resources whose keys are kept apart: a client's key on a card and on a collection are two intents. */
export type IdempotentKind = 'card' | 'collection';

const deletedKeyId = (kind: IdempotentKind, authorId: string, key: string) => `${kind}\n${idempotencyOf(authorId, key)}`;

/** The fields of a card or collection document that keepDeletedIdempotencyKey reads. */
export const KEY_PROJECTION = { authorId: 1, idempotencyKey: 1, requestFingerprint: 1 } as const;

/**
 * Keeps the key of a resource about to be deleted, if it has one (read with KEY_PROJECTION), and removes up to
 * EXPIRED_KEYS_PER_SWEEP expired kept keys, oldest first. Written before the delete: without a transaction, a delete
 * cut after it leaves the resource and its kept key, and the resource is found first.
 */
export async function keepDeletedIdempotencyKey(
  db: MongoCardsDatabase,
  kind: IdempotentKind,
  deleted: { authorId: string; idempotencyKey?: string | null; requestFingerprint?: string | null },
  session: ClientSession | undefined,
): Promise<void> {
  if (deleted.idempotencyKey == null) return;
  await db.deletedIdempotencyKeys.updateOne(
    { _id: deletedKeyId(kind, deleted.authorId, deleted.idempotencyKey) },
    { $set: { requestFingerprint: deleted.requestFingerprint ?? null, deletedAt: db.keyExpiry.now() } },
    { upsert: true, session },
  );
  await removeExpiredKeptKeys(db.deletedIdempotencyKeys, keptKeysExpiredAt(db.keyExpiry), session);
}

/** The kept key of a deleted resource, or null for none or an expired one (not yet removed). */
export async function findDeletedIdempotencyKey(db: MongoCardsDatabase, kind: IdempotentKind, authorId: string, key: string): Promise<DeletedIdempotencyKey | null> {
  const doc = await db.deletedIdempotencyKeys.findOne({ _id: deletedKeyId(kind, authorId, key), deletedAt: { $gt: keptKeysExpiredAt(db.keyExpiry) } });
  return doc ? { requestFingerprint: doc.requestFingerprint ?? null, deletedAt: doc.deletedAt } : null;
}

export const bookmarkId = (collectionId: string, cardId: string) => `${collectionId}:${cardId}`;

/** An earlier version created it; a database that never had it, or a replica that dropped it first, is fine. */
async function dropIndexIfPresent<T extends Document>(collection: Collection<T>, name: string): Promise<void> {
  try {
    await collection.dropIndex(name);
  } catch (err) {
    const codeName = (err as { codeName?: string }).codeName;
    if (codeName !== 'IndexNotFound' && codeName !== 'NamespaceNotFound') throw err;
  }
}

/**
 * Author counters written before public votes were counted apart get them from their public cards' totals (once).
 * A counter already touched by the new code (it has the fields) is left alone.
 */
async function countPublicVotesOfOlderAuthors(cards: Collection<CardDocument>, authorScores: Collection<AuthorScoreDocument>): Promise<number> {
  const older = await authorScores.find({ publicVotes: { $exists: false } }, { projection: { _id: 1 } }).toArray();
  for (const { _id } of older) {
    const [sum] = await cards
      .aggregate<{ up: number; down: number }>([{ $match: { authorId: _id, private: false } }, { $group: { _id: null, up: { $sum: '$totalUpvotes' }, down: { $sum: '$totalDownvotes' } } }])
      .toArray();
    const [up, down] = [sum?.up ?? 0, sum?.down ?? 0];
    await authorScores.updateOne(
      { _id, publicVotes: { $exists: false } },
      { $set: { publicUpvotes: up, publicDownvotes: down, publicScore: up - down, publicVotes: up + down }, $unset: { score: '', votes: '' } },
    );
  }
  return older.length;
}

/**
 * Cards stored before the hiddenByFile mark existed have no such field. Of them, only those that ingestion made private
 * from a private file (idempotency key `<file id>:<n>`) and that never changed since are surely the file's doing: they
 * are marked. Any other private card may be its owner's choice and keeps reading as unmarked: the field is written
 * false, as on every card written since, so the next run finds none of them again.
 */
async function markCardsHiddenByTheirFileAtUpload(cards: Collection<CardDocument>): Promise<number> {
  const older = await cards
    .find({ fileId: { $type: 'string' }, hiddenByFile: { $exists: false }, private: true, idempotency: { $exists: true } }, { projection: { fileId: 1, authorId: 1, idempotency: 1, createdAt: 1, updatedAt: 1 } })
    .toArray();
  for (const card of older) {
    const byTheFile = card.updatedAt.getTime() === card.createdAt.getTime() && card.idempotency?.startsWith(idempotencyOf(card.authorId, `${card.fileId}:`)) === true;
    await cards.updateOne({ _id: card._id, hiddenByFile: { $exists: false }, private: true, updatedAt: card.updatedAt }, { $set: { hiddenByFile: byTheFile } });
  }
  return older.length;
}

/**
 * Bookmarks written before ownerId existed get their collection's owner, one collection at a time. Those of a
 * collection already gone (its removal stopped before its sweep, without a transaction) are removed as that sweep would
 * have: no lookup keeps them, and left ownerless they would be found by every run, which would never be recorded done.
 */
async function giveOlderBookmarksTheirOwner(collections: Collection<CollectionDocument>, bookmarks: Collection<BookmarkDocument>): Promise<number> {
  const older = await bookmarks.find({ ownerId: { $exists: false } }, { projection: { collectionId: 1 } }).toArray();
  for (const collectionId of new Set(older.map((b) => b.collectionId))) {
    const collection = await collections.findOne({ _id: collectionId }, { projection: { authorId: 1 } });
    if (collection) await bookmarks.updateMany({ collectionId, ownerId: { $exists: false } }, { $set: { ownerId: collection.authorId } });
    else await bookmarks.deleteMany({ collectionId, ownerId: { $exists: false } });
  }
  return older.length;
}

/**
 * Cards carrying a file, stored before filePrivate existed, learn it from the file's collection, which follows the
 * file's privacy, else from their hidden-by-file mark; the others read as public until the file's next privacy change.
 */
async function giveOlderFileCardsTheirFilePrivacy(cards: Collection<CardDocument>, collections: Collection<CollectionDocument>): Promise<number> {
  const older = await cards.find({ fileId: { $type: 'string' }, filePrivate: { $exists: false } }, { projection: { fileId: 1 } }).toArray();
  for (const fileId of new Set(older.map((c) => c.fileId!))) {
    const collection = await collections.findOne({ fileId }, { projection: { isPublic: 1 } });
    const unset = { fileId, filePrivate: { $exists: false } };
    if (collection) await cards.updateMany(unset, { $set: { filePrivate: !collection.isPublic } });
    else {
      await cards.updateMany({ ...unset, hiddenByFile: true }, { $set: { filePrivate: true } });
      await cards.updateMany(unset, { $set: { filePrivate: false } });
    }
  }
  return older.length;
}

/** `$inc` of an author's counters: all cards always, the public ones when the votes are on a public card. */
function authorCounterDelta(up: number, down: number, onPublicCard: boolean) {
  const [pu, pd] = onPublicCard ? [up, down] : [0, 0];
  return { upvotes: up, downvotes: down, publicUpvotes: pu, publicDownvotes: pd, publicScore: pu - pd, publicVotes: pu + pd };
}

/**
 * Adds up/down to a card's totals and its author's counters (`$inc`, so concurrent changes never lose an update), and
 * answers the card's privacy as that `$inc` found it (null: no change, or no card).
 * Without a transaction these are two single-document steps; each vote change applies its delta exactly once. The
 * public counters follow the card's privacy as the card's own `$inc` found it: every privacy change of the card moves
 * the totals it had at that moment (see MongoCardRepository.update), so the public counters always equal the sum of
 * the public cards' totals once the steps in flight are done.
 */
export async function adjustVoteCounters(
  db: MongoCardsDatabase,
  cardId: string,
  authorId: string,
  up: number,
  down: number,
  session: ClientSession | undefined,
): Promise<{ private: boolean } | null> {
  if (up === 0 && down === 0) return null;
  const card = await db.cards.findOneAndUpdate({ _id: cardId }, { $inc: { totalUpvotes: up, totalDownvotes: down } }, { session, projection: { private: 1 }, returnDocument: 'after' });
  await db.authorScores.updateOne(
    { _id: authorId },
    { $inc: authorCounterDelta(up, down, card !== null && !card.private), $setOnInsert: { joinedAt: null, joinUnknown: true } },
    { upsert: true, session },
  );
  return card;
}

/** A card's privacy changed at a moment when it held these totals: they enter or leave its author's public counters. */
export async function movePublicVotes(
  db: MongoCardsDatabase,
  before: Pick<CardDocument, 'authorId' | 'private' | 'totalUpvotes' | 'totalDownvotes'>,
  nowPrivate: boolean,
  session: ClientSession | undefined,
): Promise<void> {
  if (before.private === nowPrivate || before.totalUpvotes + before.totalDownvotes === 0) return;
  const sign = nowPrivate ? -1 : 1;
  const [up, down] = [sign * before.totalUpvotes, sign * before.totalDownvotes];
  await db.authorScores.updateOne({ _id: before.authorId }, { $inc: { publicUpvotes: up, publicDownvotes: down, publicScore: up - down, publicVotes: up + down } }, { session });
}
