import { isDuplicateKeyError } from '@cards/platform';
import type { MongoCardsDatabase } from './mongo-cards-database';

/**
 * What a collection page needs of each viewer's roots in a collection (countVisibleBookmarkedRoots and where pages
 * start), kept once read, one document per collection in `bookmark_root_counts`: `gen` goes up after every change that
 * can alter them (a bookmark added or removed, a bookmarked card's privacy or root changed or the card deleted), and
 * `roots` (by viewer) hold only for the `rootsGen` they were read at. They are stored only if `gen` did not move while
 * they were read, so what was read during a change is never kept past it. Kept values are also read again after
 * KEPT_ROOTS_MS: a process cut off between writing a change and raising `gen` leaves them stale at most that long.
 */
interface RootCountsDocument {
  _id: string;
  gen: number;
  rootsGen?: number;
  /** When the roots of `rootsGen` began to be kept. */
  rootsAt?: Date;
  roots?: Record<string, unknown>;
}

/** How long kept roots answer before they are read again, changed or not. */
export const KEPT_ROOTS_MS = 10 * 60_000;

const rootCounts = (store: MongoCardsDatabase) => store.db.collection<RootCountsDocument>('bookmark_root_counts');

/** Forgets the kept counts of these collections; called once a change to their bookmarks or cards is written. */
export async function forgetRootCounts(store: MongoCardsDatabase, collectionIds: Iterable<string>): Promise<void> {
  const ids = [...new Set(collectionIds)];
  if (ids.length === 0) return;
  await rootCounts(store).bulkWrite(ids.map((_id) => ({ updateOne: { filter: { _id }, update: { $inc: { gen: 1 } }, upsert: true } })), { ordered: false });
}

/** The collections holding any of these cards (bookmarks_card_owner serves it). */
export async function collectionsHolding(store: MongoCardsDatabase, cardIds: readonly string[]): Promise<string[]> {
  if (cardIds.length === 0) return [];
  const docs = await store.bookmarks.find({ cardId: { $in: [...new Set(cardIds)] } }, { projection: { collectionId: 1 } }).toArray();
  return docs.map((d) => d.collectionId);
}

/** Forgets the kept counts of every collection holding one of these cards, whose privacy or root changed. */
export async function forgetRootCountsOfCards(store: MongoCardsDatabase, cardIds: readonly string[]): Promise<void> {
  await forgetRootCounts(store, await collectionsHolding(store, cardIds));
}

/** Drops a deleted collection's counts. */
export async function dropRootCounts(store: MongoCardsDatabase, collectionId: string): Promise<void> {
  await rootCounts(store).deleteOne({ _id: collectionId });
}

/** The viewer's roots as kept, else `read()`'s, kept unless the collection changed meanwhile. */
export async function keptRoots<T>(store: MongoCardsDatabase, collectionId: string, viewerId: string | null, read: () => Promise<T>, now = new Date()): Promise<T> {
  const key = viewerId === null ? 'anyone' : `v${viewerId}`;
  const counts = rootCounts(store);
  let doc = await counts.findOne({ _id: collectionId });
  if (!doc) {
    await counts.updateOne({ _id: collectionId }, { $setOnInsert: { gen: 0 } }, { upsert: true }).catch((err: unknown) => {
      if (!isDuplicateKeyError(err)) throw err;
    });
    doc = await counts.findOne({ _id: collectionId });
    if (!doc) return read();
  }
  const { gen } = doc;
  const current = doc.rootsGen === gen && doc.rootsAt !== undefined && now.getTime() - doc.rootsAt.getTime() < KEPT_ROOTS_MS;
  const kept = current ? doc.roots?.[key] : undefined;
  if (kept !== undefined) return kept as T;
  const value = await read();
  if (current) await counts.updateOne({ _id: collectionId, gen, rootsGen: gen, rootsAt: doc.rootsAt }, { $set: { [`roots.${key}`]: value } });
  else await counts.updateOne({ _id: collectionId, gen }, { $set: { rootsGen: gen, rootsAt: now, roots: { [key]: value } } });
  return value;
}
