import { isDuplicateKeyError } from '@cards/platform';
import type { MongoCardsDatabase } from './mongo-cards-database';

/**
 * How many roots each viewer may see in a collection (countVisibleBookmarkedRoots), kept once counted, one document
 * per collection in `bookmark_root_counts`: `gen` goes up after every change that can alter a count (a bookmark added
 * or removed, a bookmarked card's privacy or root changed or the card deleted), and `counts` (by viewer) hold only for
 * the `countsGen` they were counted at. A count is stored only if `gen` did not move while it was counted, so a count
 * made during a change is never kept past it.
 */
interface RootCountsDocument {
  _id: string;
  gen: number;
  countsGen?: number;
  counts?: Record<string, number>;
}

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

/** The viewer's count as kept, else `count()`'s, kept unless the collection changed meanwhile. */
export async function keptRootCount(store: MongoCardsDatabase, collectionId: string, viewerId: string | null, count: () => Promise<number>): Promise<number> {
  const key = viewerId === null ? 'anyone' : `v${viewerId}`;
  const counts = rootCounts(store);
  let doc = await counts.findOne({ _id: collectionId });
  if (!doc) {
    await counts.updateOne({ _id: collectionId }, { $setOnInsert: { gen: 0 } }, { upsert: true }).catch((err: unknown) => {
      if (!isDuplicateKeyError(err)) throw err;
    });
    doc = await counts.findOne({ _id: collectionId });
    if (!doc) return count();
  }
  const { gen } = doc;
  const kept = doc.countsGen === gen ? doc.counts?.[key] : undefined;
  if (kept !== undefined) return kept;
  const n = await count();
  if (doc.countsGen === gen) await counts.updateOne({ _id: collectionId, gen, countsGen: gen }, { $set: { [`counts.${key}`]: n } });
  else await counts.updateOne({ _id: collectionId, gen }, { $set: { countsGen: gen, counts: { [key]: n } } });
  return n;
}
