import { AlreadyExistsError, appendToSqliteOutbox, creationCursor, keptKeyExpiry, pageOfRows, type KeptKeyExpiry, type OutgoingEvent, type Page, type SqliteDatabase } from '@cards/platform';
import type { Card, CardFingerprint, CollisionMove, DeletedIdempotencyKey } from '../../domain/model';
import { APPLIED_FILE_CHANGES_KEPT_MS, StaleCardError, type AppliedFileChange, type CardRepository, type CardUpdateOptions, type MovedCardEvents } from '../../domain/ports';
import { findDeletedIdempotencyKey, keepDeletedIdempotencyKey, type KeyOfDeleted } from './deleted-idempotency-keys';
import { cardFromRow, chunks, IN_CHUNK, placeholders, type CardRow } from './rows';
import { KEPT_COUNT_SQL } from './sqlite-cards-database';

const iso = (d: Date) => d.toISOString();

/**
 * The roots created since a time that a viewer may see, newest first (findRootsCreatedSince); `within` also bounds them
 * by an end. Each walks cards_recent_roots_order between its bounds and in its order, then stops at the limit. One
 * statement with `(? IS NULL OR created_at <= ?)` bounded nothing from above: a look-again resumed after a cut-off
 * create walked every root newer than its card, and sorted them by id.
 */
export const RECENT_ROOTS_SQL = {
  since: `SELECT * FROM cards WHERE collision_of IS NULL AND created_at >= ? AND (? IS NULL OR private = 0 OR author_id = ?)
            ORDER BY created_at DESC, id LIMIT ?`,
  within: `SELECT * FROM cards WHERE collision_of IS NULL AND created_at >= ? AND created_at <= ? AND (? IS NULL OR private = 0 OR author_id = ?)
             ORDER BY created_at DESC, id LIMIT ?`,
};

/**
 * The collisions of `roots` roots in their order, created_at then id (findCollisions, findCollisionsPage). For one root
 * (reading a card's collisions) they are read from cards_collisions_order in that order, a page from its position
 * (`after`: a row value, a range of the index; `created_at > ? OR (created_at = ? AND id > ?)` walked the root's
 * collisions before it) up to the limit; several roots' are merged by a sort.
 */
export const COLLISIONS_SQL = {
  all: (roots: number) => `SELECT * FROM cards WHERE collision_of IN (${placeholders(roots)}) ORDER BY created_at, id`,
  page: (roots: number, after: boolean) =>
    `SELECT * FROM cards WHERE collision_of IN (${placeholders(roots)}) ${after ? 'AND (created_at, id) > (?, ?)' : ''} ORDER BY created_at, id LIMIT ?`,
};

/**
 * A user's cards page, newest change first (listByAuthor, countByAuthor): the owner's from cards_author_updated, anyone
 * else's from cards_author_public_updated (public cards only, so a deep page skips index entries without reading the
 * rows to test `private`), and the totals from author_card_counts (kept by triggers), not counted per request.
 */
export const AUTHOR_CARDS_SQL = {
  all: 'SELECT * FROM cards INDEXED BY cards_author_updated WHERE author_id = ? ORDER BY updated_at DESC, id LIMIT ? OFFSET ?',
  public: 'SELECT * FROM cards INDEXED BY cards_author_public_updated WHERE author_id = ? AND private = 0 ORDER BY updated_at DESC, id LIMIT ? OFFSET ?',
  count: 'SELECT cards, public_cards FROM author_card_counts WHERE author_id = ?',
};

