import { AlreadyExistsError, appendToSqliteOutbox, creationCursor, isStoreBusyError, keptKeyExpiry, newestFirstRows, pageOfRows, type KeptKeyExpiry, type OutgoingEvent, type Page, type SqliteDatabase } from '@cards/platform';
import type { Collection, DeletedIdempotencyKey } from '../../domain/model';
import { BOOKMARK_BLOCK, blockHolding, type BookmarkAddition, type BookmarkAdditionOptions, type CollectionChange, type CollectionRepository, type HeldCard, type StoredBookmark, versionAfterStored } from '../../domain/ports';
import { findDeletedIdempotencyKey, keepDeletedIdempotencyKey, type KeyOfDeleted } from './deleted-idempotency-keys';
import { chunks, collectionFromRow, placeholders, type CollectionRow } from './rows';

const iso = (d: Date) => d.toISOString();

/**
 * A page of the roots of a collection's bookmarked cards the viewer may see (listVisibleBookmarkedRoots; named
 * parameters collectionId, viewerId, fromOrd, fromCard, limit, offset), with the order (ord, card_id) of each root's
 * first visible bookmark. The bookmarks are read in their order from bookmarks_order, from (fromOrd, fromCard) on, and
 * a bookmark is kept when it is the first visible one of its group (its root, or a collision of it) in the whole
 * collection, so the read stops once offset + limit roots are found. Grouping all bookmarks first (GROUP BY root,
 * ORDER BY min(ord)) sorted the whole collection in two temporary B-trees on every page.
 */
export const VISIBLE_BOOKMARKED_ROOTS_SQL = visibleBookmarkedRootsSql('');

/**
 * How many roots of the viewer have their first visible bookmark in one block of bookmark orders (named parameters
 * collectionId, viewerId, fromOrd, fromCard '', toOrd): the rows VISIBLE_BOOKMARKED_ROOTS_SQL gives from the block's
 * start, up to its end.
 */
const ROOTS_IN_BLOCK_SQL = `SELECT count(*) AS n FROM (${visibleBookmarkedRootsSql('AND b.ord < @toOrd').replace('ORDER BY b.ord, b.card_id LIMIT @limit OFFSET @offset', '')})`;

function visibleBookmarkedRootsSql(bound: string): string {
  return `
  SELECT coalesce(c.collision_of, c.id) AS root_id, b.ord AS ord, b.card_id AS card_id
  FROM bookmarks b CROSS JOIN cards c INDEXED BY cards_visibility ON c.id = b.card_id
  WHERE b.collection_id = @collectionId AND b.ord >= @fromOrd AND (b.ord > @fromOrd OR b.card_id >= @fromCard) ${bound}
    AND (c.private = 0 OR c.author_id = @viewerId)
    AND NOT (c.collision_of IS NOT NULL AND EXISTS (
      SELECT 1 FROM bookmarks e CROSS JOIN cards g INDEXED BY cards_visibility ON g.id = e.card_id
      WHERE e.collection_id = b.collection_id AND e.card_id = c.collision_of AND (e.ord < b.ord OR (e.ord = b.ord AND e.card_id < b.card_id))
        AND (g.private = 0 OR g.author_id = @viewerId)))
    AND NOT EXISTS (
      SELECT 1 FROM cards g CROSS JOIN bookmarks e ON e.collection_id = b.collection_id AND e.card_id = g.id
      WHERE g.collision_of = coalesce(c.collision_of, c.id) AND (e.ord < b.ord OR (e.ord = b.ord AND e.card_id < b.card_id))
        AND (g.private = 0 OR g.author_id = @viewerId))
  ORDER BY b.ord, b.card_id LIMIT @limit OFFSET @offset`;
}

/**
 * Every root the viewer may see in a collection with its first visible bookmark, in order: the same roots as
 * VISIBLE_BOOKMARKED_ROOTS_SQL. card_id is the one of the row min() chose (SQLite's bare column of a min() aggregate).
 */
