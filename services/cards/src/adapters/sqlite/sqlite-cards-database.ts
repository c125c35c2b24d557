import { openSqlite, SQLITE_OUTBOX_MIGRATION, type SqliteDatabase } from '@cards/platform';
import { BOOKMARK_BLOCK } from '../../domain/ports';

/** The next change number of a collection's kept counts (bookmark_block_changes), as an SQL expression. */
const nextSeq = (collection: string) => `(SELECT coalesce(max(seq), 0) + 1 FROM bookmark_block_changes WHERE collection_id = ${collection})`;

/** Marks the block of one bookmark order as changed (trigger body statement). */
function markBlock(collection: string, ord: string): string {
  return `INSERT INTO bookmark_block_changes (collection_id, block, seq) VALUES (${collection}, ${ord} / ${BOOKMARK_BLOCK}, ${nextSeq(collection)})
     ON CONFLICT (collection_id, block) DO UPDATE SET seq = excluded.seq;`;
}

/**
 * Marks as changed the blocks of every bookmark of the group of `root` (the root and its collisions) and of `card`,
 * in `collection` or in every collection (trigger body statement): a change of one card can move the first visible
 * bookmark of its group anywhere among them, and nowhere else.
 */
function markGroupBlocks(root: string, card: string, collection?: string): string {
  return `INSERT INTO bookmark_block_changes (collection_id, block, seq)
       SELECT b.collection_id, b.ord / ${BOOKMARK_BLOCK}, ${nextSeq('b.collection_id')} FROM bookmarks b
       WHERE b.card_id IN (SELECT ${root} UNION SELECT ${card} UNION SELECT id FROM cards WHERE collision_of = ${root})${collection ? ` AND b.collection_id = ${collection}` : ''}
     ON CONFLICT (collection_id, block) DO UPDATE SET seq = excluded.seq;`;
}

