import { isDuplicateKeyError } from '@cards/platform';
import { BOOKMARK_BLOCK } from '../../domain/ports';
import { bookmarkId, type MongoCardsDatabase } from './mongo-cards-database';

/**
 * What a collection page needs of a viewer's roots in a collection, kept once read and mended after changes instead of
 * read again: how many roots have their first visible bookmark in each block of BOOKMARK_BLOCK bookmark orders.
 *
 * `bookmark_block_changes` holds one document per collection: a counter per block, raised (`$inc`, one atomic update)
 * after every change that can alter the count of that block for some viewer (a bookmark of a card group added or
 * removed, a bookmarked card's privacy, author or root changed, the card deleted; the blocks are those of every
 * bookmark of the groups touched), and an `epoch` raised when the changed blocks are not known (a failed bookmark add).
 * `bookmark_viewer_roots` holds one document per (collection, viewer): the counts per block, and the counters and epoch
 * read before they were counted. A viewer's counts are mended by counting again only the blocks whose counter moved
 * since, so the page after a change costs in proportion to the change; a change is always counted after its counter
 * was read or before it was raised, so nothing read during a change is kept past it. Kept counts are also read whole
 * again after KEPT_ROOTS_MS: a process cut off between writing a change and raising its counters leaves them stale at
 * most that long.
 *
 * `bookmark_root_counts` is where releases before 5d8f480 keep a viewer's roots (`roots`), valid while the collection's
 * `gen` is their `rootsGen` (for KEPT_ROOTS_MS); they raise `gen` after each change and mark no blocks. So that either
 * side of a rolling upgrade or a rollback reads no counts the other's changes made wrong, every change here also raises
 * `gen`, with `markedGen` in the same `$inc` (a document such a release made; none is made here), and kept counts are
 * read whole again once `gen - markedGen` (the changes of such a release) moved since they were read.
 */
interface LegacyRootCountsDocument {
  _id: string;
  gen: number;
  /** How many of the raises of `gen` came from this release, which also marks their blocks. */
  markedGen?: number;
}

interface BlockChangesDocument {
  _id: string;
  epoch?: number;
  changes?: Record<string, number>;
}

interface ViewerRootsDocument {
  _id: string;
  n: number;
  blocks: number[];
  epoch: number;
  marks: Record<string, number>;
  /** `gen - markedGen` of bookmark_root_counts read before they were counted (absent in counts kept before it was). */
  unmarked?: number;
  /** When these counts were last read whole. */
  at: Date;
}

/** A viewer's roots in a collection: how many, and how many have their first visible bookmark in block 0, 1, ... */
export interface KeptRoots {
  n: number;
  blocks: number[];
}

/** How long kept roots answer before they are read whole again, changed or not. */
export const KEPT_ROOTS_MS = 10 * 60_000;

const blockChanges = (store: MongoCardsDatabase) => store.db.collection<BlockChangesDocument>('bookmark_block_changes');
const viewerRoots = (store: MongoCardsDatabase) => store.db.collection<ViewerRootsDocument>('bookmark_viewer_roots');
const legacyRootCounts = (store: MongoCardsDatabase) => store.db.collection<LegacyRootCountsDocument>('bookmark_root_counts');
const viewerKey = (collectionId: string, viewerId: string | null) => `${collectionId} ${viewerId === null ? 'anyone' : `v${viewerId}`}`;

/** Raises `gen` (and `markedGen`) of the documents releases before 5d8f480 keep for these collections, if they made one. */
async function raiseLegacyGen(store: MongoCardsDatabase, collectionIds: readonly string[]): Promise<void> {
  if (collectionIds.length === 0) return;
  await legacyRootCounts(store).updateMany({ _id: { $in: [...collectionIds] } }, { $inc: { gen: 1, markedGen: 1 } });
}

/** The blocks of bookmark orders, by collection, holding a bookmark of these cards' groups (each card, its root, the root's collisions). */
export async function blocksOfGroups(store: MongoCardsDatabase, cardIds: readonly string[], collectionId?: string): Promise<Map<string, Set<number>>> {
  const blocks = new Map<string, Set<number>>();
  if (cardIds.length === 0) return blocks;
  const cards = await store.cards.find({ _id: { $in: [...new Set(cardIds)] } }, { projection: { collisionOf: 1 } }).toArray();
  const roots = [...new Set([...cardIds, ...cards.map((c) => c.collisionOf ?? c._id)])];
  const collisions = await store.cards.find({ collisionOf: { $in: roots } }, { projection: { _id: 1 } }).toArray();
  const members = [...new Set([...roots, ...collisions.map((c) => c._id)])];
  // In one collection, by their keys; else by card (bookmarks_card_owner).
  const marks = await store.bookmarks
    .find(collectionId === undefined ? { cardId: { $in: members } } : { _id: { $in: members.map((m) => bookmarkId(collectionId, m)) } }, { projection: { collectionId: 1, ord: 1 } })
    .toArray();
  for (const { collectionId: id, ord } of marks) addBlock(blocks, id, ord);
  return blocks;
}

