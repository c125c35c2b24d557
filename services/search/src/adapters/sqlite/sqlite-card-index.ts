import { openSqlite, type SqliteDatabase } from '@cards/platform';
import { isZeroVector, stopIfCancelled, type IndexedCard, type IndexHit, type IndexPage, type PageRequest, type SearchScope, type StoredCard, type StoredPoint } from '../../domain/model';
import type { CardIndex } from '../../domain/ports';
import { bestFormMatches, heldQueryWords, indexWords, isLongQuery, linkFilterForm, LONG_QUERY_MIN_SCORE, longQueryFloor, namesFloor, NAMING_MATCH, queryTerms, tagFilterForm, tellingTerms, textScoreFloor } from '../../domain/text';
import { Lexicon, PUBLIC, type Reader, type WordMatch } from './lexicon';
import { WordSequences, type Phrase } from './phrase';
import { TopK, VectorMatrix } from './vector-matrix';

const MIGRATIONS = [
  `CREATE TABLE cards (
     rowid INTEGER PRIMARY KEY,
     card_id TEXT NOT NULL UNIQUE,
     author_id TEXT NOT NULL,
     content TEXT NOT NULL,
     tags TEXT NOT NULL,
     link TEXT NOT NULL,
     private INTEGER NOT NULL,
     collision_of TEXT,
     vector BLOB NOT NULL,
     vector_point_id TEXT NOT NULL,
     updated_at INTEGER NOT NULL
   );
   CREATE TABLE removed_cards (card_id TEXT PRIMARY KEY, removed_at INTEGER NOT NULL);
   CREATE TABLE bookmarks (
     collection_id TEXT NOT NULL,
     card_id TEXT NOT NULL,
     added INTEGER NOT NULL,
     at INTEGER NOT NULL,
     PRIMARY KEY (collection_id, card_id)
   );
   CREATE INDEX bookmarks_by_card ON bookmarks (card_id);
   CREATE VIRTUAL TABLE card_text USING fts5(text, tokenize = 'trigram', content = '', contentless_delete = 1);`,
  `ALTER TABLE cards ADD COLUMN embedder TEXT NOT NULL DEFAULT '';`,
  // Phrases are matched in memory on each card's word sequence: the trigram table is no longer read.
  `DROP TABLE card_text;`,
  // Tag and link filters read the collisions of the roots they test.
  `CREATE INDEX cards_collisions ON cards (collision_of) WHERE collision_of IS NOT NULL;`,
  // The card's created_at, which breaks ties between equal scores (compareTies); NULL on rows stored before, until a reindex.
  `ALTER TABLE cards ADD COLUMN created_at INTEGER;`,
  // Order markers (tombstones, removed bookmarks) are forgotten once older than the event retention (pruneMarkers).
  `CREATE INDEX removed_cards_at ON removed_cards (removed_at);
   CREATE INDEX bookmarks_removed_at ON bookmarks (at) WHERE added = 0;`,
];

/**
 * A row here while the lost-index check of the start that created the index has not settled (lostIndexCheckSettled):
 * a search killed between creating its index and sending the rebuild request it decided on would otherwise open an
 * existing index at its next start and never ask again.
 */
const LOST_INDEX_CHECK_TABLE = 'CREATE TABLE lost_index_check_pending (pending INTEGER PRIMARY KEY CHECK (pending = 1))';

export interface SqliteCardIndexOptions {
  /** File path, or ':memory:'. */
  path: string;
  dimensions: number;
  /** The embedder that made the vectors; cards embedded by another one wait for refreshStaleVectors(). */
  embedderId?: string;
  /** Scopes up to this many cards are ranked by exact cosine over all of them. */
  exactScanLimit?: number;
  /** Least number of candidates the sign-code pass hands to exact ranking (also at least 8x what is asked for). */
  candidateFloor?: number;
  /** Full-text matches score at least this (word-similarity, 0..1). */
  minTextScore?: number;
  /**
   * Whether words too light to lift a card to minTextScore on their own only add to cards other words found (the
   * default); false makes every matching card a candidate, the same answer at the old cost (for measuring).
   */
  pruneTextCandidates?: boolean;
}

interface CardRow {
  rowid: number;
  card_id: string;
  author_id: string;
  content: string;
  tags: string;
  link: string;
  private: number;
  collision_of: string | null;
  vector: Buffer;
  vector_point_id: string;
  updated_at: number;
  created_at: number | null;
}

/**
 * A vocabulary word a query word matches; `unless`, the cards it does not count for (TermForm.unless: they hold another
 * of the query's names); `onlyWith`, when given, the only cards it counts for (TermForm.onlyWith: they name one of them).
 */
interface TermMatch extends WordMatch {
  unless?: ReadonlySet<number>;
  onlyWith?: ReadonlySet<number>;
}

/** A full-text query word: the vocabulary words it matches, and its idf weight. */
interface TextTerm {
  matches: TermMatch[];
  weight: number;
  /** The word's own id when the phrase check runs (every query word known). */
  exactId: number | undefined;
  /** The name written with signs the word looks for (QueryTerm.name), for namesFloor. */
  name: string | undefined;
}

/**
 * A collision (a card stored under the root it duplicates) as the tag and link filters and collection scopes read it:
 * it is shown inside its root's entry, so the entry matches through it, and a collection bookmarking it holds its
 * root, when the caller may see it.
 */
interface Collision {
  /** The root's card id (the root's own string when the root is in memory, so it is not held twice). */
  root: string;
  author: number;
  private: boolean;
  /** Lower-cased and trimmed, each tag string shared with every other collision holding it. */
  tags: string[];
  /** Lower-cased. */
  link: string;
}

/** Share of the full-text score given to holding the query's words in a row (its phrase). */
const PHRASE_WEIGHT = 0.15;

/**
 * The embedded search index: rows in SQLite (the durable truth), and, rebuilt from them at start, in-memory
 * structures that answer queries: a vector matrix with sign codes, a word lexicon with trigram-corrected
 * postings, and each card's word sequence for phrase matching.
 */