/** The cards service's own SQLite schema: cards, duplicate sketches, votes, author counters, collections, bookmarks, outbox. */
export const CARDS_MIGRATIONS = [
  `CREATE TABLE cards (
     id TEXT PRIMARY KEY, author_id TEXT NOT NULL, content TEXT NOT NULL, card_html TEXT NOT NULL, link TEXT NOT NULL,
     private INTEGER NOT NULL, tags TEXT NOT NULL, file_id TEXT, file_name TEXT, oc_file_path TEXT,
     vector_point_id TEXT, verification_score REAL, verified_at TEXT, collision_of TEXT,
     total_upvotes INTEGER NOT NULL DEFAULT 0, total_downvotes INTEGER NOT NULL DEFAULT 0,
     idempotency_key TEXT, content_hash TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
   CREATE INDEX cards_author_updated ON cards(author_id, updated_at DESC, id);
   CREATE INDEX cards_content_hash ON cards(content_hash);
   CREATE INDEX cards_collision_of ON cards(collision_of) WHERE collision_of IS NOT NULL;
   CREATE INDEX cards_file ON cards(file_id) WHERE file_id IS NOT NULL;
   CREATE UNIQUE INDEX cards_idempotency ON cards(author_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
   CREATE TABLE card_sketch (hash INTEGER NOT NULL, card_id TEXT NOT NULL, PRIMARY KEY (hash, card_id)) WITHOUT ROWID;
   CREATE INDEX card_sketch_card ON card_sketch(card_id);
   CREATE TABLE votes (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, card_id TEXT NOT NULL, value INTEGER NOT NULL,
     created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE (user_id, card_id));
   CREATE INDEX votes_card ON votes(card_id);
   CREATE TABLE author_scores (user_id TEXT PRIMARY KEY, upvotes INTEGER NOT NULL DEFAULT 0, downvotes INTEGER NOT NULL DEFAULT 0, joined_at TEXT);
   CREATE INDEX author_scores_rank ON author_scores((upvotes - downvotes) DESC, joined_at, user_id);
   CREATE TABLE collections (id TEXT PRIMARY KEY, author_id TEXT NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL,
     is_public INTEGER NOT NULL, file_id TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
   CREATE INDEX collections_author ON collections(author_id, created_at DESC);
   CREATE UNIQUE INDEX collections_file ON collections(file_id) WHERE file_id IS NOT NULL;
   CREATE TABLE bookmarks (collection_id TEXT NOT NULL, card_id TEXT NOT NULL, ord INTEGER NOT NULL, created_at TEXT NOT NULL,
     PRIMARY KEY (collection_id, card_id)) WITHOUT ROWID;
   CREATE INDEX bookmarks_order ON bookmarks(collection_id, ord);
   CREATE INDEX bookmarks_card ON bookmarks(card_id);`,
  SQLITE_OUTBOX_MIGRATION,
  // Votes on public cards, counted apart: what others see of an author's received votes, and what ranks them.
  `ALTER TABLE author_scores ADD COLUMN public_upvotes INTEGER NOT NULL DEFAULT 0;
   ALTER TABLE author_scores ADD COLUMN public_downvotes INTEGER NOT NULL DEFAULT 0;
   UPDATE author_scores SET
     public_upvotes = coalesce((SELECT sum(total_upvotes) FROM cards WHERE cards.author_id = author_scores.user_id AND cards.private = 0), 0),
     public_downvotes = coalesce((SELECT sum(total_downvotes) FROM cards WHERE cards.author_id = author_scores.user_id AND cards.private = 0), 0);
   DROP INDEX author_scores_rank;
   CREATE INDEX author_scores_public_rank ON author_scores((public_upvotes - public_downvotes) DESC, joined_at, user_id);`,
  // Cards a private file hid (Card.hiddenByFile). Of the cards stored before, only those that ingestion made private
  // from a private file (its idempotency key `<file id>:<n>`) and that never changed since are surely the file's doing;
  // any other private card may be its owner's choice, so it stays private when the file is made public.
  `ALTER TABLE cards ADD COLUMN hidden_by_file INTEGER NOT NULL DEFAULT 0;
   UPDATE cards SET hidden_by_file = 1
     WHERE private = 1 AND file_id IS NOT NULL AND substr(idempotency_key, 1, length(file_id) + 1) = file_id || ':' AND updated_at = created_at;`,
  // Roots search has not indexed yet, newest change first: the duplicate check compares a new card with them too.
  `CREATE INDEX cards_unindexed_roots ON cards(updated_at DESC) WHERE vector_point_id IS NULL AND collision_of IS NULL;`,
  // Each bookmark's collection owner (a collection never changes owner), so the bookmark lookup reads only the
  // caller's bookmarks of a card, not everyone's. (card_id, owner_id) also serves every lookup by card alone.
  `ALTER TABLE bookmarks ADD COLUMN owner_id TEXT NOT NULL DEFAULT '';
   UPDATE bookmarks SET owner_id = coalesce((SELECT author_id FROM collections WHERE collections.id = bookmarks.collection_id), '');
   CREATE INDEX bookmarks_card_owner ON bookmarks(card_id, owner_id);
   DROP INDEX bookmarks_card;`,
  // Roots newest first: a new root looks for the ones created while its duplicate check ran.
  `CREATE INDEX cards_recent_roots ON cards(created_at DESC) WHERE collision_of IS NULL;`,
  // A card whose create has not finished its look-again after the insert (CardService.lookAgain); cards stored before owe none.
  `ALTER TABLE cards ADD COLUMN look_again_owed INTEGER NOT NULL DEFAULT 0;
   CREATE INDEX cards_look_again_owed ON cards(created_at, id) WHERE look_again_owed = 1;`,
  // A client's Idempotency-Key on a collection's create (per author, as on cards; collections stored before have none),
  // and the keys of deleted resources (kind 'collection'), which a late repeat of their create finds instead of nothing.
  `ALTER TABLE collections ADD COLUMN idempotency_key TEXT;
   CREATE UNIQUE INDEX collections_idempotency ON collections(author_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
   CREATE TABLE deleted_idempotency_keys (kind TEXT NOT NULL, author_id TEXT NOT NULL, idempotency_key TEXT NOT NULL, deleted_at TEXT NOT NULL,
     PRIMARY KEY (kind, author_id, idempotency_key)) WITHOUT ROWID;`,
  // The fingerprint of the client's request that carried a key: a key sent again with another request is refused.
  // Rows stored before have none and match any request.
  `ALTER TABLE cards ADD COLUMN request_fingerprint TEXT;
   ALTER TABLE collections ADD COLUMN request_fingerprint TEXT;
   ALTER TABLE deleted_idempotency_keys ADD COLUMN request_fingerprint TEXT;`,
  // Whether a card's file is private (Card.filePrivate). Cards stored before learn it from their file's collection, which
  // follows the file's privacy, else from their hidden-by-file mark; the others read as public until the file's next change.
  `ALTER TABLE cards ADD COLUMN file_private INTEGER NOT NULL DEFAULT 0;
   UPDATE cards SET file_private = coalesce((SELECT 1 - is_public FROM collections WHERE collections.file_id = cards.file_id), hidden_by_file)
     WHERE file_id IS NOT NULL;`,
  // Work done once after the service reaches its peers (OneTimeTasks): the name of each task done.
  `CREATE TABLE one_time_tasks (name TEXT PRIMARY KEY, done_at TEXT NOT NULL);`,
  // Top users (RANKED_AUTHORS_SQL), ranked authors only: a page is read in ranking order from the index (the older one
  // lacked the `joined_at IS NULL` term, so every page sorted all authors of each score down to it), and the authors
  // still waiting for their join date, looked for on every request, come from an index that holds only them (it was a
  // scan of all authors).
  `CREATE INDEX author_scores_ranking ON author_scores((public_upvotes - public_downvotes) DESC, joined_at IS NULL, joined_at, user_id)
     WHERE public_upvotes + public_downvotes > 0;
   CREATE INDEX author_scores_join_unknown ON author_scores(user_id) WHERE joined_at IS NULL AND public_upvotes + public_downvotes > 0;
   DROP INDEX author_scores_public_rank;`,
  // Roots newest first, then by id (RECENT_ROOTS_SQL): the id tiebreak is read from the index, not sorted apart. It
  // serves every read cards_recent_roots served.
  `CREATE INDEX cards_recent_roots_order ON cards(created_at DESC, id) WHERE collision_of IS NULL;
   DROP INDEX cards_recent_roots;`,
  // How many roots a viewer may see in a collection (countVisibleBookmarkedRoots; viewer_id '' for anyone), kept once
  // counted. Any change that can alter a count forgets the collection's counts: a bookmark added, moved or removed, a
  // bookmarked card's privacy, author or root changed or the card deleted, the collection deleted. Before, every
  // collection page counted the distinct roots of all its bookmarks again. cards_visibility covers the card columns the
  // collection page reads per bookmark (VISIBLE_BOOKMARKED_ROOTS_SQL), without reading the card's row.
  `CREATE INDEX cards_visibility ON cards(id, collision_of, private, author_id);
   CREATE TABLE bookmark_root_counts (collection_id TEXT NOT NULL, viewer_id TEXT NOT NULL, n INTEGER NOT NULL,
     PRIMARY KEY (collection_id, viewer_id)) WITHOUT ROWID;
   CREATE TRIGGER bookmark_root_counts_added AFTER INSERT ON bookmarks BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id = NEW.collection_id;
   END;
   CREATE TRIGGER bookmark_root_counts_removed AFTER DELETE ON bookmarks BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id = OLD.collection_id;
   END;
   CREATE TRIGGER bookmark_root_counts_moved AFTER UPDATE OF collection_id, card_id ON bookmarks BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id IN (OLD.collection_id, NEW.collection_id);
   END;
   CREATE TRIGGER bookmark_root_counts_card_changed AFTER UPDATE OF id, private, author_id, collision_of ON cards
     WHEN OLD.id IS NOT NEW.id OR OLD.private IS NOT NEW.private OR OLD.author_id IS NOT NEW.author_id OR OLD.collision_of IS NOT NEW.collision_of BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id IN (SELECT collection_id FROM bookmarks WHERE card_id IN (OLD.id, NEW.id));
   END;
   CREATE TRIGGER bookmark_root_counts_card_deleted AFTER DELETE ON cards BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id IN (SELECT collection_id FROM bookmarks WHERE card_id = OLD.id);
   END;
   CREATE TRIGGER bookmark_root_counts_collection_deleted AFTER DELETE ON collections BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id = OLD.id;
   END;`,
  // With the count, where every 50th root's first bookmark is (JSON [ord, card_id] pairs), so a collection page
  // starts near its place instead of walking all the roots before it. Rows without it are counted again.
  `ALTER TABLE bookmark_root_counts ADD COLUMN starts TEXT;`,
  // Kept keys of deleted resources expire (IDEMPOTENCY_KEY_TTL_HOURS): each deletion that keeps one removes the oldest
  // expired ones, found by their time.
  `CREATE INDEX deleted_idempotency_keys_deleted_at ON deleted_idempotency_keys(deleted_at);`,
  // Kept collection counts are mended, not forgotten: a change marks the blocks of BOOKMARK_BLOCK bookmark orders that
  // hold a bookmark of any card group it touched (bookmark_block_changes, with a sequence number per collection), and
  // a viewer's kept count per block (bookmark_root_counts.blocks) is counted again only for the blocks marked since it
  // was kept (seq). Before, any change forgot every viewer's count, and the next page read the whole collection.
  `DROP TRIGGER bookmark_root_counts_added;
   DROP TRIGGER bookmark_root_counts_removed;
   DROP TRIGGER bookmark_root_counts_moved;
   DROP TRIGGER bookmark_root_counts_card_changed;
   DROP TRIGGER bookmark_root_counts_card_deleted;
   DROP TRIGGER bookmark_root_counts_collection_deleted;
   DROP TABLE bookmark_root_counts;
   CREATE TABLE bookmark_root_counts (collection_id TEXT NOT NULL, viewer_id TEXT NOT NULL, n INTEGER NOT NULL, blocks TEXT NOT NULL,
     seq INTEGER NOT NULL, PRIMARY KEY (collection_id, viewer_id)) WITHOUT ROWID;
   CREATE TABLE bookmark_block_changes (collection_id TEXT NOT NULL, block INTEGER NOT NULL, seq INTEGER NOT NULL,
     PRIMARY KEY (collection_id, block)) WITHOUT ROWID;
   CREATE INDEX bookmark_block_changes_seq ON bookmark_block_changes(collection_id, seq);
   CREATE TRIGGER bookmark_blocks_added AFTER INSERT ON bookmarks BEGIN
     ${markGroupBlocks('(SELECT coalesce(collision_of, id) FROM cards WHERE id = NEW.card_id)', 'NEW.card_id', 'NEW.collection_id')}
   END;
   CREATE TRIGGER bookmark_blocks_removed AFTER DELETE ON bookmarks BEGIN
     ${markBlock('OLD.collection_id', 'OLD.ord')}
     ${markGroupBlocks('(SELECT coalesce(collision_of, id) FROM cards WHERE id = OLD.card_id)', 'OLD.card_id', 'OLD.collection_id')}
   END;
   CREATE TRIGGER bookmark_blocks_moved AFTER UPDATE OF collection_id, card_id, ord ON bookmarks BEGIN
     ${markBlock('OLD.collection_id', 'OLD.ord')}
     ${markGroupBlocks('(SELECT coalesce(collision_of, id) FROM cards WHERE id = OLD.card_id)', 'OLD.card_id', 'OLD.collection_id')}
     ${markGroupBlocks('(SELECT coalesce(collision_of, id) FROM cards WHERE id = NEW.card_id)', 'NEW.card_id', 'NEW.collection_id')}
   END;
   CREATE TRIGGER bookmark_blocks_card_changed AFTER UPDATE OF id, private, author_id, collision_of ON cards
     WHEN OLD.id IS NOT NEW.id OR OLD.private IS NOT NEW.private OR OLD.author_id IS NOT NEW.author_id OR OLD.collision_of IS NOT NEW.collision_of BEGIN
     ${markGroupBlocks('coalesce(OLD.collision_of, OLD.id)', 'OLD.id')}
     ${markGroupBlocks('coalesce(NEW.collision_of, NEW.id)', 'NEW.id')}
   END;
   CREATE TRIGGER bookmark_blocks_card_deleted AFTER DELETE ON cards BEGIN
     ${markGroupBlocks('coalesce(OLD.collision_of, OLD.id)', 'OLD.id')}
   END;
   CREATE TRIGGER bookmark_blocks_collection_deleted AFTER DELETE ON collections BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id = OLD.id;
     DELETE FROM bookmark_block_changes WHERE collection_id = OLD.id;
   END;`,
  // Kept counts (KEPT_COUNT_SQL): all cards (GET /api/card/count) and the ranked authors (total_user_pages of every
  // GET /api/top_users/:page), counted once here and then kept by triggers in each change's own transaction. Before,
  // each request counted them again: a walk of a whole index, linear in the library (docs/benchmarks.md, "Read routes
  // and the size of the library").
  `CREATE TABLE kept_counts (name TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
   INSERT INTO kept_counts (name, n) VALUES ('cards', (SELECT count(*) FROM cards)),
     ('ranked_authors', (SELECT count(*) FROM author_scores WHERE public_upvotes + public_downvotes > 0));
   CREATE TRIGGER kept_counts_card_added AFTER INSERT ON cards BEGIN
     UPDATE kept_counts SET n = n + 1 WHERE name = 'cards';
   END;
   CREATE TRIGGER kept_counts_card_removed AFTER DELETE ON cards BEGIN
     UPDATE kept_counts SET n = n - 1 WHERE name = 'cards';
   END;
   CREATE TRIGGER kept_counts_author_added AFTER INSERT ON author_scores WHEN NEW.public_upvotes + NEW.public_downvotes > 0 BEGIN
     UPDATE kept_counts SET n = n + 1 WHERE name = 'ranked_authors';
   END;
   CREATE TRIGGER kept_counts_author_changed AFTER UPDATE OF public_upvotes, public_downvotes ON author_scores
     WHEN (OLD.public_upvotes + OLD.public_downvotes > 0) <> (NEW.public_upvotes + NEW.public_downvotes > 0) BEGIN
     UPDATE kept_counts SET n = n + (CASE WHEN NEW.public_upvotes + NEW.public_downvotes > 0 THEN 1 ELSE -1 END) WHERE name = 'ranked_authors';
   END;
   CREATE TRIGGER kept_counts_author_removed AFTER DELETE ON author_scores WHEN OLD.public_upvotes + OLD.public_downvotes > 0 BEGIN
     UPDATE kept_counts SET n = n - 1 WHERE name = 'ranked_authors';
   END;`,
  // A root's collisions in their order (COLLISIONS_SQL: created_at, then id), read from the index a page at a time, and
  // a later page from its position. Before, reading a card's collisions sorted all of them (USE TEMP B-TREE FOR ORDER
  // BY) for every page. It serves every read by collision_of that cards_collision_of served.
  `CREATE INDEX cards_collisions_order ON cards(collision_of, created_at, id) WHERE collision_of IS NOT NULL;
   DROP INDEX cards_collision_of;`,
  // A rollback keeps working: the mended counts move to a table of their own (bookmark_block_counts), and
  // bookmark_root_counts is again the table releases before the mended counts read (n, starts), with their triggers,
  // which forget a collection's rows on any change (while this release runs, a delete by primary key prefix of an empty
  // table). The migration above that replaced it (columns n, blocks, seq) made every collection page of a release
  // before it fail ('no such column: starts'). Releases with that migration read blocks and seq: they stay as nullable
  // columns; a row an older release writes (blocks NULL) gets blocks '[]' (no block known: a page reads from the
  // first bookmark) at the collection's latest change number, which its triggers keep true until its next change.
  `CREATE TABLE bookmark_block_counts (collection_id TEXT NOT NULL, viewer_id TEXT NOT NULL, n INTEGER NOT NULL, blocks TEXT NOT NULL,
     seq INTEGER NOT NULL, PRIMARY KEY (collection_id, viewer_id)) WITHOUT ROWID;
   INSERT INTO bookmark_block_counts (collection_id, viewer_id, n, blocks, seq) SELECT collection_id, viewer_id, n, blocks, seq FROM bookmark_root_counts;
   DROP TRIGGER bookmark_blocks_collection_deleted;
   CREATE TRIGGER bookmark_blocks_collection_deleted AFTER DELETE ON collections BEGIN
     DELETE FROM bookmark_block_counts WHERE collection_id = OLD.id;
     DELETE FROM bookmark_block_changes WHERE collection_id = OLD.id;
   END;
   DROP TABLE bookmark_root_counts;
   CREATE TABLE bookmark_root_counts (collection_id TEXT NOT NULL, viewer_id TEXT NOT NULL, n INTEGER NOT NULL, starts TEXT,
     blocks TEXT, seq INTEGER, PRIMARY KEY (collection_id, viewer_id)) WITHOUT ROWID;
   CREATE TRIGGER bookmark_root_counts_added AFTER INSERT ON bookmarks BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id = NEW.collection_id;
   END;
   CREATE TRIGGER bookmark_root_counts_removed AFTER DELETE ON bookmarks BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id = OLD.collection_id;
   END;
   CREATE TRIGGER bookmark_root_counts_moved AFTER UPDATE OF collection_id, card_id, ord ON bookmarks BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id IN (OLD.collection_id, NEW.collection_id);
   END;
   CREATE TRIGGER bookmark_root_counts_card_changed AFTER UPDATE OF id, private, author_id, collision_of ON cards
     WHEN OLD.id IS NOT NEW.id OR OLD.private IS NOT NEW.private OR OLD.author_id IS NOT NEW.author_id OR OLD.collision_of IS NOT NEW.collision_of BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id IN (SELECT collection_id FROM bookmarks WHERE card_id IN (OLD.id, NEW.id));
   END;
   CREATE TRIGGER bookmark_root_counts_card_deleted AFTER DELETE ON cards BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id IN (SELECT collection_id FROM bookmarks WHERE card_id = OLD.id);
   END;
   CREATE TRIGGER bookmark_root_counts_collection_deleted AFTER DELETE ON collections BEGIN
     DELETE FROM bookmark_root_counts WHERE collection_id = OLD.id;
   END;
   CREATE TRIGGER bookmark_root_counts_without_blocks AFTER INSERT ON bookmark_root_counts WHEN NEW.blocks IS NULL OR NEW.seq IS NULL BEGIN
     UPDATE bookmark_root_counts SET blocks = '[]',
       seq = (SELECT coalesce(max(seq), 0) FROM bookmark_block_changes WHERE collection_id = NEW.collection_id)
     WHERE collection_id = NEW.collection_id AND viewer_id = NEW.viewer_id;
   END;`,
  // The search index rebuild under way (SqliteSearchIndexRebuildProgress, one row at most): where it is and who holds it,
  // so a rebuild cut short by a stop is resumed where it stopped.
  `CREATE TABLE search_index_rebuild (id INTEGER PRIMARY KEY CHECK (id = 1), run TEXT NOT NULL, reason TEXT NOT NULL,
     phase TEXT NOT NULL CHECK (phase IN ('cards', 'bookmarks')), after TEXT, holder TEXT NOT NULL, heartbeat_at TEXT NOT NULL,
     started_at TEXT NOT NULL);`,
  // A user's cards page (GET /api/user/:id/:page) for anyone but its owner reads the public cards alone: their own index
  // (partial, private = 0), so a page skips index entries only, and the totals of each author's cards and public cards
  // are kept (author_card_counts, by triggers in each change's transaction). Before, the page and its count read every
  // card row of the author to test `private` (an author of 20,000 cards: ~50 ms each for the last page and the count,
  // docs/benchmarks.md "Big accounts"). The triggers live in the file, so a release before this one keeps them true.
  `CREATE INDEX cards_author_public_updated ON cards(author_id, updated_at DESC, id) WHERE private = 0;
   CREATE TABLE author_card_counts (author_id TEXT PRIMARY KEY, cards INTEGER NOT NULL, public_cards INTEGER NOT NULL) WITHOUT ROWID;
   INSERT INTO author_card_counts (author_id, cards, public_cards) SELECT author_id, count(*), sum(private = 0) FROM cards GROUP BY author_id;
   CREATE TRIGGER author_card_counts_added AFTER INSERT ON cards BEGIN
     INSERT INTO author_card_counts (author_id, cards, public_cards) VALUES (NEW.author_id, 1, NEW.private = 0)
       ON CONFLICT (author_id) DO UPDATE SET cards = cards + 1, public_cards = public_cards + excluded.public_cards;
   END;
   CREATE TRIGGER author_card_counts_removed AFTER DELETE ON cards BEGIN
     UPDATE author_card_counts SET cards = cards - 1, public_cards = public_cards - (OLD.private = 0) WHERE author_id = OLD.author_id;
   END;
   CREATE TRIGGER author_card_counts_changed AFTER UPDATE OF private, author_id ON cards
     WHEN OLD.private IS NOT NEW.private OR OLD.author_id IS NOT NEW.author_id BEGIN
     UPDATE author_card_counts SET cards = cards - 1, public_cards = public_cards - (OLD.private = 0) WHERE author_id = OLD.author_id;
     INSERT INTO author_card_counts (author_id, cards, public_cards) VALUES (NEW.author_id, 1, NEW.private = 0)
       ON CONFLICT (author_id) DO UPDATE SET cards = cards + 1, public_cards = public_cards + excluded.public_cards;
   END;`,
  // A deleted collection's bookmarks go after its row, a chunk at a time (SqliteCollectionRepository.remove): the
  // collections whose bookmarks are still to be deleted, so a sweep cut short by a stop is finished at the next start.
  // Removing a bookmark of a collection already gone marks no block (its kept counts went with its row); before, the
  // marks of every bookmark's card group made the delete of a collection of 10,000 cards hold the thread ~0.4 s.
  `CREATE TABLE collection_bookmark_sweeps (collection_id TEXT PRIMARY KEY) WITHOUT ROWID;
   DROP TRIGGER bookmark_blocks_removed;
   CREATE TRIGGER bookmark_blocks_removed AFTER DELETE ON bookmarks WHEN EXISTS (SELECT 1 FROM collections WHERE id = OLD.collection_id) BEGIN
     ${markBlock('OLD.collection_id', 'OLD.ord')}
     ${markGroupBlocks('(SELECT coalesce(collision_of, id) FROM cards WHERE id = OLD.card_id)', 'OLD.card_id', 'OLD.collection_id')}
   END;`,
];

/** A kept count (kept_counts): 'cards' or 'ranked_authors'. One row read by its key, whatever the library's size. */
export const KEPT_COUNT_SQL = 'SELECT n FROM kept_counts WHERE name = ?';

export function openCardsDatabase(path: string): SqliteDatabase {
  return openSqlite(path, CARDS_MIGRATIONS);
}