export function addBlock(blocks: Map<string, Set<number>>, collectionId: string, ord: number): void {
  let set = blocks.get(collectionId);
  if (!set) blocks.set(collectionId, (set = new Set()));
  set.add(Math.floor(ord / BOOKMARK_BLOCK));
}

/** Raises the counters of these blocks, once their change is written. */
export async function markBlocks(store: MongoCardsDatabase, ...changed: Map<string, Set<number>>[]): Promise<void> {
  const all = new Map<string, Set<number>>();
  for (const map of changed) for (const [id, set] of map) for (const block of set) addBlock(all, id, block * BOOKMARK_BLOCK);
  if (all.size === 0) return;
  await Promise.all([
    blockChanges(store).bulkWrite(
      [...all].map(([_id, set]) => ({ updateOne: { filter: { _id }, update: { $inc: Object.fromEntries([...set].map((b) => [`changes.${b}`, 1])) }, upsert: true } })),
      { ordered: false },
    ),
    raiseLegacyGen(store, [...all.keys()]),
  ]);
}

/**
 * Runs a change that may alter the groups of these cards in some collections (in `collectionId` only, when given), then
 * raises the counters of the blocks of their bookmarks before and after it; also when it failed, as it may have been
 * undone halfway.
 */
export async function changingGroups<T>(store: MongoCardsDatabase, cardIds: () => string[] | Promise<string[]>, work: () => Promise<T>, collectionId?: string): Promise<T> {
  const before = await blocksOfGroups(store, await cardIds(), collectionId);
  try {
    return await work();
  } finally {
    await markBlocks(store, before, await blocksOfGroups(store, await cardIds(), collectionId));
  }
}

/** Makes every kept count of these collections be read whole again (a change whose blocks are not known). */
export async function forgetRootCounts(store: MongoCardsDatabase, collectionIds: Iterable<string>): Promise<void> {
  const ids = [...new Set(collectionIds)];
  if (ids.length === 0) return;
  await Promise.all([
    blockChanges(store).bulkWrite(ids.map((_id) => ({ updateOne: { filter: { _id }, update: { $inc: { epoch: 1 } }, upsert: true } })), { ordered: false }),
    raiseLegacyGen(store, ids),
  ]);
}

/** Drops a deleted collection's counts. */
export async function dropRootCounts(store: MongoCardsDatabase, collectionId: string): Promise<void> {
  await blockChanges(store).deleteOne({ _id: collectionId });
  await legacyRootCounts(store).deleteOne({ _id: collectionId });
  await viewerRoots(store).deleteMany({ _id: { $gte: `${collectionId} `, $lt: `${collectionId}!` } });
}

/**
 * The viewer's kept counts, mended by `countBlock` for the blocks changed since they were kept, else `readAll()`'s
 * (every root's first visible bookmark order), read whole once per viewer and KEPT_ROOTS_MS.
 */
export async function keptRoots(
  store: MongoCardsDatabase,
  collectionId: string,
  viewerId: string | null,
  readAll: () => Promise<number[]>,
  countBlock: (block: number) => Promise<number>,
  now = new Date(),
): Promise<KeptRoots> {
  const _id = viewerKey(collectionId, viewerId);
  // The counters first: whatever is counted below comes after them.
  const [changes, kept, legacy] = await Promise.all([
    blockChanges(store).findOne({ _id: collectionId }),
    viewerRoots(store).findOne({ _id }),
    legacyRootCounts(store).findOne({ _id: collectionId }, { projection: { gen: 1, markedGen: 1 } }),
  ]);
  const epoch = changes?.epoch ?? 0;
  const unmarked = (legacy?.gen ?? 0) - (legacy?.markedGen ?? 0);
  const marks = changes?.changes ?? {};
  let roots: KeptRoots;
  let at = now;
  if (kept && kept.epoch === epoch && kept.unmarked === unmarked && now.getTime() - kept.at.getTime() < KEPT_ROOTS_MS) {
    const changed = Object.keys(marks).filter((b) => marks[b] !== kept.marks[b]);
    roots = { n: kept.n, blocks: kept.blocks };
    if (changed.length === 0) return roots;
    for (const key of changed) {
      const block = Number(key);
      const count = await countBlock(block);
      roots.n += count - (roots.blocks[block] ?? 0);
      while (roots.blocks.length <= block) roots.blocks.push(0);
      roots.blocks[block] = count;
    }
    at = kept.at;
  } else {
    const firsts = await readAll();
    roots = { n: firsts.length, blocks: [] };
    for (const first of firsts) {
      const block = Math.floor(first / BOOKMARK_BLOCK);
      while (roots.blocks.length <= block) roots.blocks.push(0);
      roots.blocks[block]!++;
    }
  }
  while (roots.blocks.length > 0 && roots.blocks[roots.blocks.length - 1] === 0) roots.blocks.pop();
  await viewerRoots(store).replaceOne({ _id }, { n: roots.n, blocks: roots.blocks, epoch, marks, unmarked, at }, { upsert: true }).catch((err: unknown) => {
    if (!isDuplicateKeyError(err)) throw err; // stored by a concurrent read of the same viewer's counts
  });
  return roots;
}