export class SqliteCardIndex implements CardIndex {
  private readonly db: SqliteDatabase;
  private readonly vectors: VectorMatrix;
  private readonly lexicon = new Lexicon();
  private readonly exactScanLimit: number;
  private readonly candidateFloor: number;
  private readonly minTextScore: number;
  private readonly pruneTextCandidates: boolean;
  private readonly embedderId: string;
  /** The in-memory structures are rebuilt in batches after construction, so a large index does not block start-up. */
  private readonly loaded: Promise<void>;
  /** Settles when the last search that asked for a scoring turn has had it (inScoringTurn). */
  private scoringTurns: Promise<void> = Promise.resolve();

  // Per slot (one per searchable root card).
  private slotCount = 0;
  private readonly freeSlots: number[] = [];
  private cardIds: (string | undefined)[] = [];
  private authors = new Int32Array(1024);
  private privates = new Uint8Array(1024);
  /** created_at in ms, -Infinity when not known: ties between equal scores are broken on it (rankTie). */
  private created = new Float64Array(1024);
  private tags: (string[] | undefined)[] = [];
  private links: string[] = [];
  private readonly slotWords = new WordSequences();
  /**
   * Per slot of a card with words of other forms (indexWords' extra: Korean words as written, Arabic and Hebrew words
   * without their prefixes, names written with signs such as c++ and node.js): their ids, listed beside slotWords.
   */
  private readonly slotExtraWords = new Map<number, Int32Array>();
  private readonly slotOf = new Map<string, number>();
  private readonly authorIds = new Map<string, number>();
  private readonly collections = new Map<string, Set<string>>();
  /** Collisions by card id: what tag and link filters and collection scopes need of them, so a query reads no row. */
  private readonly collisions = new Map<string, Collision>();
  /** One string per distinct collision tag. */
  private readonly collisionTags = new Map<string, string>();
  /** The tables were created when this instance opened the file. */
  private tablesCreated = false;
  private scratchBest = new Float32Array(1024);
  private scratchTotal = new Float32Array(1024);
  private scratchExact = new Uint8Array(1024);
  /** Slots scratchExact counted for a match that skipped them (TermMatch.unless), cleared after each query's scoring. */
  private scratchExactOutside: number[] = [];
  /** Per card, the weighted similarity of its naming matches (namesFloor), while a query of names is scored. */
  private scratchNamed = new Float32Array(1024);

  constructor(options: SqliteCardIndexOptions) {
    // The first step creates the tables: run now, this open made the index (a missing or empty file).
    this.db = openSqlite(options.path, [
      (db) => {
        db.exec(MIGRATIONS[0]!);
        this.tablesCreated = true;
      },
      ...MIGRATIONS.slice(1),
      // An index made by this open starts with its lost-index check pending; one that existed before has had its check.
      (db) => {
        db.exec(LOST_INDEX_CHECK_TABLE);
        if (this.tablesCreated) db.exec('INSERT INTO lost_index_check_pending (pending) VALUES (1)');
      },
    ]);
    this.vectors = new VectorMatrix(options.dimensions);
    this.exactScanLimit = options.exactScanLimit ?? 20_000;
    this.candidateFloor = options.candidateFloor ?? 3_000;
    this.minTextScore = options.minTextScore ?? 0.3;
    this.pruneTextCandidates = options.pruneTextCandidates ?? true;
    this.embedderId = options.embedderId ?? '';
    this.loaded = this.load();
    this.loaded.catch(() => undefined);
  }