const GROUPED_ROOTS_SQL = `
  SELECT coalesce(c.collision_of, c.id) AS root_id, min(b.ord) AS ord, b.card_id AS card_id
  FROM bookmarks b CROSS JOIN cards c INDEXED BY cards_visibility ON c.id = b.card_id
  WHERE b.collection_id = @collectionId AND (c.private = 0 OR c.author_id = @viewerId)
  GROUP BY root_id ORDER BY ord, card_id`;

interface KeptRoots {
  n: number;
  /** How many of the viewer's roots have their first visible bookmark in block 0, 1, ... (ord / BOOKMARK_BLOCK). */
  blocks: number[];
}

/**
 * The owner's bookmarks of `cardCount` cards (parameters: the card ids, then the owner), oldest collection first.
 * Each bookmark carries its collection's owner, so bookmarks_card_owner finds only the owner's bookmarks of each card
 * (never the bookmarks of all users), and each one's collection is then read by its key for the order. CROSS JOIN
 * keeps bookmarks the outer loop (SQLite never reorders it): driven from collections_author instead, the planner's
 * choice for a plain JOIN without statistics, the query walked every collection of the owner.
 */
export function ownerBookmarksOfCardsQuery(cardCount: number): string {
  return `SELECT b.card_id AS cardId, b.collection_id AS collectionId, k.created_at AS createdAt
          FROM bookmarks b CROSS JOIN collections k ON k.id = b.collection_id
          WHERE b.card_id IN (${placeholders(cardCount)}) AND b.owner_id = ? ORDER BY k.created_at, k.id`;
}

/** Bookmarks of a removed collection deleted per transaction (remove): ~5 ms of the thread each. */
export const BOOKMARK_SWEEP_CHUNK = 500;

/** A sweep (remove) that failed is tried again this much later. */
export const SWEEP_RETRY_MS = 1_000;