/** Cards in the cards service's SQLite file (see openCardsDatabase). */
export class SqliteCardRepository implements CardRepository {
  /** `keyExpiry`: how long the keys of deleted resources are kept (IDEMPOTENCY_KEY_TTL_HOURS), and by which clock. */
  constructor(
    private readonly db: SqliteDatabase,
    private readonly keyExpiry: KeptKeyExpiry = keptKeyExpiry(),
  ) {
    // The file changes applied lately (noteFileChange): notes kept an hour, which nothing but this repository reads; made
    // here (IF NOT EXISTS) rather than by a migration, as an older release neither needs nor minds the table.
    this.db.exec(`CREATE TABLE IF NOT EXISTS applied_file_changes (file_id TEXT PRIMARY KEY, deleted INTEGER NOT NULL, private INTEGER NOT NULL,
                    owner_id TEXT NOT NULL, at TEXT NOT NULL) WITHOUT ROWID;
                  CREATE INDEX IF NOT EXISTS applied_file_changes_at ON applied_file_changes (at);`);
  }

  async findById(id: string): Promise<Card | null> {
    const row = this.db.prepare('SELECT * FROM cards WHERE id = ?').get(id) as CardRow | undefined;
    return row ? cardFromRow(row) : null;
  }

  async findByIds(ids: readonly string[]): Promise<Card[]> {
    const unique = [...new Set(ids)];
    return chunks(unique).flatMap((slice) => (this.db.prepare(`SELECT * FROM cards WHERE id IN (${placeholders(slice.length)})`).all(...slice) as CardRow[]).map(cardFromRow));
  }

  async findByIdempotencyKey(authorId: string, key: string): Promise<Card | null> {
    const row = this.db.prepare('SELECT * FROM cards WHERE author_id = ? AND idempotency_key = ?').get(authorId, key) as CardRow | undefined;
    return row ? cardFromRow(row) : null;
  }

  async findDeletedIdempotencyKey(authorId: string, key: string): Promise<DeletedIdempotencyKey | null> {
    return findDeletedIdempotencyKey(this.db, 'card', authorId, key, this.keyExpiry);
  }

  async findByContentHash(contentHash: string, limit: number): Promise<Card[]> {
    return (this.db.prepare('SELECT * FROM cards WHERE content_hash = ? ORDER BY created_at, id LIMIT ?').all(contentHash, limit) as CardRow[]).map(cardFromRow);
  }

  async findBySketch(sketch: readonly number[], minShared: number, limit: number): Promise<Card[]> {
    if (sketch.length === 0) return [];
    const rows = this.db.prepare(
        `SELECT c.* FROM (SELECT card_id, count(*) AS shared FROM card_sketch WHERE hash IN (${placeholders(sketch.length)})
           GROUP BY card_id HAVING shared >= ? ORDER BY shared DESC LIMIT ?) s JOIN cards c ON c.id = s.card_id ORDER BY s.shared DESC, c.created_at`,
      )
      .all(...sketch, minShared, limit) as CardRow[];
    return rows.map(cardFromRow);
  }

  async findUnindexedRoots(viewerId: string, since: Date, limit: number): Promise<Card[]> {
    const rows = this.db
      .prepare(
        `SELECT * FROM cards WHERE vector_point_id IS NULL AND collision_of IS NULL AND updated_at >= ? AND (private = 0 OR author_id = ?)
           ORDER BY updated_at DESC, id LIMIT ?`,
      )
      .all(since.toISOString(), viewerId, limit) as CardRow[];
    return rows.map(cardFromRow);
  }

  async findRootsCreatedSince(viewerId: string | null, since: Date, limit: number, until?: Date): Promise<Card[]> {
    const rows = (
      until === undefined
        ? this.db.prepare(RECENT_ROOTS_SQL.since).all(iso(since), viewerId, viewerId, limit)
        : this.db.prepare(RECENT_ROOTS_SQL.within).all(iso(since), iso(until), viewerId, viewerId, limit)
    ) as CardRow[];
    return rows.map(cardFromRow);
  }

  async findCollisions(rootIds: readonly string[]): Promise<Card[]> {
    const unique = [...new Set(rootIds)];
    const rows = chunks(unique).flatMap(
      (slice) => this.db.prepare(COLLISIONS_SQL.all(slice.length)).all(...slice) as CardRow[],
    );
    return rows.map(cardFromRow);
  }