  async upsert(card: IndexedCard): Promise<boolean> {
    await this.loaded;
    if (card.vector.length !== this.vectors.dimensions) throw new Error(`vector has ${card.vector.length} dimensions, the index ${this.vectors.dimensions}`);
    const at = card.updatedAt.getTime();
    // The created_at the card is ranked by (a snapshot without one keeps the stored one), or false when not applied.
    const applied = this.db.transaction((): number | null | false => {
      if (this.isRemoved(card.cardId)) return false;
      const existing = this.db.prepare('SELECT rowid, updated_at, created_at FROM cards WHERE card_id = ?').get(card.cardId) as Pick<CardRow, 'rowid' | 'updated_at' | 'created_at'> | undefined;
      if (existing && existing.updated_at > at) return false;
      const vector = Buffer.from(card.vector.buffer, card.vector.byteOffset, card.vector.byteLength);
      const values = [card.authorId, card.content, JSON.stringify(card.tags), card.link, card.private ? 1 : 0, card.collisionOf ?? null, vector, card.vectorPointId, at, this.embedderId, card.createdAt?.getTime() ?? null];
      if (existing) {
        // A snapshot without created_at (from a producer before it was sent) keeps the one stored.
        this.db.prepare('UPDATE cards SET author_id = ?, content = ?, tags = ?, link = ?, private = ?, collision_of = ?, vector = ?, vector_point_id = ?, updated_at = ?, embedder = ?, created_at = COALESCE(?, created_at) WHERE rowid = ?')
          .run(...values, existing.rowid);
        return card.createdAt?.getTime() ?? existing.created_at;
      }
      this.db.prepare('INSERT INTO cards (card_id, author_id, content, tags, link, private, collision_of, vector, vector_point_id, updated_at, embedder, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
        .run(card.cardId, ...values);
      return card.createdAt?.getTime() ?? null;
    })();
    if (applied === false) return false;
    this.unslot(card.cardId);
    this.collisions.delete(card.cardId);
    if (!card.collisionOf) this.slot(applied === null ? card : { ...card, createdAt: new Date(applied) });
    else this.keepCollision(card.cardId, card.collisionOf, card);
    return true;
  }

  async promote(cardId: string): Promise<boolean> {
    await this.loaded;
    const row = this.db.prepare('SELECT * FROM cards WHERE card_id = ?').get(cardId) as CardRow | undefined;
    if (!row) return false;
    if (row.collision_of === null) return true;
    this.db.prepare('UPDATE cards SET collision_of = NULL WHERE rowid = ?').run(row.rowid);
    this.collisions.delete(cardId);
    this.slot(fromRow({ ...row, collision_of: null }));
    return true;
  }

  async remove(cardId: string, removedAt: Date): Promise<void> {
    await this.loaded;
    // The collections holding the card, read through bookmarks_by_card: removal touches those only, not every collection.
    const holding = this.db.transaction(() => {
      this.db.prepare('DELETE FROM cards WHERE card_id = ?').run(cardId);
      this.db.prepare('INSERT OR IGNORE INTO removed_cards (card_id, removed_at) VALUES (?, ?)').run(cardId, removedAt.getTime());
      const rows = this.db.prepare('SELECT collection_id FROM bookmarks WHERE card_id = ? AND added = 1').all(cardId) as { collection_id: string }[];
      this.db.prepare('DELETE FROM bookmarks WHERE card_id = ?').run(cardId);
      return rows;
    })();
    this.collisions.delete(cardId);
    this.unslot(cardId);
    for (const { collection_id } of holding) this.applyBookmarkInMemory(collection_id, cardId, false);
  }

  async pruneMarkers(before: Date, limit: number): Promise<number> {
    await this.loaded;
    const at = before.getTime();
    // Removed bookmarks are not in memory (only added ones are): deleting their rows changes no search.
    return this.db.transaction(() => {
      const tombstones = this.db.prepare('DELETE FROM removed_cards WHERE card_id IN (SELECT card_id FROM removed_cards WHERE removed_at < ? LIMIT ?)').run(at, limit).changes;
      const bookmarks = this.db
        .prepare('DELETE FROM bookmarks WHERE rowid IN (SELECT rowid FROM bookmarks WHERE added = 0 AND at < ? LIMIT ?)')
        .run(at, Math.max(0, limit - tombstones)).changes;
      return tombstones + bookmarks;
    })();
  }

  /** Writes are searchable as soon as they return here: a batch is just its writes. */
  batch<T>(apply: () => Promise<T>): Promise<T> {
    return apply();
  }

  async setBookmark(collectionId: string, cardId: string, added: boolean, at: Date): Promise<void> {
    await this.loaded;
    const changed = this.db.transaction(() => !this.isRemoved(cardId) && this.writeBookmark(collectionId, cardId, added, at.getTime()))();
    if (changed) this.applyBookmarkInMemory(collectionId, cardId, added);
  }

  async get(cardId: string): Promise<StoredCard | undefined> {
    const row = this.db.prepare('SELECT * FROM cards WHERE card_id = ?').get(cardId) as CardRow | undefined;
    return row ? { ...fromRow(row), collectionIds: this.collectionIdsOf(cardId) } : undefined;
  }

  async vectorPointOf(cardId: string): Promise<StoredPoint | undefined> {
    const row = this.db.prepare('SELECT vector_point_id, collision_of FROM cards WHERE card_id = ?').get(cardId) as Pick<CardRow, 'vector_point_id' | 'collision_of'> | undefined;
    return row ? { vectorPointId: row.vector_point_id, ...(row.collision_of !== null ? { collisionOf: row.collision_of } : {}) } : undefined;
  }

  async contentOf(cardId: string): Promise<string | undefined> {
    const row = this.db.prepare('SELECT content FROM cards WHERE card_id = ?').get(cardId) as Pick<CardRow, 'content'> | undefined;
    return row?.content;
  }

  /** Cards whose vectors another embedder made (after EMBEDDINGS_URL or the model changed): not searchable until refreshed. */
  staleVectorCount(): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM cards WHERE embedder != ?').get(this.embedderId) as { n: number }).n;
  }