/** Collections and bookmarks in the cards service's SQLite file. */
export class SqliteCollectionRepository implements CollectionRepository {
  /** `keyExpiry`: how long the keys of deleted resources are kept (IDEMPOTENCY_KEY_TTL_HOURS), and by which clock. */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly keyExpiry: KeptKeyExpiry = keptKeyExpiry(),
  ) {
    // Sweeps cut short by a stop (remove) are finished now, a chunk at a time (a store of an older schema has none).
    const swept = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'collection_bookmark_sweeps'").get() !== undefined;
    const pending = swept ? (this.db.prepare('SELECT collection_id FROM collection_bookmark_sweeps').all() as { collection_id: string }[]) : [];
    if (pending.length > 0) void (async () => {
      for (const { collection_id } of pending) await this.sweepBookmarks(collection_id).catch(() => this.sweepLater(collection_id));
    })();
  }

  async insert(c: Collection, events: OutgoingEvent[]): Promise<void> {
    try {
      this.db.transaction(() => {
        this.insertRow(c);
        appendToSqliteOutbox(this.db, events);
      })();
    } catch (err) {
      // Checked by code, not instanceof: the native module's error class may come from another realm (test sandboxes).
      const unique = (err as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';
      if (unique && c.idempotencyKey !== null && (await this.findByIdempotencyKey(c.authorId, c.idempotencyKey))) {
        throw new AlreadyExistsError('A collection with this idempotency key already exists');
      }
      throw err;
    }
  }

  async findByIdempotencyKey(authorId: string, key: string): Promise<Collection | null> {
    const row = this.db.prepare('SELECT * FROM collections WHERE author_id = ? AND idempotency_key = ?').get(authorId, key) as CollectionRow | undefined;
    return row ? collectionFromRow(row) : null;
  }

  async findDeletedIdempotencyKey(authorId: string, key: string): Promise<DeletedIdempotencyKey | null> {
    return findDeletedIdempotencyKey(this.db, 'collection', authorId, key, this.keyExpiry);
  }

  async insertFileCollection(c: Collection, cardIds: readonly string[], events: (stored: Collection) => OutgoingEvent[]): Promise<{ collection: Collection; created: boolean }> {
    return this.db.transaction(() => {
      const existing = this.db.prepare('SELECT * FROM collections WHERE file_id = ?').get(c.fileId) as CollectionRow | undefined;
      if (existing) return { collection: collectionFromRow(existing), created: false };
      this.insertRow(c);
      const exists = this.db.prepare('SELECT 1 FROM cards WHERE id = ?');
      const insert = this.db.prepare('INSERT OR IGNORE INTO bookmarks (collection_id, card_id, owner_id, ord, created_at) VALUES (?, ?, ?, ?, ?)');
      let ord = 0;
      for (const cardId of new Set(cardIds)) if (exists.get(cardId)) insert.run(c.id, cardId, c.authorId, ++ord, iso(c.createdAt));
      appendToSqliteOutbox(this.db, events(c));
      return { collection: c, created: true };
    })();
  }

  async findById(id: string): Promise<Collection | null> {
    const row = this.db.prepare('SELECT * FROM collections WHERE id = ?').get(id) as CollectionRow | undefined;
    return row ? collectionFromRow(row) : null;
  }

  async findByFileId(fileId: string): Promise<Collection | null> {
    const row = this.db.prepare('SELECT * FROM collections WHERE file_id = ?').get(fileId) as CollectionRow | undefined;
    return row ? collectionFromRow(row) : null;
  }

  async update(id: string, change: CollectionChange, events: OutgoingEvent[]): Promise<boolean> {
    const isPublic = change.isPublic === undefined ? null : change.isPublic ? 1 : 0;
    const ifUpdatedAt = change.ifUpdatedAt === undefined ? null : iso(change.ifUpdatedAt);
    return this.db.transaction((): boolean => {
      // Without ifUpdatedAt, the version stored is after the one there, read in this (IMMEDIATE) transaction.
      const stored = ifUpdatedAt === null ? (this.db.prepare('SELECT updated_at FROM collections WHERE id = ?').get(id) as { updated_at: string } | undefined) : undefined;
      const updatedAt = stored ? versionAfterStored(change.updatedAt, new Date(stored.updated_at)) : change.updatedAt;
      const written = this.db
        .prepare(
          'UPDATE collections SET name = coalesce(?, name), description = coalesce(?, description), is_public = coalesce(?, is_public), updated_at = ? WHERE id = ? AND (? IS NULL OR updated_at = ?)',
        )
        .run(change.name ?? null, change.description ?? null, isPublic, iso(updatedAt), id, ifUpdatedAt, ifUpdatedAt).changes > 0;
      if (!written) return false;
      appendToSqliteOutbox(this.db, events);
      return true;
    })();
  }

  /**
   * The collection's row goes first, with its events (so it is gone for every reader at once, and no bookmark can be
   * added to it), then its bookmarks, BOOKMARK_SWEEP_CHUNK a transaction, giving the thread up between chunks: in one
   * transaction the bookmarks of a collection of 10,000 cards held every other request of the service ~0.5 s (more
   * with more). Until they are all gone the collection is listed in collection_bookmark_sweeps, so a sweep cut short by
   * a stop is finished when the store is next opened. Answers once its bookmarks are gone.
   */
  async remove(id: string, events: OutgoingEvent[]): Promise<boolean> {
    const removed = this.db.transaction((): boolean => {
      const row = this.db.prepare('DELETE FROM collections WHERE id = ? RETURNING author_id, idempotency_key, request_fingerprint').get(id) as KeyOfDeleted | undefined;
      if (!row) return false;
      keepDeletedIdempotencyKey(this.db, 'collection', row, this.keyExpiry);
      this.db.prepare('INSERT OR IGNORE INTO collection_bookmark_sweeps (collection_id) VALUES (?)').run(id);
      appendToSqliteOutbox(this.db, events);
      return true;
    })();
    // The collection is gone once its row is: a chunk refused (the store busy past its wait, a full disk) fails neither
    // the removal nor the process (an unhandled rejection at the start's resume ended it); the sweep is tried again.
    if (removed) await this.sweepBookmarks(id).catch(() => this.sweepLater(id));
    return removed;
  }

  /** Tries a failed sweep again SWEEP_RETRY_MS later, until it is done or the store closed. */
  private sweepLater(collectionId: string): void {
    setTimeout(() => {
      if (this.db.open) void this.sweepBookmarks(collectionId).catch(() => this.sweepLater(collectionId));
    }, SWEEP_RETRY_MS).unref();
  }

  /** Deletes a removed collection's bookmarks a chunk per transaction, yielding between them (see remove). */
  private async sweepBookmarks(collectionId: string): Promise<void> {
    const chunk = this.db.prepare(
      'DELETE FROM bookmarks WHERE collection_id = ? AND card_id IN (SELECT card_id FROM bookmarks WHERE collection_id = ? LIMIT ?)',
    );
    while (this.db.open) {
      const done = this.db.transaction((): boolean => {
        if (chunk.run(collectionId, collectionId, BOOKMARK_SWEEP_CHUNK).changes === BOOKMARK_SWEEP_CHUNK) return false;
        this.db.prepare('DELETE FROM collection_bookmark_sweeps WHERE collection_id = ?').run(collectionId);
        return true;
      })();
      if (done) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  async addBookmark(collectionId: string, cardId: string, at: Date, events: OutgoingEvent[], options: BookmarkAdditionOptions = {}): Promise<BookmarkAddition> {
    // One transaction: a card or collection removed (or the card made private) after the caller's checks is seen here,
    // so no bookmark outlives it or cites a card its owner may no longer see.
    return this.db.transaction((): BookmarkAddition => {
      const collection = this.db.prepare('SELECT author_id FROM collections WHERE id = ?').get(collectionId) as { author_id: string } | undefined;
      if (!collection) return 'collection-gone';
      const card = this.db.prepare('SELECT author_id, private FROM cards WHERE id = ?').get(cardId) as { author_id: string; private: number } | undefined;
      if (!card || (options.visibleToOwner && card.private === 1 && card.author_id !== collection.author_id)) return 'card-gone';
      const added = this.db.prepare(
          `INSERT OR IGNORE INTO bookmarks (collection_id, card_id, owner_id, ord, created_at)
           VALUES (?, ?, ?, (SELECT coalesce(max(ord), 0) + 1 FROM bookmarks WHERE collection_id = ?), ?)`,
        )
        .run(collectionId, cardId, collection.author_id, collectionId, iso(at)).changes > 0;
      if (!added) return 'already-there';
      appendToSqliteOutbox(this.db, events);
      return 'added';
    })();
  }

  async removeEntry(collectionId: string, cardId: string, eventsOf: (cardId: string, addedAt: Date) => OutgoingEvent[]): Promise<string[]> {
    return this.db.transaction((): string[] => {
      const rows = this.db
        .prepare('DELETE FROM bookmarks WHERE collection_id = ? AND (card_id = ? OR card_id IN (SELECT id FROM cards WHERE collision_of = ?)) RETURNING card_id, ord, created_at')
        .all(collectionId, cardId, cardId) as { card_id: string; ord: number; created_at: string }[];
      rows.sort((a, b) => a.ord - b.ord);
      appendToSqliteOutbox(this.db, rows.flatMap((r) => eventsOf(r.card_id, new Date(r.created_at))));
      return rows.map((r) => r.card_id);
    })();
  }

  /**
   * Starts at the block (of bookmark orders) holding the first visible bookmark of root `offset` (see keptRoots), so a
   * page reads at most BOOKMARK_BLOCK + limit of the viewer's roots wherever it is in the collection, and a page past
   * the end none.
   */
  async listVisibleBookmarkedRoots(collectionId: string, viewerId: string | null, offset: number, limit: number): Promise<string[]> {
    if (limit <= 0) return [];
    return this.db.transaction((): string[] => {
      const { n, blocks } = this.keptRoots(collectionId, viewerId);
      if (offset >= n) return [];
      const { block, before } = blockHolding(blocks, offset);
      const rows = this.db.prepare(VISIBLE_BOOKMARKED_ROOTS_SQL)
        .all({ collectionId, viewerId, fromOrd: block * BOOKMARK_BLOCK, fromCard: '', limit, offset: offset - before }) as { root_id: string }[];
      return rows.map((r) => r.root_id);
    }).deferred();
  }

  async countVisibleBookmarkedRoots(collectionId: string, viewerId: string | null): Promise<number> {
    return this.db.transaction(() => this.keptRoots(collectionId, viewerId).n).deferred();
  }

  /**
   * The viewer's root count per block of bookmark orders, read once (one walk of the collection's bookmarks) and then
   * kept; a change marks the blocks it may alter (bookmark_block_changes, by triggers), and only those are counted
   * again, so the page after a change costs in proportion to the change. Call within a transaction: a page's reads call
   * it in a DEFERRED one (not the IMMEDIATE default of openSqlite), so that reading a collection never waits for
   * another connection's write lock (the backup command holds it while it begins its snapshots; another process's write); the counts are then
   * kept only when the lock is free, and read fresh (the same answer) while it is held.
   */
  private keptRoots(collectionId: string, viewerId: string | null): KeptRoots {
    const viewer = viewerId ?? '';
    const latest = (this.db.prepare('SELECT coalesce(max(seq), 0) AS seq FROM bookmark_block_changes WHERE collection_id = ?').get(collectionId) as { seq: number }).seq;
    const kept = this.db.prepare('SELECT n, blocks, seq FROM bookmark_block_counts WHERE collection_id = ? AND viewer_id = ?').get(collectionId, viewer) as
      | { n: number; blocks: string; seq: number }
      | undefined;
    let roots: KeptRoots;
    if (kept) {
      roots = { n: kept.n, blocks: JSON.parse(kept.blocks) as number[] };
      if (kept.seq === latest) return roots;
      const changed = this.db.prepare('SELECT block FROM bookmark_block_changes WHERE collection_id = ? AND seq > ?').all(collectionId, kept.seq) as { block: number }[];
      const count = this.db.prepare(ROOTS_IN_BLOCK_SQL);
      for (const { block } of changed) {
        const fromOrd = block * BOOKMARK_BLOCK;
        const now = (count.get({ collectionId, viewerId, fromOrd, fromCard: '', toOrd: fromOrd + BOOKMARK_BLOCK }) as { n: number }).n;
        roots.n += now - (roots.blocks[block] ?? 0);
        while (roots.blocks.length <= block) roots.blocks.push(0);
        roots.blocks[block] = now;
      }
    } else {
      // All the roots at once, grouped (a sort of the collection), once per viewer.
      const rows = this.db.prepare(GROUPED_ROOTS_SQL).all({ collectionId, viewerId }) as { ord: number }[];
      roots = { n: rows.length, blocks: [] };
      for (const { ord } of rows) {
        const block = Math.floor(ord / BOOKMARK_BLOCK);
        while (roots.blocks.length <= block) roots.blocks.push(0);
        roots.blocks[block]!++;
      }
    }
    while (roots.blocks.length > 0 && roots.blocks[roots.blocks.length - 1] === 0) roots.blocks.pop();
    try {
      this.db.prepare('INSERT OR REPLACE INTO bookmark_block_counts (collection_id, viewer_id, n, blocks, seq) VALUES (?, ?, ?, ?, ?)')
        .run(collectionId, viewer, roots.n, JSON.stringify(roots.blocks), latest);
    } catch (err) {
      // A deferred read whose write lock another connection holds (SQLITE_BUSY at once, without waiting): the counts
      // are right, only not kept this time.
      if (!isStoreBusyError(err)) throw err;
    }
    return roots;
  }

  async bookmarkedCardIds(collectionId: string): Promise<string[]> {
    return (this.db.prepare('SELECT card_id FROM bookmarks WHERE collection_id = ? ORDER BY ord').all(collectionId) as { card_id: string }[]).map((r) => r.card_id);
  }

  async listByAuthor(authorId: string, includePrivate: boolean): Promise<Collection[]> {
    const rows = this.db.prepare(`SELECT * FROM collections WHERE author_id = ? ${includePrivate ? '' : 'AND is_public = 1'} ORDER BY created_at DESC, id`)
      .all(authorId) as CollectionRow[];
    return rows.map(collectionFromRow);
  }

  async listPageByAuthor(authorId: string, includePrivate: boolean, limit: number, after?: string): Promise<Page<Collection>> {
    const rows = newestFirstRows<CollectionRow>(this.db, 'collections', `author_id = @authorId${includePrivate ? '' : ' AND is_public = 1'}`, { authorId }, limit, after);
    return pageOfRows(rows.map(collectionFromRow), limit, creationCursor.after);
  }

  async collectionsOfOwnerHolding(ownerId: string, cardIds: readonly string[]): Promise<HeldCard[]> {
    const rows: (HeldCard & { createdAt: string })[] = [];
    for (const slice of chunks([...new Set(cardIds)])) rows.push(...(this.db.prepare(ownerBookmarksOfCardsQuery(slice.length)).all(...slice, ownerId) as (HeldCard & { createdAt: string })[]));
    // Each slice comes in order; slices are merged into one order here.
    rows.sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.collectionId < b.collectionId ? -1 : a.collectionId > b.collectionId ? 1 : 0));
    return rows.map(({ cardId, collectionId }) => ({ cardId, collectionId }));
  }

  async collectionIdsHolding(cardId: string): Promise<string[]> {
    return (this.db.prepare('SELECT collection_id FROM bookmarks WHERE card_id = ? ORDER BY collection_id').all(cardId) as { collection_id: string }[]).map((r) => r.collection_id);
  }

  /** In primary-key order; the cursor is the last bookmark's collection id and card id. */
  async pageFileCollections(limit: number, after?: string): Promise<Page<Collection>> {
    const rows = (after === undefined
      ? this.db.prepare('SELECT * FROM collections WHERE file_id IS NOT NULL ORDER BY id LIMIT ?').all(limit + 1)
      : this.db.prepare('SELECT * FROM collections WHERE file_id IS NOT NULL AND id > ? ORDER BY id LIMIT ?').all(after, limit + 1)) as CollectionRow[];
    return pageOfRows(rows.map(collectionFromRow), limit, (last) => last.id);
  }

  async pageBookmarks(limit: number, after?: string): Promise<Page<StoredBookmark>> {
    const select = 'SELECT collection_id, card_id, created_at FROM bookmarks';
    const [collectionId, cardId] = after?.split(' ') ?? [];
    const rows = (after === undefined
      ? this.db.prepare(`${select} ORDER BY collection_id, card_id LIMIT ?`).all(limit + 1)
      : this.db.prepare(`${select} WHERE (collection_id, card_id) > (?, ?) ORDER BY collection_id, card_id LIMIT ?`).all(collectionId, cardId ?? '', limit + 1)) as { collection_id: string; card_id: string; created_at: string }[];
    const bookmarks = rows.map((r) => ({ collectionId: r.collection_id, cardId: r.card_id, createdAt: new Date(r.created_at) }));
    return pageOfRows(bookmarks, limit, (last) => `${last.collectionId} ${last.cardId}`);
  }

  private insertRow(c: Collection): void {
    this.db.prepare('INSERT INTO collections (id, author_id, name, description, is_public, file_id, idempotency_key, request_fingerprint, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(c.id, c.authorId, c.name, c.description, c.isPublic ? 1 : 0, c.fileId, c.idempotencyKey, c.requestFingerprint, iso(c.createdAt), iso(c.updatedAt));
  }
}