  async findCollisionsPage(rootIds: readonly string[], limit: number, after?: string): Promise<Page<Card>> {
    const cursor = after === undefined ? undefined : creationCursor.parse(after);
    const positionArgs = cursor === undefined ? [] : [cursor.createdAt.toISOString(), cursor.id];
    const rows = chunks([...new Set(rootIds)]).flatMap(
      (slice) => this.db.prepare(COLLISIONS_SQL.page(slice.length, cursor !== undefined)).all(...slice, ...positionArgs, limit + 1) as CardRow[],
    );
    // More roots than one statement takes come back slice by slice, each in order.
    if (rootIds.length > IN_CHUNK) rows.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1));
    return pageOfRows(rows.slice(0, limit + 1).map(cardFromRow), limit, creationCursor.after);
  }

  async findByFile(fileId: string): Promise<Card[]> {
    return (this.db.prepare('SELECT * FROM cards WHERE file_id = ? ORDER BY created_at, id').all(fileId) as CardRow[]).map(cardFromRow);
  }

  async insert(card: Card, fingerprint: CardFingerprint, events: OutgoingEvent[]): Promise<void> {
    try {
      this.db.transaction(() => {
        this.db.prepare(
            `INSERT INTO cards (id, author_id, content, card_html, link, private, hidden_by_file, tags, file_id, file_name, file_private, oc_file_path, vector_point_id,
               verification_score, verified_at, collision_of, total_upvotes, total_downvotes, idempotency_key, request_fingerprint, content_hash, created_at, updated_at, look_again_owed)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
          )
          .run(
            card.id,
            card.authorId,
            card.content,
            card.cardHtml,
            card.link,
            card.private ? 1 : 0,
            card.hiddenByFile ? 1 : 0,
            JSON.stringify(card.tags),
            card.fileId,
            card.fileName,
            card.filePrivate ? 1 : 0,
            card.ocFilePath,
            card.vectorPointId,
            card.verificationScore,
            card.verifiedAt ? iso(card.verifiedAt) : null,
            card.collisionOf,
            card.totalUpvotes,
            card.totalDownvotes,
            card.idempotencyKey,
            card.requestFingerprint,
            fingerprint.contentHash,
            iso(card.createdAt),
            iso(card.updatedAt),
          );
        this.writeSketch(card.id, fingerprint.sketch);
        appendToSqliteOutbox(this.db, events);
      })();
    } catch (err) {
      // Checked by code, not instanceof: the native module's error class may come from another realm (test sandboxes).
      const unique = (err as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_UNIQUE';
      if (unique && card.idempotencyKey !== null && (await this.findByIdempotencyKey(card.authorId, card.idempotencyKey))) {
        throw new AlreadyExistsError('A card with this idempotency key already exists');
      }
      throw err;
    }
  }

  async findWithLookAgainOwed(cardId: string): Promise<Card | null> {
    const row = this.db.prepare('SELECT * FROM cards WHERE id = ? AND look_again_owed = 1').get(cardId) as CardRow | undefined;
    return row ? cardFromRow(row) : null;
  }

  async findCollisionsWithLookAgainOwed(limit: number): Promise<Card[]> {
    const rows = this.db.prepare('SELECT * FROM cards WHERE look_again_owed = 1 AND collision_of IS NOT NULL ORDER BY created_at, id LIMIT ?').all(limit) as CardRow[];
    return rows.map(cardFromRow);
  }

  async clearLookAgainOwed(cardId: string): Promise<void> {
    this.db.prepare('UPDATE cards SET look_again_owed = 0 WHERE id = ? AND look_again_owed = 1').run(cardId);
  }

  async update(card: Card, fingerprint: CardFingerprint | null, events: OutgoingEvent[], { moves = [], ifUpdatedAt, becomesRoot = false, clearVerification = false }: CardUpdateOptions = {}): Promise<void> {
    this.db.transaction(() => {
      const before = this.db.prepare('SELECT author_id, private, total_upvotes, total_downvotes, updated_at FROM cards WHERE id = ?').get(card.id) as
        | { author_id: string; private: number; total_upvotes: number; total_downvotes: number; updated_at: string }
        | undefined;
      if (ifUpdatedAt && before?.updated_at !== iso(ifUpdatedAt)) throw new StaleCardError(card.id);
      if (before && (before.private === 1) !== card.private && before.total_upvotes + before.total_downvotes > 0) {
        // The card's votes enter (made public) or leave (made private) what others see of its author's votes.
        const sign = card.private ? -1 : 1;
        this.db.prepare('UPDATE author_scores SET public_upvotes = public_upvotes + ?, public_downvotes = public_downvotes + ? WHERE user_id = ?')
          .run(sign * before.total_upvotes, sign * before.total_downvotes, before.author_id);
      }
      this.db.prepare('UPDATE cards SET content = ?, card_html = ?, link = ?, private = ?, hidden_by_file = ?, tags = ?, updated_at = ? WHERE id = ?')
        .run(card.content, card.cardHtml, card.link, card.private ? 1 : 0, card.hiddenByFile ? 1 : 0, JSON.stringify(card.tags), iso(card.updatedAt), card.id);
      if (fingerprint) {
        this.db.prepare('UPDATE cards SET content_hash = ? WHERE id = ?').run(fingerprint.contentHash, card.id);
        this.db.prepare('DELETE FROM card_sketch WHERE card_id = ?').run(card.id);
        this.writeSketch(card.id, fingerprint.sketch);
      }
      if (becomesRoot) this.db.prepare('UPDATE cards SET collision_of = NULL, vector_point_id = NULL WHERE id = ? AND collision_of IS NOT NULL').run(card.id);
      if (clearVerification) this.db.prepare('UPDATE cards SET verification_score = NULL, verified_at = NULL WHERE id = ?').run(card.id);
      this.applyMoves(card.id, moves);
      appendToSqliteOutbox(this.db, events);
    })();
  }

  async remove(cardId: string, moves: readonly CollisionMove[], events: OutgoingEvent[]): Promise<boolean> {
    return this.db.transaction((): boolean => {
      const card = this.db.prepare('SELECT author_id, private, idempotency_key, request_fingerprint FROM cards WHERE id = ?').get(cardId) as (KeyOfDeleted & { private: number }) | undefined;
      if (!card) return false;
      keepDeletedIdempotencyKey(this.db, 'card', card, this.keyExpiry);
      const totals = this.db.prepare('SELECT coalesce(sum(value), 0) AS up, coalesce(sum(1 - value), 0) AS down FROM votes WHERE card_id = ?').get(cardId) as { up: number; down: number };
      if (totals.up + totals.down > 0) {
        const shown = card.private === 1 ? 0 : 1;
        this.db.prepare('UPDATE author_scores SET upvotes = upvotes - ?, downvotes = downvotes - ?, public_upvotes = public_upvotes - ?, public_downvotes = public_downvotes - ? WHERE user_id = ?')
          .run(totals.up, totals.down, shown * totals.up, shown * totals.down, card.author_id);
      }
      this.db.prepare('DELETE FROM votes WHERE card_id = ?').run(cardId);
      this.db.prepare('DELETE FROM bookmarks WHERE card_id = ?').run(cardId);
      this.db.prepare('DELETE FROM card_sketch WHERE card_id = ?').run(cardId);
      this.db.prepare('DELETE FROM cards WHERE id = ?').run(cardId);
      this.applyMoves(cardId, moves);
      appendToSqliteOutbox(this.db, events);
      return true;
    })();
  }

  async detachCollision(cardId: string, rootId: string, events: OutgoingEvent[]): Promise<boolean> {
    return this.db.transaction((): boolean => {
      const changed = this.db.prepare('UPDATE cards SET collision_of = NULL, vector_point_id = NULL WHERE id = ? AND collision_of = ?').run(cardId, rootId).changes > 0;
      if (changed) appendToSqliteOutbox(this.db, events);
      return changed;
    })();
  }

  async joinRoot(cardId: string, rootId: string, ifUpdatedAt: Date, at: Date, eventsOf: MovedCardEvents): Promise<boolean> {
    if (cardId === rootId) return false;
    return this.db.transaction((): boolean => {
      if (!this.db.prepare('SELECT 1 FROM cards WHERE id = ? AND collision_of IS NULL').get(rootId)) return false;
      const joined = this.db.prepare('UPDATE cards SET collision_of = ?, vector_point_id = NULL, updated_at = ? WHERE id = ? AND collision_of IS NULL AND updated_at = ?')
        .run(rootId, iso(at), cardId, iso(ifUpdatedAt)).changes > 0;
      if (!joined) return false;
      const moved = this.moveCollisionsNow(cardId, rootId);
      appendToSqliteOutbox(this.db, this.eventsOfMoved([cardId, ...moved], eventsOf));
      return true;
    })();
  }

  async moveCollisions(fromRootId: string, toRootId: string, eventsOf: MovedCardEvents): Promise<number> {
    return this.db.transaction((): number => {
      const moved = this.moveCollisionsNow(fromRootId, toRootId);
      appendToSqliteOutbox(this.db, this.eventsOfMoved(moved, eventsOf));
      return moved.length;
    })();
  }

  async listByAuthor(authorId: string, includePrivate: boolean, offset: number, limit: number): Promise<Card[]> {
    const rows = this.db.prepare(includePrivate ? AUTHOR_CARDS_SQL.all : AUTHOR_CARDS_SQL.public).all(authorId, limit, offset) as CardRow[];
    return rows.map(cardFromRow);
  }

  async countByAuthor(authorId: string, includePrivate: boolean): Promise<number> {
    const row = this.db.prepare(AUTHOR_CARDS_SQL.count).get(authorId) as { cards: number; public_cards: number } | undefined;
    return (includePrivate ? row?.cards : row?.public_cards) ?? 0;
  }

  async count(): Promise<number> {
    return (this.db.prepare(KEPT_COUNT_SQL).get('cards') as { n: number }).n;
  }

  async pageAll(limit: number, after?: string): Promise<Page<Card>> {
    const rows = (after === undefined
      ? this.db.prepare('SELECT * FROM cards ORDER BY id LIMIT ?').all(limit + 1)
      : this.db.prepare('SELECT * FROM cards WHERE id > ? ORDER BY id LIMIT ?').all(after, limit + 1)) as CardRow[];
    return pageOfRows(rows.map(cardFromRow), limit, (last) => last.id);
  }

  async setVectorPointId(cardId: string, vectorPointId: string): Promise<boolean> {
    return this.db.prepare('UPDATE cards SET vector_point_id = ? WHERE id = ? AND collision_of IS NULL AND vector_point_id IS NOT ?').run(vectorPointId, cardId, vectorPointId).changes > 0;
  }

  async setVerification(cardId: string, score: number, at: Date, link: string, events: readonly OutgoingEvent[] = [], content?: string): Promise<boolean> {
    return this.db.transaction((): boolean => {
      const kept =
        this.db
          .prepare("UPDATE cards SET verification_score = ?, verified_at = ? WHERE id = ? AND (verified_at IS NULL OR verified_at <= ?) AND (? = '' OR link = ?) AND (? IS NULL OR content = ?)")
          .run(score, iso(at), cardId, iso(at), link, link, content ?? null, content ?? null).changes > 0;
      if (kept) appendToSqliteOutbox(this.db, events);
      return kept;
    })();
  }

  async clearFileReferences(fileId: string, exceptAuthorId?: string): Promise<void> {
    if (exceptAuthorId !== undefined) {
      this.db.prepare('UPDATE cards SET file_id = NULL, file_name = NULL WHERE file_id = ? AND author_id <> ?').run(fileId, exceptAuthorId);
      return;
    }
    this.db.transaction(() => {
      this.db.prepare('UPDATE cards SET file_id = NULL, file_name = NULL WHERE file_id = ?').run(fileId);
      this.db.prepare('UPDATE collections SET file_id = NULL WHERE file_id = ?').run(fileId);
    })();
  }

  async clearFileReferenceOf(cardId: string, fileId: string): Promise<void> {
    this.db.prepare('UPDATE cards SET file_id = NULL, file_name = NULL WHERE id = ? AND file_id = ?').run(cardId, fileId);
  }

  async noteFileChange(fileId: string, change: AppliedFileChange): Promise<void> {
    this.db.transaction(() => {
      this.db.prepare(
          `INSERT INTO applied_file_changes (file_id, deleted, private, owner_id, at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (file_id) DO UPDATE SET deleted = max(deleted, excluded.deleted), private = excluded.private, owner_id = excluded.owner_id, at = excluded.at`,
        )
        .run(fileId, change.deleted ? 1 : 0, change.private ? 1 : 0, change.ownerId, iso(change.at));
      this.db.prepare('DELETE FROM applied_file_changes WHERE at < ?').run(iso(new Date(change.at.getTime() - APPLIED_FILE_CHANGES_KEPT_MS)));
    })();
  }

  async fileChangeSince(fileId: string, since: Date): Promise<AppliedFileChange | null> {
    const row = this.db.prepare('SELECT deleted, private, owner_id, at FROM applied_file_changes WHERE file_id = ? AND at >= ?').get(fileId, iso(since)) as
      | { deleted: number; private: number; owner_id: string; at: string }
      | undefined;
    return row ? { deleted: row.deleted === 1, private: row.private === 1, ownerId: row.owner_id, at: new Date(row.at) } : null;
  }

  async setFilePrivacy(fileId: string, isPrivate: boolean): Promise<void> {
    this.db.prepare('UPDATE cards SET file_private = ? WHERE file_id = ? AND file_private <> ?').run(isPrivate ? 1 : 0, fileId, isPrivate ? 1 : 0);
  }

  /** Collisions of `rootId` leave it: to another root, or (collisionOf null) as roots of their own. */
  private applyMoves(rootId: string, moves: readonly CollisionMove[]): void {
    for (const move of moves) {
      if (move.collisionOf === null) this.db.prepare('UPDATE cards SET collision_of = NULL, vector_point_id = NULL WHERE id = ? AND collision_of = ?').run(move.cardId, rootId);
      else this.db.prepare('UPDATE cards SET collision_of = ? WHERE id = ? AND collision_of = ?').run(move.collisionOf, move.cardId, rootId);
    }
  }

  /** Inside a transaction: the collisions of fromRootId go under toRootId; answers their ids, oldest first. */
  private moveCollisionsNow(fromRootId: string, toRootId: string): string[] {
    const ids = (this.db.prepare('SELECT id FROM cards WHERE collision_of = ? ORDER BY created_at, id').all(fromRootId) as { id: string }[]).map((r) => r.id);
    this.db.prepare('UPDATE cards SET collision_of = ? WHERE collision_of = ?').run(toRootId, fromRootId);
    return ids;
  }

  private eventsOfMoved(cardIds: readonly string[], eventsOf: MovedCardEvents): OutgoingEvent[] {
    const collectionsOf = this.db.prepare('SELECT collection_id FROM bookmarks WHERE card_id = ? ORDER BY collection_id');
    return cardIds.flatMap((id) => {
      const row = this.db.prepare('SELECT * FROM cards WHERE id = ?').get(id) as CardRow;
      return eventsOf(cardFromRow(row), (collectionsOf.all(id) as { collection_id: string }[]).map((r) => r.collection_id));
    });
  }

  private writeSketch(cardId: string, sketch: readonly number[]): void {
    const insert = this.db.prepare('INSERT OR IGNORE INTO card_sketch (hash, card_id) VALUES (?, ?)');
    for (const h of sketch) insert.run(h, cardId);
  }
}