  /** Re-embeds the stale cards in batches with the current embedder and makes them searchable again; answers how many. */
  async refreshStaleVectors(embed: (texts: string[]) => Promise<Float32Array[]>, batchSize = 256): Promise<number> {
    await this.loaded;
    let refreshed = 0;
    while (this.db.open) {
      const rows = this.db.prepare('SELECT * FROM cards WHERE embedder != ? LIMIT ?').all(this.embedderId, batchSize) as CardRow[];
      if (rows.length === 0) break;
      const vectors = await embed(rows.map((r) => r.content));
      if (!this.db.open) break;
      rows.forEach((row, i) => {
        const vector = vectors[i]!;
        const changed = this.db.prepare('UPDATE cards SET vector = ?, embedder = ? WHERE rowid = ? AND updated_at = ?')
          .run(Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength), this.embedderId, row.rowid, row.updated_at).changes;
        if (changed === 1 && row.collision_of === null) {
          this.unslot(row.card_id);
          this.slot({ ...fromRow(row), vector });
        }
      });
      refreshed += rows.length;
    }
    return refreshed;
  }

  async createdAtStart(): Promise<boolean> {
    return this.tablesCreated || this.db.prepare('SELECT 1 FROM lost_index_check_pending').get() !== undefined;
  }

  async lostIndexCheckSettled(): Promise<void> {
    this.db.prepare('DELETE FROM lost_index_check_pending').run();
  }

  async count(): Promise<number> {
    await this.loaded;
    return this.slotOf.size;
  }

  /** Resolves once every stored card is searchable. */
  ready(): Promise<void> {
    return this.loaded;
  }

  async close(): Promise<void> {
    await this.loaded.catch(() => undefined);
    if (this.db.open) this.db.close();
  }

  async nearest(query: Float32Array, scope: SearchScope, page: PageRequest): Promise<IndexPage> {
    await this.loaded;
    return this.inScoringTurn(page.signal, () => this.nearestNow(query, scope, page));
  }

  /**
   * Scoring is synchronous (a large index or a long paste holds the event loop while it runs): searches take turns,
   * one per turn of the event loop, and a search whose call was cancelled while it waited (its caller went away: the
   * gateway's client, cut on its 'close') is not scored. Without turns, searches that arrived together ran back to
   * back without the loop reading anything between them, so none could learn that its caller had gone.
   */
  private async inScoringTurn<T>(signal: AbortSignal | undefined, score: () => T): Promise<T> {
    const previous = this.scoringTurns;
    let done!: () => void;
    this.scoringTurns = new Promise<void>((resolve) => (done = resolve));
    try {
      await previous;
      // The loop polls for I/O (a connection closed, a cancelled call) before this search scores.
      await new Promise<void>((resolve) => setImmediate(resolve));
      stopIfCancelled(signal);
      return score();
    } finally {
      done();
    }
  }

  private nearestNow(query: Float32Array, scope: SearchScope, page: PageRequest): IndexPage {
    if (query.length !== this.vectors.dimensions) throw new Error(`query has ${query.length} dimensions, the index ${this.vectors.dimensions}`);
    if (isZeroVector(query)) return { hits: [], total: 0, reachable: 0 };
    const eligible = this.eligibleSlots(scope);
    const total = eligible.length;
    const wanted = Math.min(page.offset + page.limit, total);
    if (wanted <= page.offset) return { hits: [], total, reachable: total };
    const top = new TopK(wanted, this.rankTie);
    if (total <= this.exactScanLimit) {
      for (const slot of eligible) top.push(this.vectors.dot(slot, query), slot);
    } else {
      for (const slot of this.signCandidates(query, eligible, Math.max(this.candidateFloor, wanted * 8))) top.push(this.vectors.dot(slot, query), slot);
    }
    return { hits: this.toHits(top, page.offset), total, reachable: total };
  }

  /** Exact cosine over every eligible card: what nearest() approximates above exactScanLimit (for measuring). */
  exactNearest(query: Float32Array, scope: SearchScope, limit: number): IndexHit[] {
    const top = new TopK(limit, this.rankTie);
    for (const slot of this.eligibleSlots(scope)) top.push(this.vectors.dot(slot, query), slot);
    return this.toHits(top, 0);
  }

  async matchText(query: string, scope: SearchScope, page: PageRequest): Promise<IndexPage> {
    await this.loaded;
    return this.inScoringTurn(page.signal, () => this.matchTextNow(query, scope, page));
  }

  private matchTextNow(query: string, scope: SearchScope, page: PageRequest): IndexPage {
    const { sequence: read, terms: readTerms } = queryTerms(query);
    if (readTerms.length === 0) return { hits: [], total: 0, reachable: 0 };
    this.ensureScratch();
    const total = this.scratchTotal;
    const exact = this.scratchExact;
    // Corpus statistics (known words, their spellings, word weights) from the cards the caller may see only.
    const reader = this.readerOf(scope.callerId);
    // A paste's most telling words, not its first ones.
    const chosen = tellingTerms(readTerms, (word) => {
      const id = this.lexicon.idOf(word, reader);
      return id === undefined ? 0 : this.lexicon.visibleFrequency(id, reader);
    });
    const matched = chosen.map(({ word, forms, share, name }) => ({
      word,
      share,
      name,
      // A Korean word's forms (the word as written, its stem, a one-syllable stem), each at its factor, the best per word.
      matches: bestFormMatches(
        forms,
        (form) => {
          if (form.variants) return this.lexicon.matches(form.word, reader);
          const wordId = this.lexicon.idOf(form.word, reader);
          return wordId === undefined ? [] : [{ wordId, similarity: 1 }];
        },
        (m) => m.wordId,
      ),
    }));
    // A word written apart that no card holds, not even misspelled, weighs nothing: the rest is searched without it.
    const { terms: searched, sequence: tokens } = heldQueryWords(query, read, matched, (term) => term.matches.length === 0);
    const queryWords = searched.map((term) => term.word);
    const phrase = queryWords.length >= 2 ? this.phraseOf(tokens, reader) : undefined;
    const cards = this.lexicon.visibleCards(reader);
    // The cards holding any of a match's `unless` or `onlyWith` words (a part of the query's names: the cards naming one).
    const holdersOf = new Map<string, ReadonlySet<number>>();
    const unlessSlots = (words: readonly string[]) => {
      const key = words.join(' ');
      let slots = holdersOf.get(key);
      if (slots === undefined) {
        const set = new Set<number>();
        for (const word of words) {
          const id = this.lexicon.idOf(word, reader);
          if (id !== undefined) for (const slot of this.lexicon.postingsOf(id)) set.add(slot);
        }
        holdersOf.set(key, (slots = set));
      }
      return slots;
    };
    const terms: TextTerm[] = searched.map(({ word, matches: formMatches, share, name }) => {
      const matches: TermMatch[] = formMatches.some((m) => m.unless !== undefined || m.onlyWith !== undefined)
        ? formMatches.map(({ wordId, similarity, unless, onlyWith }) => ({
            wordId,
            similarity,
            ...(unless === undefined ? {} : { unless: unlessSlots(unless) }),
            ...(onlyWith === undefined ? {} : { onlyWith: unlessSlots(onlyWith) }),
          }))
        : (formMatches as WordMatch[]);
      let frequency = 0;
      for (const m of matches) frequency += this.lexicon.visibleFrequency(m.wordId, reader);
      // Rare words tell more than common ones (idf); a word found nowhere still counts against every card (when
      // joined to others, or when the query holds no other: heldQueryWords).
      // A part of a name of several words weighs its share of the name (node and js of node.js: half each).
      const weight = Math.log(1 + cards / (1 + Math.min(cards, frequency))) * (share ?? 1);
      return { matches, weight, exactId: phrase ? this.lexicon.idOf(word, reader) : undefined, name };
    });
    let weightSum = 0;
    for (const term of terms) weightSum += term.weight;
    const phraseWeight = queryWords.length >= 2 ? PHRASE_WEIGHT : 0;
    const long = isLongQuery(searched);
    // A paste's floor depends on the best card's score (longQueryFloor), never under LONG_QUERY_MIN_SCORE: pruning
    // keeps every card that can reach that.
    let floor = textScoreFloor(this.minTextScore, terms, phraseWeight);
    // A query of names: a card matches by its naming matches alone reaching namesFloor, whatever its whole score.
    const named = namesFloor(terms, weightSum, phraseWeight);
    const namedFloor = Number.isFinite(named) ? named : undefined;
    const fixedFloor = floor;
    if (long) floor = Math.min(floor, LONG_QUERY_MIN_SCORE - 1e-6);
    // Heaviest words first (a stable sort, so every card's sum adds its words in one order). The lightest words
    // whose weights together cannot lift a card to the score floor only add to cards the others found (MaxScore
    // pruning): a card holding none but them scores below the floor anyway, so the matches and their count are the
    // same, while a common word's postings (every card holds "the") no longer make every card a candidate.
    const byWeight = [...terms].sort((a, b) => b.weight - a.weight);
    let generating = byWeight.length;
    if (this.pruneTextCandidates) {
      let rest = 0;
      while (generating > 1 && ((1 - phraseWeight) * (rest + byWeight[generating - 1]!.weight)) / weightSum < Math.min(floor, namedFloor ?? floor) - 1e-6) {
        rest += byWeight[--generating]!.weight;
      }
    }
    const candidates: number[] = [];
    byWeight.forEach((term, i) => this.scoreTerm(term, i < generating, candidates, namedFloor !== undefined && term.name !== undefined));
    const namedScores = this.scratchNamed;
    const filter = this.scopeFilter(scope);
    if (long) {
      let best = 0;
      for (const slot of candidates) if (total[slot]! > best && filter(slot)) best = total[slot]!;
      floor = longQueryFloor(fixedFloor, weightSum > 0 ? ((1 - phraseWeight) * best) / weightSum : 0);
    }
    // No more than every candidate can rank: a page far past the end must not size the heap by its offset.
    const wanted = Math.min(page.offset + page.limit, candidates.length);
    const top = new TopK(wanted, this.rankTie);
    // Only a card holding every query word can hold the phrase; all such cards have the same word score (1 per
    // word, summed in the same order), unless a Korean query word was written with a particle: a card holding it as
    // written scores 1 for it, one holding only its stem less (KOREAN_STEM_MATCH).
    const holdingEveryWord: number[] = [];
    const holderScores: number[] = [];
    let everyWordScore = 0;
    let oneScore = true;
    let matching = 0;
    for (const slot of candidates) {
      const wordScore = weightSum > 0 ? total[slot]! / weightSum : 0;
      const holdsEveryWord = phrase !== undefined && exact[slot] === queryWords.length;
      const namedScore = namedFloor !== undefined && weightSum > 0 ? ((1 - phraseWeight) * namedScores[slot]!) / weightSum : 0;
      total[slot] = 0;
      exact[slot] = 0;
      namedScores[slot] = 0;
      if (!filter(slot)) continue;
      // A query of names finds the cards naming one of them, not those holding only their parts (every word of it too).
      if (namedFloor !== undefined && namedScore < namedFloor) continue;
      const score = (1 - phraseWeight) * wordScore;
      if (holdsEveryWord) {
        if (holdingEveryWord.length > 0 && score !== everyWordScore) oneScore = false;
        holdingEveryWord.push(slot);
        holderScores.push(score);
        everyWordScore = score;
        continue;
      }
      if (namedFloor === undefined && score < floor) continue;
      matching++;
      top.push(score, slot);
    }
    // Counted by a match that skipped them and made no candidate of them: not reset above (a candidate's count is).
    for (const slot of this.scratchExactOutside) exact[slot] = 0;
    this.scratchExactOutside.length = 0;
    // The holders of a query of names passed namesFloor above (on their naming matches, under their whole score).
    const holderFloor = namedFloor ?? floor;
    if (phrase && oneScore) matching += this.rankByPhrase(phrase, holdingEveryWord, everyWordScore, phraseWeight, holderFloor, top, wanted);
    else if (phrase) matching += this.rankEachByPhrase(phrase, holdingEveryWord, holderScores, phraseWeight, holderFloor, top);
    return { hits: this.toHits(top, page.offset), total: matching, reachable: matching };
  }

  /**
   * Adds a query word's weight, times the similarity of the closest of its matches a card holds, to each card's
   * score. A generating word makes the cards holding it candidates; any other adds only to cards already candidates.
   */
  private scoreTerm({ matches, weight, exactId }: TextTerm, generating: boolean, candidates: number[], naming: boolean): void {
    const best = this.scratchBest;
    const total = this.scratchTotal;
    const exact = this.scratchExact;
    const named = this.scratchNamed;
    if (matches.length === 1 && matches[0]!.unless === undefined && matches[0]!.onlyWith === undefined) {
      // One match (a known word without close variants): its similarity is every holder's best, added directly.
      const { wordId, similarity } = matches[0]!;
      const postings = this.lexicon.postingsOf(wordId);
      const add = weight * Math.fround(similarity);
      const counted = wordId === exactId;
      const names = naming && similarity >= NAMING_MATCH;
      for (const slot of postings) {
        if (total[slot] === 0) {
          if (!generating) continue;
          candidates.push(slot);
        }
        total[slot]! += add;
        if (names) named[slot]! += add;
        if (counted) exact[slot]!++;
      }
      return;
    }
    const touched: number[] = [];
    for (const m of matches) {
      const postings = this.lexicon.postingsOf(m.wordId);
      const unless = m.unless;
      const onlyWith = m.onlyWith;
      const skips = (slot: number) => (unless !== undefined && unless.has(slot)) || (onlyWith !== undefined && !onlyWith.has(slot));
      for (const slot of postings) {
        if (!generating && total[slot] === 0) continue;
        if (skips(slot)) continue;
        if (best[slot] === 0) touched.push(slot);
        if (best[slot]! < m.similarity) best[slot] = m.similarity;
      }
      if (m.wordId === exactId) {
        for (const slot of postings) {
          if (!generating && total[slot] === 0) continue;
          exact[slot]!++;
          // A card this match skips may be no candidate (no other match of the query counts for it): its count is
          // cleared once the query is scored (scratchExactOutside), or the next query would find it there.
          if (skips(slot)) this.scratchExactOutside.push(slot);
        }
      }
    }
    for (const slot of touched) {
      if (total[slot] === 0) candidates.push(slot);
      total[slot]! += weight * best[slot]!;
      if (naming && best[slot]! >= NAMING_MATCH) named[slot]! += weight * best[slot]!;
      best[slot] = 0;
    }
  }

  /** The query's words, when a card can hold them in a row: every word known, a text of 3+ characters. */
  private phraseOf(phraseWords: readonly string[], reader: Reader): Phrase | undefined {
    if (phraseWords.join(' ').length < 3) return undefined;
    const ids = new Int32Array(phraseWords.length);
    for (let i = 0; i < phraseWords.length; i++) {
      const id = this.lexicon.idOf(phraseWords[i]!, reader);
      if (id === undefined) return undefined;
      ids[i] = id;
    }
    return this.slotWords.phrase(ids);
  }

  /**
   * Ranks cards sharing one word score (every query word held exactly), those holding the phrase with `bonus`
   * added; answers how many of them match. The holders rank first among them, in tie order (rankTie, as TopK), so the
   * first cards in tie order are checked first: once `wanted` of them hold the phrase, no other card can reach the
   * page (a later holder ranks after them, the others below) and the rest are not checked.
   */
  private rankByPhrase(phrase: Phrase, slots: number[], score: number, bonus: number, floor: number, top: TopK, wanted: number): number {
    if (score + bonus < floor) return 0;
    // Below the floor without the bonus, only holders match, and counting them needs every card checked.
    const onlyHoldersMatch = score < floor;
    let holders = 0;
    const check = (slot: number) => {
      if (this.slotWords.holds(slot, phrase)) {
        holders++;
        top.push(score + bonus, slot);
      } else if (!onlyHoldersMatch) top.push(score, slot);
    };
    if (onlyHoldersMatch || slots.length <= wanted) {
      for (const slot of slots) check(slot);
      return onlyHoldersMatch ? holders : slots.length;
    }
    // The first few times the page in tie order (a selection, not a sort of every card); when fewer than `wanted` of
    // them hold the phrase, every other card is checked too, in any order (TopK orders what it keeps).
    const selection = new TopK(Math.min(slots.length, Math.max(256, wanted * 4)), this.rankTie);
    for (const slot of slots) selection.push(0, slot);
    const first = selection.sorted();
    for (const { slot } of first) {
      if (holders >= wanted) return slots.length;
      check(slot);
    }
    if (holders >= wanted) return slots.length;
    const marks = this.scratchExact;
    for (const { slot } of first) marks[slot] = 1;
    for (const slot of slots) if (marks[slot] === 0) check(slot);
    for (const { slot } of first) marks[slot] = 0;
    return slots.length;
  }

  /**
   * Ranks cards holding every query word whose word scores differ (rankByPhrase's case otherwise), each with `bonus`
   * added when it holds the phrase; answers how many of them match. Every card is checked.
   */
  private rankEachByPhrase(phrase: Phrase, slots: number[], scores: number[], bonus: number, floor: number, top: TopK): number {
    let matching = 0;
    slots.forEach((slot, i) => {
      const score = scores[i]! + (this.slotWords.holds(slot, phrase) ? bonus : 0);
      if (score < floor) return;
      matching++;
      top.push(score, slot);
    });
    return matching;
  }

  /** compareTies on two slots' cards: the order of equal scores (TopK's tie-break). */
  private readonly rankTie = (a: number, b: number): number => {
    const { created, cardIds } = this;
    if (created[a] !== created[b]) return created[a]! > created[b]! ? -1 : 1;
    const ia = cardIds[a]!;
    const ib = cardIds[b]!;
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  };

  /** Whose cards count in a query's word statistics: the caller's private ones beside the public ones. */
  private readerOf(callerId: string | undefined): Reader {
    return { author: callerId === undefined ? PUBLIC : (this.authorIds.get(callerId) ?? -2) };
  }

  /** Eligible slots whose sign codes are nearest the query's: at least `count` of them (ties at the cut included). */
  private signCandidates(query: Float32Array, eligible: Int32Array, count: number): Int32Array {
    const distances = this.vectors.hammingAll(eligible, this.vectors.codeOf(query));
    const histogram = new Uint32Array(this.vectors.dimensions + 1);
    for (let i = 0; i < distances.length; i++) histogram[distances[i]!]!++;
    let cut = 0;
    let below = 0;
    while (cut < histogram.length && below + histogram[cut]! < count) below += histogram[cut++]!;
    // Everything nearer than the cut, then ties at the cut until `count`.
    const out = new Int32Array(Math.min(count, eligible.length));
    let n = 0;
    let ties = count - below;
    for (let i = 0; i < distances.length && n < out.length; i++) {
      const d = distances[i]!;
      if (d < cut || (d === cut && ties-- > 0)) out[n++] = eligible[i]!;
    }
    return out.subarray(0, n);
  }

  private toHits(top: TopK, offset: number): IndexHit[] {
    // Sums and cosines in float32 can land a hair above 1; both scores are at most 1 by definition.
    return top
      .sorted()
      .slice(offset)
      .map(({ score, slot }) => ({ cardId: this.cardIds[slot]!, score: Math.min(1, score) }));
  }

  private eligibleSlots(scope: SearchScope): Int32Array {
    const out = new Int32Array(this.slotCount);
    let n = 0;
    if (scope.collectionId === undefined && !scope.tags.some((t) => t.trim()) && !scope.links.some((l) => l.trim())) {
      // The common case, visibility only: a tight loop over typed arrays.
      const caller = scope.callerId === undefined ? -1 : (this.authorIds.get(scope.callerId) ?? -2);
      const { privates, authors, cardIds } = this;
      for (let slot = 0; slot < this.slotCount; slot++) {
        if (privates[slot] === 1 && authors[slot] !== caller) continue;
        if (cardIds[slot] !== undefined) out[n++] = slot;
      }
      return out.subarray(0, n);
    }
    if (scope.collectionId !== undefined) {
      const members = this.collectionRoots(scope.collectionId, scope.callerId);
      const filter = this.scopeFilter(scope, members);
      for (const cardId of members) {
        const slot = this.slotOf.get(cardId);
        if (slot !== undefined && filter(slot)) out[n++] = slot;
      }
      return out.subarray(0, n).sort();
    }
    const filter = this.scopeFilter(scope);
    for (let slot = 0; slot < this.slotCount; slot++) if (filter(slot)) out[n++] = slot;
    return out.subarray(0, n);
  }

  /** Whether a slot holds a card the scope allows: visible to the caller, tags, links, collection. */
  private scopeFilter(
    scope: SearchScope,
    members = scope.collectionId === undefined ? undefined : this.collectionRoots(scope.collectionId, scope.callerId),
  ): (slot: number) => boolean {
    const caller = scope.callerId === undefined ? -1 : (this.authorIds.get(scope.callerId) ?? -2);
    // Compared in NFC on both sides (filterForm), so a tag or link stored decomposed before the gateway put text in NFC
    // still matches; tags also case-folded (tagFilterForm), links with hosts in Unicode and paths decoded (linkFilterForm).
    const tags = scope.tags.map((t) => tagFilterForm(t.trim())).filter((t) => t.length > 0);
    const links = scope.links.map((l) => linkFilterForm(l.trim())).filter((l) => l.length > 0);
    if (tags.length === 0 && links.length === 0 && !members) {
      // Visibility only, the common case: no closure over the other checks, on the current typed arrays.
      const { cardIds, privates, authors } = this;
      return (slot) => cardIds[slot] !== undefined && (privates[slot] !== 1 || authors[slot] === caller);
    }
    const matches = (cardTags: readonly string[], link: string) =>
      (tags.length === 0 || cardTags.some((t) => tags.includes(t))) && (links.length === 0 || links.some((l) => link.includes(l)));
    const viaCollisions = tags.length > 0 || links.length > 0 ? this.rootsOfMatchingCollisions(caller, matches) : undefined;
    return (slot) => {
      const cardId = this.cardIds[slot];
      if (cardId === undefined) return false;
      if (this.privates[slot] === 1 && this.authors[slot] !== caller) return false;
      if (viaCollisions && !matches(this.tags[slot]!, this.links[slot]!) && !viaCollisions.has(cardId)) return false;
      if (members && !members.has(cardId)) return false;
      return true;
    };
  }

  /**
   * Roots with a collision the caller may see that matches the tag and link filters: a collision is shown inside its
   * root's entry, so the entry matches through it. Someone else's private collision never counts (its tags stay hidden).
   */
  private rootsOfMatchingCollisions(caller: number, matches: (tags: readonly string[], link: string) => boolean): Set<string> {
    const roots = new Set<string>();
    for (const collision of this.collisions.values()) {
      if (collision.private && collision.author !== caller) continue;
      if (!roots.has(collision.root) && matches(collision.tags, collision.link)) roots.add(collision.root);
    }
    return roots;
  }

  /** Keeps what the tag and link filters and collection scopes need of a collision (replacing what was kept of it). */
  private keepCollision(cardId: string, root: string, card: { authorId: string; private: boolean; tags: readonly string[]; link: string }): void {
    const rootSlot = this.slotOf.get(root);
    this.collisions.set(cardId, {
      root: rootSlot === undefined ? root : this.cardIds[rootSlot]!,
      author: this.authorNumber(card.authorId),
      private: card.private,
      tags: card.tags.map((t) => {
        const tag = tagFilterForm(t.trim());
        let shared = this.collisionTags.get(tag);
        if (shared === undefined) this.collisionTags.set(tag, (shared = tag));
        return shared;
      }),
      link: linkFilterForm(card.link),
    });
  }

  /** The number the index gives an author (visibility checks compare numbers, not ids). */
  private authorNumber(authorId: string): number {
    let author = this.authorIds.get(authorId);
    if (author === undefined) {
      author = this.authorIds.size;
      this.authorIds.set(authorId, author);
    }
    return author;
  }

  /**
   * The root cards a collection scope holds: its bookmarked roots, and the root of each bookmarked collision the
   * caller may see, since a collision is searched through its root and shown inside the root's entry. Read from
   * memory (the bookmarks and the collisions kept), so a collection-scoped query reads no row.
   */
  private collectionRoots(collectionId: string, callerId: string | undefined): Set<string> {
    const members = this.collections.get(collectionId);
    const roots = new Set(members);
    if (!members || roots.size === 0) return roots;
    const caller = callerId === undefined ? -1 : (this.authorIds.get(callerId) ?? -2);
    for (const cardId of members) {
      const collision = this.collisions.get(cardId);
      if (collision !== undefined && (!collision.private || collision.author === caller)) roots.add(collision.root);
    }
    return roots;
  }

  private slot(card: IndexedCard): void {
    const slot = this.freeSlots.pop() ?? this.slotCount++;
    this.ensureSlotCapacity(slot + 1);
    this.vectors.set(slot, card.vector);
    this.cardIds[slot] = card.cardId;
    const author = this.authorNumber(card.authorId);
    this.authors[slot] = author;
    this.privates[slot] = card.private ? 1 : 0;
    this.created[slot] = card.createdAt?.getTime() ?? -Infinity;
    this.tags[slot] = card.tags.map((t) => tagFilterForm(t.trim()));
    this.links[slot] = linkFilterForm(card.link);
    const { sequence, extra } = indexWords(card.content);
    const wordIds = this.lexicon.intern(sequence);
    this.slotWords.set(slot, wordIds);
    // A card is also listed under its words' other forms (Korean words as written, names such as c++): kept per slot.
    if (extra.length > 0) this.slotExtraWords.set(slot, this.lexicon.intern(extra));
    this.lexicon.addPostings(slot, this.postedWords(slot), card.private ? author : PUBLIC);
    this.slotOf.set(card.cardId, slot);
  }

  private unslot(cardId: string): void {
    const slot = this.slotOf.get(cardId);
    if (slot === undefined) return;
    this.lexicon.removePostings(slot, this.postedWords(slot), this.privates[slot] === 1 ? this.authors[slot]! : PUBLIC);
    this.slotOf.delete(cardId);
    this.cardIds[slot] = undefined;
    this.slotWords.delete(slot);
    this.slotExtraWords.delete(slot);
    this.tags[slot] = undefined;
    this.links[slot] = '';
    this.freeSlots.push(slot);
  }

  /** The word ids a slot is listed under: its word sequence, and its words' other forms (indexWords' extra). */
  private postedWords(slot: number): Int32Array {
    const sequence = this.slotWords.get(slot)!;
    const extra = this.slotExtraWords.get(slot);
    if (extra === undefined) return sequence;
    const all = new Int32Array(sequence.length + extra.length);
    all.set(sequence);
    all.set(extra, sequence.length);
    return all;
  }

  private ensureSlotCapacity(slots: number): void {
    this.vectors.ensureCapacity(slots);
    if (slots <= this.authors.length) return;
    let capacity = this.authors.length;
    while (capacity < slots) capacity *= 2;
    const grow = <T extends Int32Array | Uint8Array | Float64Array>(old: T, make: (n: number) => T): T => {
      const next = make(capacity);
      next.set(old);
      return next;
    };
    this.authors = grow(this.authors, (n) => new Int32Array(n));
    this.privates = grow(this.privates, (n) => new Uint8Array(n));
    this.created = grow(this.created, (n) => new Float64Array(n));
  }

  private ensureScratch(): void {
    if (this.scratchBest.length >= this.slotCount) return;
    this.scratchBest = new Float32Array(this.authors.length);
    this.scratchTotal = new Float32Array(this.authors.length);
    this.scratchExact = new Uint8Array(this.authors.length);
    this.scratchNamed = new Float32Array(this.authors.length);
  }

  private isRemoved(cardId: string): boolean {
    return this.db.prepare('SELECT 1 FROM removed_cards WHERE card_id = ?').get(cardId) !== undefined;
  }

  /** Last writer wins per (collection, card); true when the stored state changed. */
  private writeBookmark(collectionId: string, cardId: string, added: boolean, at: number): boolean {
    const row = this.db.prepare('SELECT added, at FROM bookmarks WHERE collection_id = ? AND card_id = ?').get(collectionId, cardId) as { added: number; at: number } | undefined;
    if (row && (row.at > at || (row.at === at && row.added === (added ? 1 : 0)))) return false;
    this.db.prepare('INSERT INTO bookmarks (collection_id, card_id, added, at) VALUES (?, ?, ?, ?) ON CONFLICT (collection_id, card_id) DO UPDATE SET added = excluded.added, at = excluded.at')
      .run(collectionId, cardId, added ? 1 : 0, at);
    return true;
  }

  private applyBookmarkInMemory(collectionId: string, cardId: string, added: boolean): void {
    let members = this.collections.get(collectionId);
    if (added) {
      if (!members) this.collections.set(collectionId, (members = new Set()));
      members.add(cardId);
    } else if (members?.delete(cardId) && members.size === 0) this.collections.delete(collectionId);
  }

  private collectionIdsOf(cardId: string): string[] {
    const rows = this.db.prepare('SELECT collection_id FROM bookmarks WHERE card_id = ? AND added = 1 ORDER BY collection_id').all(cardId) as { collection_id: string }[];
    return rows.map((r) => r.collection_id);
  }

  private async load(): Promise<void> {
    for (const row of this.db.prepare('SELECT collection_id, card_id FROM bookmarks WHERE added = 1').iterate() as Iterable<{ collection_id: string; card_id: string }>) {
      this.applyBookmarkInMemory(row.collection_id, row.card_id, true);
    }
    let after = 0;
    while (this.db.open) {
      const rows = this.db.prepare('SELECT * FROM cards WHERE collision_of IS NULL AND embedder = ? AND rowid > ? ORDER BY rowid LIMIT 2000').all(this.embedderId, after) as CardRow[];
      if (rows.length === 0) break;
      for (const row of rows) if (row.vector.byteLength === this.vectors.dimensions * 4) this.slot(fromRow(row));
      after = rows[rows.length - 1]!.rowid;
      await new Promise((resolve) => setImmediate(resolve));
    }
    after = 0;
    while (this.db.open) {
      const rows = this.db
        .prepare('SELECT rowid, card_id, collision_of, author_id, private, tags, link FROM cards WHERE collision_of IS NOT NULL AND rowid > ? ORDER BY rowid LIMIT 2000')
        .all(after) as Pick<CardRow, 'rowid' | 'card_id' | 'collision_of' | 'author_id' | 'private' | 'tags' | 'link'>[];
      if (rows.length === 0) break;
      for (const row of rows) {
        this.keepCollision(row.card_id, row.collision_of!, { authorId: row.author_id, private: row.private === 1, tags: JSON.parse(row.tags) as string[], link: row.link });
      }
      after = rows[rows.length - 1]!.rowid;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
}

function fromRow(row: CardRow): IndexedCard {
  const vector = new Float32Array(row.vector.byteLength / 4);
  new Uint8Array(vector.buffer).set(row.vector);
  return {
    cardId: row.card_id,
    authorId: row.author_id,
    content: row.content,
    tags: JSON.parse(row.tags) as string[],
    link: row.link,
    private: row.private === 1,
    vector,
    vectorPointId: row.vector_point_id,
    ...(row.collision_of ? { collisionOf: row.collision_of } : {}),
    updatedAt: new Date(row.updated_at),
    ...(row.created_at !== null ? { createdAt: new Date(row.created_at) } : {}),
  };
}
