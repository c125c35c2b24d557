import { AsyncLocalStorage } from 'node:async_hooks';
import { Client, errors, type estypes } from '@elastic/elasticsearch';
import { redactUrl } from '@cards/platform';
import { compareTies, isZeroVector, stopIfCancelled, type IndexedCard, type IndexPage, type PageRequest, type SearchScope, type StoredCard, type StoredPoint } from '../../domain/model';
import type { CardIndex } from '../../domain/ports';
import { bestFormMatches, CJK_CHARACTER_BIGRAMS, type FormLimits, filterForm, hasMoreWordsThanSearched, heldQueryWords, indexWords, isCjkCharacter, isExtraIndexWord, isLongQuery, isSymbolWord, linkFilterForm, LONG_QUERY_MIN_SCORE, longQueryFloor, namesFloor, NAMING_MATCH, queryTerms, tagFilterForm, tellingTerms, textScoreFloor, wordTrigrams } from '../../domain/text';
import { matchWord, wordWeight, type VocabularyCandidate, type WordMatch } from './word-matcher';

export interface ElasticsearchCardIndexOptions {
  /** Cluster URL (ELASTICSEARCH_URL). */
  url: string;
  dimensions: number;
  /** Prefix of the four indices this adapter owns (`<prefix>-cards`, `-vocabulary`, `-bookmarks`, `-removed`). */
  indexPrefix?: string;
  /** The embedder that made the vectors; cards embedded by another one stay out of semantic search until re-embedded. */
  embedderId?: string;
  /** Replicas of each index; unset = the cluster default. */
  replicas?: number;
  /**
   * Periodic refresh interval of the indices (default 1s, must be positive), applied on every start. Each write method
   * (or batch()) waits for the next periodic refresh before it returns instead of forcing one, so this bounds how long
   * a write takes to become searchable (and to return).
   */
  refreshInterval?: string;
  /** Full-text matches score at least this (word similarity, 0..1), as in the embedded index. */
  minTextScore?: number;
  /** How long ready() tries to reach the cluster before failing. */
  readyTimeoutMs?: number;
  /** Per-request timeout. */
  requestTimeoutMs?: number;
  /**
   * How deep a search may page (from + size, and kNN's k): set as the cards index's index.max_result_window at every
   * start. Default and upper bound 10,000, kNN's own limit on k and num_candidates. Matches past it are counted in
   * `total` but not served, and `reachable` stops there.
   */
  maxResultWindow?: number;
}

/** Share of the full-text score given to holding the exact query phrase (same as the embedded index). */
const PHRASE_WEIGHT = 0.15;
/** Elasticsearch's limit on kNN's k and num_candidates, and its default index.max_result_window (from + size). */
const MAX_WINDOW = 10_000;
/** Vocabulary words fetched per query word, the ones sharing the most trigrams with it. */
const VOCABULARY_CANDIDATES = 200;
/**
 * Longest link filter string (in characters) searched as a `*string*` wildcard. Lucene builds an automaton per
 * wildcard, dearer the longer the string (a run of one character over 314 fails the search); a longer string is
 * found by its first characters and checked whole (cardsWithLinkContaining).
 */
const MAX_WILDCARD_CHARS = 64;
/** Cards read per request when a lookup reads cards page by page (long link strings, bookmarked collisions), and card ids per `terms` filter. */
const CARDS_PER_PAGE = 1_000;
/** Bookmark documents read, or deleted, per request (a card may be in any number of collections). */
const BOOKMARK_PAGE = 1_000;
/** The id awaitRefresh() deletes to wait for a refresh: no card, word or bookmark id holds a '~', so it never exists. */
const REFRESH_PROBE_ID = '~refresh-probe';
/**
 * Nested objects a document may hold (index.mapping.nested_objects.limit, default 10,000): one per collision of a
 * root, so a root's collisions fit however many cards duplicate it (request size bounds it first).
 */
const NESTED_OBJECTS_LIMIT = 1_000_000;
/** Root cards read per request when the vocabulary is given its scopes (scopeVocabulary). */
const VOCABULARY_SCOPING_PAGE = 500;
/**
 * The order of equal scores (compareTies): the newer card first, a document without created_at (written before it was
 * kept) after every dated one, then card id.
 */
const TIE_SORT: estypes.SortCombinations[] = [{ created_at: { order: 'desc', missing: '_last', unmapped_type: 'long' } }, { card_id: { order: 'asc' } }];

interface CardSource {
  card_id: string;
  author_id: string;
  content: string;
  text: string;
  words: string[];
  tags: string[];
  tags_lower: string[];
  link: string;
  link_lower: string;
  private: boolean;
  root: boolean;
  collision_of: string | null;
  collection_ids: string[];
  /** Absent or null for the zero vector. */
  vector?: number[] | null;
  has_vector: boolean;
  vector_point_id: string;
  updated_at: number;
  /**
   * The card's created_at, which breaks ties between equal scores (compareTies, TIE_SORT). Absent on documents written
   * before it was kept, until a reindex republishes the card; a search sorts them after every dated card of their score.
   */
  created_at?: number;
  embedder: string;
  /**
   * On a root: what the tag and link filters and collection scopes need of each card stored as its collision (absent on
   * documents written before, until denormalizeCollisions()). A collision is shown inside its root's entry, so the root
   * matches through it.
   */
  collisions?: CollisionEntry[];
  /** On a collision: its entry is on its root (set by every write since entries exist; older ones lack it). */
  entered?: boolean;
  /** On a collision: its entry on its root holds its collections (set by every write since; older ones lack it). */
  entered_collections?: boolean;
  /** `words` and `text` have their diacritics folded (set by every write since folding; older ones lack it). */
  folded?: boolean;
  /**
   * `words` and `text` have runs of unspaced scripts split (Chinese and Japanese into bigrams, searchWords), set by
   * every write since; older ones lack it.
   */
  segmented?: boolean;
  /**
   * `words` list Korean words also as written and by their one-syllable stems (indexWords), set by every write since;
   * older ones lack it.
   */
  korean_forms?: boolean;
  /**
   * `words` and `text` keep combining marks inside words (Indic vowel signs), drop Arabic and Hebrew vowel marks and
   * spell Hindi one way (searchWords), set by every write since; older ones lack it.
   */
  marks_folded?: boolean;
  /**
   * `words` list Arabic and Hebrew words also without their article or prefixes (indexWords), set by every write since;
   * older ones lack it.
   */
  prefix_forms?: boolean;
  /** `words` and `text` hold Chinese characters in their simplified forms (searchWords), set by every write since; older ones lack it. */
  chinese_folded?: boolean;
  /**
   * `link_lower`, and the link of each entry in `collisions`, are in linkFilterForm (punycode hosts in Unicode, %XX of
   * UTF-8 decoded), set by every write since; older ones lack it and hold filterForm (decodeStoredLinks rewrites them).
   */
  links_decoded?: boolean;
}

/** A collision as its root's document holds it (a nested object: each one's tags and link are matched together). */
interface CollisionEntry {
  card_id: string;
  author_id: string;
  private: boolean;
  tags_lower: string[];
  link_lower: string;
  updated_at: number;
  /** The collections bookmarking the collision (absent on entries written before, until denormalizeCollisions()). */
  collection_ids?: string[];
}

/**
 * A vocabulary document: a word, its trigrams, and whose cards brought it: `public`, or `private:<author id>` for a
 * word some private card of that author held. Its id is `<scope>:<word>` (a word holds no colon); documents written
 * before scopes existed have the bare word as id and no scope.
 */
interface VocabularySource {
  word: string;
  trigrams: string[];
  scope: string;
}

const PUBLIC_SCOPE = 'public';

/** The vocabulary scope of a card's words. */
function scopeOf(card: { private: boolean; authorId: string }): string {
  return card.private ? privateScope(card.authorId) : PUBLIC_SCOPE;
}

function privateScope(authorId: string): string {
  return `private:${authorId}`;
}

function vocabularyId(scope: string, word: string): string {
  return `${scope}:${word}`;
}

interface BookmarkSource {
  collection_id: string;
  card_id: string;
  added: boolean;
  at: number;
}

const keyword = { type: 'keyword' } as const;
const stored = { type: 'keyword', index: false, doc_values: false } as const;

/**
 * Characters of the scripts searchWords splits (Han, Hiragana, Katakana, Thai, Lao, Myanmar, Khmer; the BMP blocks),
 * as a character class of a Lucene regexp: a word holding one was stored before the split if no write marked it.
 */
const UNSPACED_SCRIPT_CLASS = '[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff]';

/**
 * Hangul syllables, as a character class of a Lucene regexp: searchWords spells Korean words in jamo (koreanSearchWord),
 * so a word holding a syllable was stored before, with its particles (학교에서), and is rewritten by foldStoredWords.
 */
const HANGUL_SYLLABLE_CLASS = '[\uac00-\ud7a3]';

/** Conjoining Hangul jamo, as a character class of a Lucene regexp: what koreanForms spells Korean words in. */
const JAMO_CLASS = '[\u1100-\u11ff]';

/**
 * Hebrew, Arabic, Syriac, Thaana, the Indic scripts and Tibetan, as a character class of a Lucene regexp: scripts whose
 * words hold combining marks, which words were cut at (or, Arabic and Hebrew vowel marks, kept) before searchWords
 * kept marks inside words.
 */
const MARKED_SCRIPT_CLASS = '[\u0590-\u08ff\u0900-\u0dff\u0f00-\u0fff]';

/** Han characters (the BMP blocks), as a character class of a Lucene regexp: words searchWords folds to simplified Chinese. */
const HAN_CLASS = '[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]';

/** Arabic and Hebrew letters, as a character class of a Lucene regexp: words indexWords lists without their prefixes too. */
const PREFIXING_SCRIPT_CLASS = '[\u0621-\u064a\u05d0-\u05ea]';

/**
 * A card's `words` (its distinct indexed words: indexWords' sequence and extra forms) and its phrase `text` (the
 * sequence), as both indexes read a card.
 */
function cardText(content: string): { words: string[]; text: string } {
  const { sequence, extra } = indexWords(content);
  return { words: [...new Set([...sequence, ...extra])], text: sequence.join(' ') };
}

/** The words of a card that go to the vocabulary (misspellings are corrected to them): its search words, not the extra forms. */
function vocabularyWords(cardWords: readonly string[]): string[] {
  return cardWords.filter((word) => !isExtraIndexWord(word) && !isSymbolWord(word));
}

/**
 * A search's transport options (Elasticsearch's per-request options): its call's signal, aborted when its caller went
 * away, so the requests of a search done for nobody are aborted. Reads only: a write's requests are never given one.
 */
interface ReadOptions {
  signal?: AbortSignal;
}

/**
 * The search index on Elasticsearch 8 (the production adapter of DESIGN.md §2). Four indices:
 * - cards: one document per card (collisions included, with `root: false`), a cosine `dense_vector` with HNSW
 *   for kNN, keyword fields that filter (author, privacy, lower-cased tags and link, collections), the card's
 *   distinct words, and its normalized text (whitespace-analysed) for exact-phrase matching;
 * - vocabulary: one document per word ever indexed in a public card, and one per (author, word) ever indexed in
 *   a private card, with its pg_trgm trigrams computed in TypeScript (domain/text.ts) so a misspelled query word is
 *   corrected exactly like the embedded lexicon does; no analyzer from analysis-common is needed. A query looks
 *   only at public words and the caller's own, and weighs words by the cards the caller may see, so what it finds
 *   never depends on a word of someone else's private card;
 * - bookmarks: one document per (collection, card), externally versioned by the change time (latest wins);
 * - removed: tombstones, so a late snapshot of a removed card cannot bring it back.
 * Full-text scoring reproduces the embedded index's: idf-weighted best trigram similarity per query word plus a
 * phrase bonus, computed by Elasticsearch from per-word boosts. Every write method waits for the next periodic refresh
 * of the indices it wrote before it returns (batch() waits once for many writes), so a card is searchable as soon as
 * its event has been applied; no write forces a refresh, so a trickle of events adds no segments (awaitRefresh).
 * An upsert costs three round trips plus the wait: one mget (tombstone, card), one bulk (new vocabulary
 * words, the card), one tombstone re-check (and, for a new card, a read of bookmarks that came before it). A card's
 * `collection_ids` come from the bookmark documents alone (setBookmark), never from a snapshot; a bookmark change
 * reads and partially updates that field only, as promote and a vector refresh do theirs (only upsert sends a whole
 * document). Card documents change by compare-and-set on their sequence number, so concurrent writers of one card
 * (upsert, promote, bookmark, vector refresh) never lose each other's change.
 */
export class ElasticsearchCardIndex implements CardIndex {
  private readonly client: Client;
  private readonly url: string;
  private readonly dimensions: number;
  private readonly embedderId: string;
  private readonly minTextScore: number;
  /** How deep a search of the cards index may page (maxResultWindow). */
  private readonly window: number;
  private readonly names: { cards: string; vocabulary: string; bookmarks: string; removed: string };
  private readonly options: ElasticsearchCardIndexOptions;
  /** Vocabulary document ids (scope and word) known to be in the vocabulary index already (bounded), to skip re-sending them. */
  private readonly knownWords = new Set<string>();
  /** Inside batch(): the indices written so far, waited for once when the batch ends. */
  private readonly pendingRefresh = new AsyncLocalStorage<Set<string>>();
  private initialized: Promise<void> | undefined;
  /** ready() created the cards index (it did not exist). */
  private createdCardsIndex = false;
  /** A refresh wait may take a whole refresh interval on top of a request's own time. */
  private readonly refreshWaitTimeoutMs: number;

  constructor(options: ElasticsearchCardIndexOptions) {
    this.options = options;
    this.url = options.url;
    this.dimensions = options.dimensions;
    this.embedderId = options.embedderId ?? '';
    this.minTextScore = options.minTextScore ?? 0.3;
    this.window = options.maxResultWindow ?? MAX_WINDOW;
    // Writes wait for the periodic refresh: without one (-1, 0) they would wait until something else refreshed.
    const interval = /^0*([1-9]\d*)(ms|s|m)$/.exec(options.refreshInterval ?? '1s');
    if (!interval) throw new Error(`refreshInterval must be a positive duration such as 200ms or 1s, not ${options.refreshInterval}`);
    this.refreshWaitTimeoutMs = Number(interval[1]) * { ms: 1, s: 1_000, m: 60_000 }[interval[2] as 'ms' | 's' | 'm'] + (options.requestTimeoutMs ?? 30_000);
    if (!Number.isInteger(this.window) || this.window < 1 || this.window > MAX_WINDOW) throw new Error(`maxResultWindow must be an integer from 1 to ${MAX_WINDOW}`);
    const prefix = options.indexPrefix ?? 'cards-search';
    this.names = { cards: `${prefix}-cards`, vocabulary: `${prefix}-vocabulary`, bookmarks: `${prefix}-bookmarks`, removed: `${prefix}-removed` };
    this.client = new Client({ node: options.url, requestTimeout: options.requestTimeoutMs ?? 30_000, maxRetries: 2 });
  }

  /**
   * Reaches the cluster (failing within readyTimeoutMs with a message naming ELASTICSEARCH_URL), then creates the
   * indices or adds new fields to their mappings. Every other call waits for it.
   */
  ready(): Promise<void> {
    this.initialized ??= this.initialize();
    return this.initialized;
  }

  private async initialize(): Promise<void> {
    await this.waitForCluster();
    // Created with its lost-index check pending (createdAtStart, lostIndexCheckSettled), in the same request.
    this.createdCardsIndex = await this.ensureIndex(this.names.cards, { max_result_window: this.window, mapping: { nested_objects: { limit: NESTED_OBJECTS_LIMIT } } }, {
      dynamic: 'strict',
      properties: {
        card_id: keyword,
        author_id: keyword,
        content: { type: 'text', index: false },
        text: { type: 'text', analyzer: 'whitespace', norms: false, index_options: 'positions' },
        words: keyword,
        tags: stored,
        tags_lower: keyword,
        link: stored,
        link_lower: keyword,
        private: { type: 'boolean' },
        root: { type: 'boolean' },
        collision_of: keyword,
        collection_ids: keyword,
        vector: { type: 'dense_vector', dims: this.dimensions, index: true, similarity: 'cosine', index_options: { type: 'hnsw', m: 16, ef_construction: 100 } },
        has_vector: { type: 'boolean' },
        vector_point_id: stored,
        updated_at: { type: 'long' },
        created_at: { type: 'long' },
        embedder: keyword,
        collisions: {
          type: 'nested',
          properties: { card_id: keyword, author_id: keyword, private: { type: 'boolean' }, tags_lower: keyword, link_lower: keyword, updated_at: { type: 'long' }, collection_ids: keyword },
        },
        entered: { type: 'boolean' },
        entered_collections: { type: 'boolean' },
        folded: { type: 'boolean' },
        segmented: { type: 'boolean' },
        korean_forms: { type: 'boolean' },
        marks_folded: { type: 'boolean' },
        prefix_forms: { type: 'boolean' },
        chinese_folded: { type: 'boolean' },
        links_decoded: { type: 'boolean' },
      },
    }, { lost_index_check: 'pending' });
    await this.ensureIndex(this.names.vocabulary, {}, { dynamic: 'strict', properties: { word: keyword, trigrams: keyword, scope: keyword } });
    await this.ensureIndex(this.names.bookmarks, {}, { dynamic: 'strict', properties: { collection_id: keyword, card_id: keyword, added: { type: 'boolean' }, at: { type: 'long' } } });
    await this.ensureIndex(this.names.removed, {}, { dynamic: 'strict', properties: { removed_at: { type: 'long' } } });
  }

  private async waitForCluster(): Promise<void> {
    const deadline = Date.now() + (this.options.readyTimeoutMs ?? 10_000);
    let last: unknown;
    while (Date.now() < deadline) {
      try {
        await this.client.cluster.health({ wait_for_status: 'yellow', timeout: '5s' }, { requestTimeout: 5_000, maxRetries: 0 });
        return;
      } catch (err) {
        last = err;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    throw new Error(`Elasticsearch at ${redactUrl(this.url)} is unreachable (ELASTICSEARCH_URL): ${(last as Error | undefined)?.message ?? 'timed out'}`);
  }

  /** One cluster-health request, no retries (for the readiness monitor): rejects when the cluster does not answer or is red. */
  async ping(timeoutMs = 2500): Promise<void> {
    let status: string;
    try {
      ({ status } = await this.client.cluster.health({}, { requestTimeout: timeoutMs, maxRetries: 0 }));
    } catch (err) {
      throw new Error(`Elasticsearch at ${redactUrl(this.url)} is unreachable (ELASTICSEARCH_URL): ${(err as Error).message}`);
    }
    if (status === 'red') throw new Error(`Elasticsearch at ${redactUrl(this.url)} is red (ELASTICSEARCH_URL): a primary shard is unassigned`);
  }

  /**
   * Creates the index, or adds the mapping's new fields to an existing one (a changed field type or vector size is
   * refused); either way the dynamic `settings` and the refresh interval are applied.
   */
  private async ensureIndex(index: string, dynamicSettings: estypes.IndicesIndexSettings, mappings: estypes.MappingTypeMapping, metaAtCreation?: Record<string, string>): Promise<boolean> {
    if (await this.client.indices.exists({ index })) {
      try {
        await this.client.indices.putMapping({ index, ...mappings });
        await this.client.indices.putSettings({ index, settings: { ...dynamicSettings, refresh_interval: this.refreshInterval() } });
      } catch (err) {
        throw new Error(`the mapping of Elasticsearch index ${index} cannot be upgraded (a field changed type, or the embedder's dimensions changed: re-create the index or use another prefix): ${errorText(err)}`);
      }
      return false;
    }
    const settings: estypes.IndicesIndexSettings = { ...dynamicSettings, number_of_shards: 1 };
    if (this.options.replicas !== undefined) settings.number_of_replicas = this.options.replicas;
    settings.refresh_interval = this.refreshInterval();
    try {
      await this.client.indices.create({ index, settings, mappings: metaAtCreation ? { ...mappings, _meta: metaAtCreation } : mappings });
      return true;
    } catch (err) {
      // Another replica of the service created it first.
      if (!(err instanceof errors.ResponseError && JSON.stringify(err.body).includes('resource_already_exists_exception'))) throw err;
      return false;
    }
  }

  private refreshInterval(): string {
    return this.options.refreshInterval ?? '1s';
  }

  /**
   * Runs `apply` (any upsert/promote/remove/setBookmark calls, concurrent ones included) and resolves once every write
   * it made is searchable, waiting once for the next periodic refresh instead of once per write: the indexer applies a
   * run of events this way. Outside a batch each write method waits for it before it returns.
   */
  async batch<T>(apply: () => Promise<T>): Promise<T> {
    await this.ready();
    const written = new Set<string>();
    const result = await this.pendingRefresh.run(written, apply);
    if (written.size > 0) await this.awaitRefresh([...written]);
    return result;
  }

  async upsert(card: IndexedCard): Promise<boolean> {
    await this.ready();
    if (card.vector.length !== this.dimensions) throw new Error(`vector has ${card.vector.length} dimensions, the index ${this.dimensions}`);
    const at = card.updatedAt.getTime();
    const { words: cardWords, text } = cardText(card.content);
    const magnitude = Math.hypot(...card.vector);
    const vector = Array.from(card.vector);
    const scope = scopeOf(card);
    const freshWords = card.collisionOf ? [] : vocabularyWords(cardWords).filter((w) => !this.knownWords.has(vocabularyId(scope, w)));
    for (let attempt = 0; ; attempt++) {
      // One round trip reads the tombstone and, of the stored card, its sequence number and the fields the write keeps or compares.
      const read = await this.client.mget({
        docs: [
          { _index: this.names.removed, _id: card.cardId, _source: false },
          { _index: this.names.cards, _id: card.cardId, _source: ['updated_at', 'collection_ids', 'collision_of', 'collisions', 'created_at'] },
        ],
      });
      const [tombstone, stored] = read.docs;
      if (foundDoc(tombstone)) return false;
      const existing = foundDoc(stored)
        ? { source: stored._source as Pick<CardSource, 'updated_at' | 'collection_ids' | 'collision_of' | 'collisions' | 'created_at'>, seqNo: stored._seq_no!, primaryTerm: stored._primary_term! }
        : undefined;
      if (existing && existing.source.updated_at > at) return false;
      const operations: unknown[] = [];
      for (const word of freshWords) operations.push(...this.vocabularyCreate(scope, word));
      const document: CardSource = {
        card_id: card.cardId,
        author_id: card.authorId,
        content: card.content,
        text,
        words: cardWords,
        tags: card.tags,
        tags_lower: normalizeTags(card.tags),
        link: card.link,
        link_lower: linkFilterForm(card.link),
        private: card.private,
        root: !card.collisionOf,
        collision_of: card.collisionOf ?? null,
        collection_ids: existing?.source.collection_ids ?? [],
        ...(magnitude > 0 ? { vector } : {}),
        has_vector: magnitude > 0,
        vector_point_id: card.vectorPointId,
        updated_at: at,
        // A snapshot without created_at (from a producer before it was sent) keeps the one stored.
        ...(card.createdAt ? { created_at: card.createdAt.getTime() } : existing?.source.created_at !== undefined ? { created_at: existing.source.created_at } : {}),
        embedder: this.embedderId,
        collisions: (existing?.source.collisions ?? []).map(withDecodedLink),
        ...(card.collisionOf ? { entered: true, entered_collections: true } : {}),
        ...WORDS_FOLDED,
        links_decoded: true,
      };
      // The card is written only if nobody wrote it since it was read (sequence number), or created only if still absent.
      operations.push(
        existing
          ? { index: { _index: this.names.cards, _id: card.cardId, if_seq_no: existing.seqNo, if_primary_term: existing.primaryTerm } }
          : { create: { _index: this.names.cards, _id: card.cardId } },
        document,
      );
      // One round trip writes the new vocabulary words and the card.
      const response = await this.client.bulk({ operations: operations as estypes.BulkOperationContainer[] });
      const items = response.items.map((item) => Object.values(item)[0]!);
      for (const outcome of items.slice(0, -1)) {
        // 409: the word is in the vocabulary already.
        if (outcome.error && outcome.status !== 409) throw new Error(`writing to ${outcome._index} failed: ${outcome.error.reason ?? outcome.error.type}`);
      }
      const written = items[items.length - 1]!;
      if (written.status === 409 && attempt < 20) continue;
      if (written.error) throw new Error(`writing card ${card.cardId} failed: ${written.error.reason ?? written.error.type}`);
      this.rememberWords(freshWords.map((w) => vocabularyId(scope, w)));
      // The collision's entry goes on its root (and off a root it no longer collides with) before the tombstone is
      // checked, so a removal racing this write either finds the entry to take off or is seen here.
      const formerRoot = existing?.source.collision_of ?? undefined;
      if (formerRoot && formerRoot !== card.collisionOf) await this.takeCollisionEntry(formerRoot, card.cardId);
      if (card.collisionOf) await this.enterCollision(card.collisionOf, collisionEntry(document));
      // A removal that raced this write wins: it wrote its tombstone before deleting, so one of us sees the other.
      // A bookmark made while the card was absent was refreshed before its writer looked for the card: a search finds
      // it; the same for collisions of a new root whose writers found no root to enter.
      const [removed, early, earlyCollisions] = await Promise.all([
        this.isRemoved(card.cardId),
        existing ? Promise.resolve([]) : this.bookmarksOf(card.cardId),
        existing ? Promise.resolve([]) : this.collisionsOf(card.cardId),
      ]);
      if (removed) {
        await this.deleteCard(card.cardId);
        if (card.collisionOf) await this.takeCollisionEntry(card.collisionOf, card.cardId);
        await this.makeSearchable(this.names.cards);
        return false;
      }
      if (card.collisionOf) {
        await this.checkCollisionEntry(card.collisionOf, card.cardId);
        // A bookmark synced between this write and the entry's found no entry to copy its collections into.
        await this.copyEntryCollections(card.collisionOf, card.cardId);
      }
      const missing = early.filter((b) => b.added).map((b) => b.collection_id);
      if (missing.length > 0) await this.syncCollections(card.cardId, missing);
      if (earlyCollisions.length > 0) await this.changeCollisionEntries(card.cardId, earlyCollisions.map((entry) => ({ cardId: entry.card_id, entry })));
      await this.makeSearchable(this.names.cards, ...(freshWords.length > 0 ? [this.names.vocabulary] : []));
      return true;
    }
  }

  /**
   * Reads the card's `root` and `words` and flips it to a root by a partial update under its sequence number (retried on
   * conflict): its text and vector neither read nor sent. A card that is a root already (a replay) is not written; its
   * words still go to the vocabulary (a crash may have come between the two), and only what changed is refreshed.
   */
  async promote(cardId: string): Promise<boolean> {
    await this.ready();
    for (let attempt = 0; ; attempt++) {
      const current = await this.cardFields(cardId, ['root', 'words', 'private', 'author_id', 'collision_of']);
      if (!current) return false;
      const promoting = !current.source.root;
      // No longer a collision: it lends its former root nothing. Taken off first, so a promotion cut short between
      // the two writes and replayed still finds the former root (a replay after both finds nothing to take off).
      const tookEntry = promoting && current.source.collision_of ? await this.takeCollisionEntry(current.source.collision_of, cardId) : false;
      if (promoting) {
        try {
          await this.client.update({
            index: this.names.cards,
            id: cardId,
            doc: { root: true, collision_of: null } satisfies Partial<CardSource>,
            if_seq_no: current.seqNo,
            if_primary_term: current.primaryTerm,
          });
        } catch (err) {
          if (err instanceof errors.ResponseError && err.statusCode === 409 && attempt < 20) continue;
          // Removed since it was read.
          if (err instanceof errors.ResponseError && err.statusCode === 404) return false;
          throw err;
        }
      }
      const addedWords = await this.addToVocabulary(current.source.words, scopeOf({ private: current.source.private, authorId: current.source.author_id }));
      const written = [...(promoting || tookEntry ? [this.names.cards] : []), ...(addedWords > 0 ? [this.names.vocabulary] : [])];
      if (written.length > 0) await this.makeSearchable(...written);
      return true;
    }
  }

  async remove(cardId: string, removedAt: Date): Promise<void> {
    await this.ready();
    // Tombstones are read in real time (GET), so they need no refresh.
    await this.client.index({ index: this.names.removed, id: cardId, document: { removed_at: removedAt.getTime() } });
    // A collision's entry comes off its root after the card is gone (an upsert racing this checks the tombstone after entering it).
    const root = (await this.cardFields(cardId, ['collision_of']))?.source.collision_of ?? undefined;
    const [deleted, bookmarks] = await Promise.all([this.deleteCard(cardId), this.bookmarksOf(cardId)]);
    if (root && (await this.takeCollisionEntry(root, cardId)) && !deleted) await this.makeSearchable(this.names.cards);
    for (let i = 0; i < bookmarks.length; i += BOOKMARK_PAGE) {
      const page = bookmarks.slice(i, i + BOOKMARK_PAGE);
      await this.client.bulk({ operations: page.map((b) => ({ delete: { _index: this.names.bookmarks, _id: bookmarkId(b.collection_id, cardId) } })) });
    }
    // A replayed removal (or one of a card never stored) deleted nothing searchable. Whoever deleted the card refreshes.
    if (deleted) await this.makeSearchable(this.names.cards);
  }

  async pruneMarkers(before: Date, limit: number): Promise<number> {
    await this.ready();
    const at = before.getTime();
    const tombstones = await this.deleteMatching(this.names.removed, { range: { removed_at: { lt: at } } }, limit);
    if (tombstones >= limit) return tombstones;
    // Removed bookmarks change no search (a card's collections are the added ones): no refresh of the cards needed.
    return tombstones + (await this.deleteMatching(this.names.bookmarks, { bool: { filter: [{ term: { added: false } }, { range: { at: { lt: at } } }] } }, limit - tombstones));
  }

  /**
   * Deletes at most `limit` documents matching `query`, each only as it was found (if_seq_no): one rewritten meanwhile
   * (a bookmark added again) stays. Search, then bulk delete: no delete_by_query, which a node without the reindex
   * module lacks.
   */
  private async deleteMatching(index: string, query: estypes.QueryDslQueryContainer, limit: number): Promise<number> {
    await this.client.indices.refresh({ index });
    const found = await this.client.search({ index, query, size: limit, _source: false, seq_no_primary_term: true });
    const hits = found.hits.hits.filter((h) => h._id !== undefined && h._seq_no !== undefined && h._primary_term !== undefined);
    if (hits.length === 0) return 0;
    const result = await this.client.bulk({ operations: hits.map((h) => ({ delete: { _index: index, _id: h._id!, if_seq_no: h._seq_no!, if_primary_term: h._primary_term! } })) });
    return result.items.filter((item) => item.delete?.result === 'deleted').length;
  }

  async setBookmark(collectionId: string, cardId: string, added: boolean, at: Date): Promise<void> {
    await this.ready();
    // A removed card's bookmarks were deleted with it (and it never comes back): a late event leaves none behind.
    if (await this.isRemoved(cardId)) return;
    if (!(await this.writeBookmark(collectionId, cardId, added, at.getTime()))) return;
    let outcome = await this.syncCollections(cardId, [collectionId]);
    if (outcome === 'absent') {
      // The card is not stored yet. Make the bookmark visible to the search its creator runs right after creating it,
      // then look again: either the creator finds this bookmark, or this look finds the card.
      await this.awaitRefresh([this.names.bookmarks]);
      outcome = await this.syncCollections(cardId, [collectionId]);
    }
    if (outcome === 'written') await this.makeSearchable(this.names.cards);
  }

  async get(cardId: string): Promise<StoredCard | undefined> {
    await this.ready();
    const found = await this.cardFields(cardId);
    return found ? this.fromSource(found.source) : undefined;
  }

  async vectorPointOf(cardId: string): Promise<StoredPoint | undefined> {
    await this.ready();
    const found = await this.cardFields(cardId, ['vector_point_id', 'collision_of']);
    if (!found) return undefined;
    return { vectorPointId: found.source.vector_point_id, ...(found.source.collision_of ? { collisionOf: found.source.collision_of } : {}) };
  }

  async contentOf(cardId: string): Promise<string | undefined> {
    await this.ready();
    return (await this.cardFields(cardId, ['content']))?.source.content;
  }

  /**
   * This instance created the cards index in ready() (not when another replica created it first), or the index's
   * lost-index check is still pending (its `_meta`: the start that created it has not settled it).
   */
  async createdAtStart(): Promise<boolean> {
    await this.ready();
    if (this.createdCardsIndex) return true;
    const mappings = await this.client.indices.getMapping({ index: this.names.cards });
    return Object.values(mappings)[0]?.mappings?._meta?.lost_index_check === 'pending';
  }

  async lostIndexCheckSettled(): Promise<void> {
    await this.ready();
    await this.client.indices.putMapping({ index: this.names.cards, _meta: { lost_index_check: 'settled' } });
  }

  async count(): Promise<number> {
    await this.ready();
    return (await this.client.count({ index: this.names.cards, query: { bool: { filter: this.searchable() } } })).count;
  }

  /** Cards whose vectors another embedder made (after EMBEDDINGS_URL or the model changed): not searchable until refreshed. */
  async staleVectorCount(): Promise<number> {
    await this.ready();
    return (await this.client.count({ index: this.names.cards, query: { bool: { must_not: [{ term: { embedder: this.embedderId } }] } } })).count;
  }

  /**
   * Re-embeds the stale cards in batches with the current embedder and makes them searchable again; answers how many.
   * Only what embedding needs is read (id, text, snapshot time, sequence number) and only the new vector is written.
   */
  async refreshStaleVectors(embed: (texts: string[]) => Promise<Float32Array[]>, batchSize = 256): Promise<number> {
    await this.ready();
    let refreshed = 0;
    for (;;) {
      const result = await this.client.search<Pick<CardSource, 'card_id' | 'content' | 'updated_at'>>({
        index: this.names.cards,
        query: { bool: { must_not: [{ term: { embedder: this.embedderId } }] } },
        sort: [{ card_id: { order: 'asc' } }],
        size: Math.min(batchSize, this.window),
        _source: ['card_id', 'content', 'updated_at'],
        seq_no_primary_term: true,
      });
      const hits = result.hits.hits;
      if (hits.length === 0) return refreshed;
      const vectors = await embed(hits.map((h) => h._source!.content));
      for (const [i, hit] of hits.entries()) {
        const vector = vectors[i]!;
        if (vector.length !== this.dimensions) throw new Error(`vector has ${vector.length} dimensions, the index ${this.dimensions}`);
        await this.replaceVector(hit._source!.card_id, hit._source!.updated_at, vector, { seqNo: hit._seq_no!, primaryTerm: hit._primary_term! });
      }
      await this.makeSearchable(this.names.cards);
      refreshed += hits.length;
    }
  }

  /**
   * Writes the vector the current embedder made of the snapshot of `updatedAt` by a partial update under the card's
   * sequence number (`seen`, then re-read on conflict): a newer snapshot, embedded by the current embedder when stored,
   * is left alone; a bookmark written meanwhile is kept. The new vector must travel anyway; the text never does.
   */
  private async replaceVector(cardId: string, updatedAt: number, vector: Float32Array, seen: { seqNo: number; primaryTerm: number }): Promise<void> {
    const magnitude = Math.hypot(...vector);
    // null clears the previous vector: a zero vector is not stored (cosine cannot index it).
    const doc = { vector: magnitude > 0 ? Array.from(vector) : null, has_vector: magnitude > 0, embedder: this.embedderId } satisfies Partial<CardSource>;
    let version = seen;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.update({ index: this.names.cards, id: cardId, doc, if_seq_no: version.seqNo, if_primary_term: version.primaryTerm });
        return;
      } catch (err) {
        // Removed since it was read.
        if (err instanceof errors.ResponseError && err.statusCode === 404) return;
        if (!(err instanceof errors.ResponseError && err.statusCode === 409 && attempt < 20)) throw err;
      }
      const current = await this.cardFields(cardId, ['updated_at', 'embedder']);
      if (!current || current.source.updated_at !== updatedAt || current.source.embedder === this.embedderId) return;
      version = current;
    }
  }

  async close(): Promise<void> {
    await this.initialized?.catch(() => undefined);
    await this.client.close();
  }

  async nearest(query: Float32Array, scope: SearchScope, page: PageRequest): Promise<IndexPage> {
    await this.ready();
    return this.asSearch(page.signal, (read) => this.nearestNow(query, scope, page, read));
  }

  /**
   * Runs a search's requests with its call's signal (Elasticsearch's transport option): once its caller went away (a
   * cancelled call), the request under way is aborted, its connection closed, and no later stage is sent. The search
   * then ends with the AbortError a cancelled call ends with (stopIfCancelled), not the transport's RequestAbortedError,
   * which the gRPC server would log as an unexpected failure and answer INTERNAL.
   */
  private async asSearch<T>(signal: AbortSignal | undefined, search: (read: ReadOptions) => Promise<T>): Promise<T> {
    stopIfCancelled(signal);
    try {
      return await search(signal ? { signal } : {});
    } catch (err) {
      stopIfCancelled(signal);
      throw err;
    }
  }

  private async nearestNow(query: Float32Array, scope: SearchScope, page: PageRequest, read: ReadOptions): Promise<IndexPage> {
    if (query.length !== this.dimensions) throw new Error(`query has ${query.length} dimensions, the index ${this.dimensions}`);
    if (isZeroVector(query)) return { hits: [], total: 0, reachable: 0 };
    const filter = await this.scopeFilter(scope, read);
    const total = (await this.client.count({ index: this.names.cards, query: { bool: { filter } } }, read)).count;
    const reachable = Math.min(total, this.window);
    const wanted = Math.min(page.offset + page.limit, reachable);
    if (wanted <= page.offset) return { hits: [], total, reachable };
    const vectorFilter: estypes.QueryDslQueryContainer[] = [...filter, { term: { has_vector: true } }];
    type Tied = Pick<CardSource, 'card_id' | 'created_at'>;
    const hitOf = (h: estypes.SearchHit<Tied>, score: number) => ({ cardId: h._source!.card_id, createdAt: h._source!.created_at ?? undefined, score });
    const [withVector, withoutVector] = await Promise.all([
      this.nearestWithTies(query, vectorFilter, wanted, read),
      // Cards whose text has no known word have the zero vector, which cosine cannot index: their cosine is 0.
      this.client.search<Tied>({
        index: this.names.cards,
        query: { bool: { filter: [...filter, { term: { has_vector: false } }] } },
        size: wanted,
        sort: TIE_SORT,
        _source: ['card_id', 'created_at'],
      }, read),
    ]);
    // Elasticsearch scores cosine kNN as (1 + cosine) / 2.
    const hits = withVector.map((h) => hitOf(h, 2 * (h._score ?? 0.5) - 1));
    for (const h of withoutVector.hits.hits) hits.push(hitOf(h, 0));
    hits.sort((a, b) => b.score - a.score || compareTies(a, b));
    return { hits: hits.slice(page.offset, wanted).map(({ cardId, score }) => ({ cardId, score })), total, reachable };
  }

  /**
   * The `wanted` nearest cards, and with them every card tied with the last one: kNN cuts a tie at k in its own order,
   * so while the hit after the cut ties with the one before it, k doubles (up to the window) until the tie ends inside.
   */
  private async nearestWithTies(query: Float32Array, filter: estypes.QueryDslQueryContainer[], wanted: number, read: ReadOptions): Promise<estypes.SearchHit<Pick<CardSource, 'card_id' | 'created_at'>>[]> {
    let k = Math.min(this.window, wanted + 1);
    for (;;) {
      const result = await this.client.search<Pick<CardSource, 'card_id' | 'created_at'>>({
        index: this.names.cards,
        knn: { field: 'vector', query_vector: Array.from(query), k, num_candidates: Math.min(this.window, Math.max(100, k * 2)), filter },
        size: k,
        _source: ['card_id', 'created_at'],
      }, read);
      const hits = result.hits.hits;
      if (hits.length < k || hits.length <= wanted || k >= this.window || hits[hits.length - 1]!._score !== hits[wanted - 1]!._score) return hits;
      k = Math.min(this.window, k * 2);
    }
  }

  async matchText(query: string, scope: SearchScope, page: PageRequest): Promise<IndexPage> {
    await this.ready();
    return this.asSearch(page.signal, (read) => this.matchTextNow(query, scope, page, read));
  }

  private async matchTextNow(query: string, scope: SearchScope, page: PageRequest, read: ReadOptions): Promise<IndexPage> {
    const { sequence: written, terms: queried } = queryTerms(query);
    if (queried.length === 0) return { hits: [], total: 0, reachable: 0 };
    // A paste's most telling words, not its first ones (one more request, for queries of more distinct words only).
    let terms = queried;
    if (hasMoreWordsThanSearched(queried)) {
      const { frequency: queriedFrequency } = await this.documentFrequencies(queried.map((term) => term.word), scope.callerId, read);
      terms = tellingTerms(queried, (word) => queriedFrequency.get(word) ?? 0);
    }
    // The forms whose misspellings count (a query word, a Korean word's stem); the others are matched only as they are.
    const spelled = [...new Set(terms.flatMap((term) => term.forms.filter((f) => f.variants).map((f) => f.word)))];
    const formWords = [...new Set(terms.flatMap((term) => term.forms.map((f) => f.word)))];
    // Corpus statistics (known words, their spellings, word weights) from the cards the caller may see only.
    const candidateLists = await this.vocabularyCandidates(spelled, scope.callerId, read);
    const candidates = new Map(spelled.map((word, i) => [word, candidateLists[i]!]));
    const { cards, frequency } = await this.documentFrequencies([...new Set([...formWords, ...candidateLists.flat()])], scope.callerId, read);
    if (cards === 0) return { hits: [], total: 0, reachable: 0 };
    const matchedTerms = terms.map(({ word, forms, share, name }) => ({
      word,
      share,
      name,
      // A Korean word's forms (the word as written, its stem, a one-syllable stem), each at its factor, the best per word.
      matches: bestFormMatches(
        forms,
        (form) => {
          const exactFrequency = frequency.get(form.word) ?? 0;
          if (!form.variants) return exactFrequency > 0 ? [{ word: form.word, similarity: 1 }] : [];
          return matchWord(form.word, exactFrequency, candidates.get(form.word)!.map((w): VocabularyCandidate => ({ word: w, documentFrequency: frequency.get(w) ?? 0 })));
        },
        (m) => m.word,
      ),
    }));
    // A word written apart that no card holds, not even misspelled, weighs nothing: the rest is searched without it
    // (as the embedded index; the frequencies read above tell it, no further request).
    const { terms: held, sequence } = heldQueryWords(query, written, matchedTerms, (term) => term.matches.length === 0);
    const queryWords = held.map((term) => term.word);
    const perWord: { matches: (WordMatch & FormLimits)[]; weight: number; name: string | undefined }[] = held.map(({ matches, share, name }) => {
      const matched = matches.reduce((sum, m) => sum + (frequency.get(m.word) ?? 0), 0);
      // A part of a name of several words weighs its share of the name (node and js of node.js: half each).
      return { matches, weight: wordWeight(cards, matched) * (share ?? 1), name };
    });
    const weightSum = perWord.reduce((sum, w) => sum + w.weight, 0);
    if (perWord.every((w) => w.matches.length === 0)) return { hits: [], total: 0, reachable: 0 };
    // Only cards holding every query word can hold the phrase: all of the query's words in a row, as the embedded index.
    const phrase = sequence.join(' ');
    const phrasePossible = queryWords.length >= 2 && phrase.length >= 3 && queryWords.every((w) => (frequency.get(w) ?? 0) > 0);
    const phraseWeight = queryWords.length >= 2 ? PHRASE_WEIGHT : 0;
    // score = (1 - phraseWeight) * sum over words of weight * best similarity / weightSum + phraseWeight if the phrase is held.
    const should: estypes.QueryDslQueryContainer[] = perWord
      .filter((w) => w.matches.length > 0)
      .map((w) => ({
        dis_max: {
          tie_breaker: 0,
          queries: w.matches.map((m) => ({ constant_score: { filter: matchFilter(m), boost: ((1 - phraseWeight) * w.weight * m.similarity) / weightSum } })),
        },
      }));
    const words = should.length;
    if (phrasePossible) should.push({ constant_score: { filter: { match_phrase: { text: phrase } }, boost: phraseWeight } });
    const from = Math.min(page.offset, this.window);
    const size = Math.max(0, Math.min(page.limit, this.window - from));
    const filter = await this.scopeFilter(scope, read);
    let floor = textScoreFloor(this.minTextScore, perWord, phraseWeight);
    if (isLongQuery(held)) {
      // A paste's floor depends on the best word score (without the phrase) a card in scope reaches (longQueryFloor).
      const best = await this.client.search({
        index: this.names.cards,
        query: { bool: { filter, should: should.slice(0, words), minimum_should_match: 1 } },
        min_score: Math.min(floor, LONG_QUERY_MIN_SCORE) - 1e-6,
        sort: [{ _score: { order: 'desc' } }],
        track_total_hits: false,
        size: 1,
        _source: false,
      }, read);
      floor = longQueryFloor(floor, best.hits.hits[0]?._score ?? 0);
    }
    // A query of names: a card matches by its naming matches alone reaching namesFloor, whatever its whole score (the
    // embedded index's rule): a filter on the naming matches' own score, and that bound for the whole score too.
    const named = namesFloor(perWord, weightSum, phraseWeight);
    const matching: estypes.QueryDslQueryContainer[] = [...filter];
    if (Number.isFinite(named)) {
      const naming = perWord
        .map((w) => ({ ...w, matches: w.name === undefined ? [] : w.matches.filter((m) => m.similarity >= NAMING_MATCH) }))
        .filter((w) => w.matches.length > 0)
        .map((w) => ({
          dis_max: {
            tie_breaker: 0,
            queries: w.matches.map((m) => ({ constant_score: { filter: { term: { words: m.word } }, boost: ((1 - phraseWeight) * w.weight * m.similarity) / weightSum } })),
          },
        }));
      // No card names any of them: none matches.
      matching.push(naming.length > 0 ? { function_score: { query: { bool: { should: naming, minimum_should_match: 1 } }, min_score: named - 1e-6 } } : { match_none: {} });
      floor = named;
    }
    const result = await this.client.search<Pick<CardSource, 'card_id'>>({
      index: this.names.cards,
      query: { bool: { filter: matching, should, minimum_should_match: 1 } },
      // A float32 score may fall a hair under the threshold the embedded index compares in double precision.
      min_score: floor - 1e-6,
      sort: [{ _score: { order: 'desc' } }, ...TIE_SORT],
      track_scores: true,
      track_total_hits: true,
      from,
      size,
      _source: ['card_id'],
    }, read);
    const total = typeof result.hits.total === 'number' ? result.hits.total : (result.hits.total?.value ?? 0);
    return { hits: result.hits.hits.map((h) => ({ cardId: h._source!.card_id, score: Math.min(1, h._score ?? 0) })), total, reachable: Math.min(total, this.window) };
  }

  /**
   * Per query word, the public vocabulary words and the caller's own private ones sharing the most trigrams with it
   * (the word itself included when known), ties by spelling: never a word only someone else's private cards brought.
   */
  private async vocabularyCandidates(queryWords: string[], callerId: string | undefined, read: ReadOptions): Promise<string[][]> {
    // A query of symbols alone (🌊🔥) has no word with spellings to look up.
    if (queryWords.length === 0) return [];
    const scopes = callerId === undefined ? [PUBLIC_SCOPE] : [PUBLIC_SCOPE, privateScope(callerId)];
    const searches: estypes.MsearchRequestItem[] = [];
    for (const word of queryWords) {
      if (isCjkCharacter(word)) {
        // One Chinese or Japanese character: the bigrams holding it that the most cards the caller may see hold
        // (characterBigrams), read from the cards' words (the vocabulary has no frequencies).
        searches.push({ index: this.names.cards });
        searches.push({
          size: 0,
          query: { bool: { filter: [...this.searchable(), visibleTo(callerId)] } },
          aggs: { bigrams: { terms: { field: 'words', include: `.${word}|${word}.`, size: CJK_CHARACTER_BIGRAMS } } },
        });
        continue;
      }
      searches.push({ index: this.names.vocabulary });
      searches.push({
        size: VOCABULARY_CANDIDATES,
        _source: ['word'],
        query: {
          bool: {
            filter: [{ terms: { scope: scopes } }],
            should: wordTrigrams(word).map((t) => ({ constant_score: { filter: { term: { trigrams: t } }, boost: 1 } })),
            minimum_should_match: 1,
          },
        },
        sort: [{ _score: { order: 'desc' } }, { word: { order: 'asc' } }],
      });
    }
    const response = await this.client.msearch<VocabularySource>({ searches }, read);
    return response.responses.map((r) => {
      if ('error' in r) throw new Error(`vocabulary lookup failed: ${JSON.stringify(r.error)}`);
      const bigrams = (r.aggregations?.bigrams as { buckets: { key: string }[] } | undefined)?.buckets;
      if (bigrams) return bigrams.map((b) => b.key);
      // A word both public and the caller's own comes twice.
      return [...new Set(r.hits.hits.map((h) => h._source!.word))];
    });
  }

  /** How many searchable root cards the caller may see, and how many of them hold each word. */
  private async documentFrequencies(wordList: string[], callerId: string | undefined, read: ReadOptions): Promise<{ cards: number; frequency: Map<string, number> }> {
    const result = await this.client.search({
      index: this.names.cards,
      size: 0,
      track_total_hits: true,
      query: { bool: { filter: [...this.searchable(), visibleTo(callerId)] } },
      aggs: { words: { filter: { terms: { words: wordList } }, aggs: { each: { terms: { field: 'words', include: wordList, size: wordList.length } } } } },
    }, read);
    const total = typeof result.hits.total === 'number' ? result.hits.total : (result.hits.total?.value ?? 0);
    const buckets = (result.aggregations?.words as { each: { buckets: { key: string; doc_count: number }[] } } | undefined)?.each.buckets ?? [];
    return { cards: total, frequency: new Map(buckets.map((b) => [b.key, b.doc_count])) };
  }

  /**
   * Adds the words of one scope not known to be there already (not refreshed: the caller makes them searchable);
   * answers how many it sent.
   */
  private async addToVocabulary(cardWords: string[], scope: string): Promise<number> {
    return this.addScopedWords([...new Set(cardWords)].map((word) => ({ scope, word })));
  }

  /** Adds these (scope, word) pairs not known to be there already; answers how many it sent. */
  private async addScopedWords(pairs: readonly { scope: string; word: string }[]): Promise<number> {
    const fresh = pairs.filter((p) => !this.knownWords.has(vocabularyId(p.scope, p.word)));
    if (fresh.length === 0) return 0;
    const operations = fresh.flatMap((p) => this.vocabularyCreate(p.scope, p.word));
    const response = await this.client.bulk({ operations: operations as estypes.BulkOperationContainer[] });
    for (const item of response.items) {
      const outcome = item.create;
      // 409: the word is in the vocabulary already.
      if (outcome?.error && outcome.status !== 409) throw new Error(`adding words to the vocabulary failed: ${outcome.error.reason ?? outcome.error.type}`);
    }
    this.rememberWords(fresh.map((p) => vocabularyId(p.scope, p.word)));
    return fresh.length;
  }

  /** The bulk operation that creates a word's vocabulary document in a scope, unless it is there. */
  private vocabularyCreate(scope: string, word: string): [unknown, VocabularySource] {
    return [{ create: { _index: this.names.vocabulary, _id: vocabularyId(scope, word) } }, { word, trigrams: wordTrigrams(word), scope }];
  }

  /**
   * How many vocabulary documents have no scope: written before scopes existed (any card's words, private ones
   * included). A query never looks at them; scopeVocabulary() replaces them.
   */
  async unscopedWordCount(): Promise<number> {
    await this.ready();
    return (await this.client.count({ index: this.names.vocabulary, query: { bool: { must_not: [{ exists: { field: 'scope' } }] } } })).count;
  }

  /**
   * Gives the vocabulary its scopes after an upgrade: writes every root card's words in the card's scope (page by page,
   * existing documents left as they are), then deletes the documents without a scope, and returns once that is
   * searchable. Until then, a typo is corrected only to words written since the upgrade. Idempotent, and safe beside
   * writes and other replicas doing the same. Answers how many root cards it read.
   */
  async scopeVocabulary(): Promise<number> {
    await this.ready();
    let read = 0;
    const pages = this.searchPages<Pick<CardSource, 'words' | 'private' | 'author_id'>>(
      { index: this.names.cards, query: { bool: { filter: [{ term: { root: true } }] } }, sort: [{ card_id: { order: 'asc' } }], _source: ['words', 'private', 'author_id'] },
      VOCABULARY_SCOPING_PAGE,
    );
    for await (const hits of pages) {
      const pairs = new Map<string, { scope: string; word: string }>();
      for (const hit of hits) {
        const scope = scopeOf({ private: hit._source!.private, authorId: hit._source!.author_id });
        for (const word of vocabularyWords(hit._source!.words)) pairs.set(vocabularyId(scope, word), { scope, word });
      }
      await this.addScopedWords([...pairs.values()]);
      read += hits.length;
    }
    // Their ids are the bare words, so the word orders them; deleted page by page (no delete-by-query module needed).
    const unscoped = this.searchPages<Pick<VocabularySource, 'word'>>(
      { index: this.names.vocabulary, query: { bool: { must_not: [{ exists: { field: 'scope' } }] } }, sort: [{ word: { order: 'asc' } }], _source: false },
      VOCABULARY_SCOPING_PAGE,
    );
    for await (const hits of unscoped) {
      const response = await this.client.bulk({ operations: hits.map((h) => ({ delete: { _index: this.names.vocabulary, _id: h._id! } })) });
      for (const item of response.items) {
        const outcome = item.delete;
        if (outcome?.error && outcome.status !== 404) throw new Error(`deleting unscoped vocabulary words failed: ${outcome.error.reason ?? outcome.error.type}`);
      }
    }
    await this.awaitRefresh([this.names.vocabulary]);
    return read;
  }

  /**
   * Cards stored before full-text words were folded whose words folding may change: one holds a character other than
   * a-z, 0-9 and the apostrophe (the only characters of a word ASCII text gives), and no write since marked it folded;
   * or stored before runs of Chinese, Japanese, Thai, Lao, Khmer or Myanmar were split (searchWords): one holds such a
   * character, and no write since marked it segmented; or holding a Korean word as it was written (a Hangul syllable),
   * before searchWords spelled Korean words in jamo without their particles; or holding Korean words (jamo) listed only
   * by their stems, before indexWords listed them as written and by their one-syllable stems too; or holding words of a
   * script with combining marks (Indic, Arabic, Hebrew), before searchWords kept the marks inside words; or holding
   * Arabic or Hebrew words listed only as written, before indexWords listed them without their prefixes too; or holding
   * Chinese characters as written, before searchWords folded traditional ones to simplified ones.
   */
  private unfoldedCards(): estypes.QueryDslQueryContainer {
    return {
      bool: {
        should: [
          { bool: { filter: [{ regexp: { words: { value: ".*[^a-z0-9'].*" } } }], must_not: [{ term: { folded: true } }] } },
          // Or stored before runs of unspaced scripts were split: a word holds such a character, no write since marked it.
          { bool: { filter: [{ regexp: { words: { value: `.*${UNSPACED_SCRIPT_CLASS}.*` } } }], must_not: [{ term: { segmented: true } }] } },
          // Or Korean stored before its words lost their particles and were spelled in jamo: no write since leaves a syllable.
          { regexp: { words: { value: `.*${HANGUL_SYLLABLE_CLASS}.*` } } },
          // Or Korean indexed by its stems alone, before its words as written and one-syllable stems were listed too.
          { bool: { filter: [{ regexp: { words: { value: `.*${JAMO_CLASS}.*` } } }], must_not: [{ term: { korean_forms: true } }] } },
          // Or words of a script with combining marks, cut at its marks before words kept them.
          { bool: { filter: [{ regexp: { words: { value: `.*${MARKED_SCRIPT_CLASS}.*` } } }], must_not: [{ term: { marks_folded: true } }] } },
          // Or Arabic and Hebrew words listed only as written, before they were listed without their prefixes too.
          { bool: { filter: [{ regexp: { words: { value: `.*${PREFIXING_SCRIPT_CLASS}.*` } } }], must_not: [{ term: { prefix_forms: true } }] } },
          // Or Chinese characters indexed as written, before traditional ones were folded to simplified ones.
          { bool: { filter: [{ regexp: { words: { value: `.*${HAN_CLASS}.*` } } }], must_not: [{ term: { chinese_folded: true } }] } },
        ],
        minimum_should_match: 1,
      },
    };
  }

  /** How many cards hold words indexed before diacritics were folded (foldStoredWords() rewrites them). */
  async unfoldedCardCount(): Promise<number> {
    await this.ready();
    return (await this.client.count({ index: this.names.cards, query: this.unfoldedCards() })).count;
  }

  /**
   * Rewrites the words and phrase text of cards stored before diacritics were folded or unspaced scripts split
   * (unfoldedCards), from their stored text, page by
   * page (partial updates under each card's sequence number; a card written meanwhile is folded by its writer), and
   * adds a root's folded words to the vocabulary in its scope; returns once that is searchable. Until then such a card
   * is found by its words as they were spelled. Idempotent, safe beside writes and other replicas doing the same.
   * Answers how many cards it read.
   */
  async foldStoredWords(): Promise<number> {
    await this.ready();
    let read = 0;
    const pages = this.searchPages<Pick<CardSource, 'content' | 'root' | 'private' | 'author_id'>>(
      { index: this.names.cards, query: this.unfoldedCards(), sort: [{ card_id: { order: 'asc' } }], _source: ['content', 'root', 'private', 'author_id'], seq_no_primary_term: true },
      VOCABULARY_SCOPING_PAGE,
    );
    for await (const hits of pages) {
      const pairs = new Map<string, { scope: string; word: string }>();
      for (const hit of hits) {
        const source = hit._source!;
        const { words: cardWords, text } = cardText(source.content);
        const doc = { words: cardWords, text, ...WORDS_FOLDED } satisfies Partial<CardSource>;
        // A card's writer folds it too; its content is the same whoever wrote the card since (the words are of it alone).
        if (!(await this.rewriteStoredCard(hit, () => doc, (card) => !FOLD_MARKS.every((mark) => card[mark] === true)))) continue;
        if (!source.root) continue;
        const scope = scopeOf({ private: source.private, authorId: source.author_id });
        for (const word of vocabularyWords(cardWords)) pairs.set(vocabularyId(scope, word), { scope, word });
      }
      await this.addScopedWords([...pairs.values()]);
      read += hits.length;
    }
    await this.awaitRefresh([this.names.cards, this.names.vocabulary]);
    return read;
  }

  /** How many cards hold a link, or collision entries' links, written before links were compared decoded (decodeStoredLinks() rewrites them). */
  async undecodedLinkCount(): Promise<number> {
    await this.ready();
    return (await this.client.count({ index: this.names.cards, query: UNDECODED_LINKS })).count;
  }

  /**
   * Rewrites the compared link (link_lower) of cards, and of their collision entries, written before links were
   * compared in linkFilterForm (UNDECODED_LINKS), from their stored link, page by page (partial updates under each
   * card's sequence number; a card written meanwhile is rewritten by its writer). Until then the link filter finds such
   * a card only by the link as it is spelled. Idempotent, safe beside writes and other replicas doing the same; returns
   * once that is searchable. Answers how many cards it read.
   */
  async decodeStoredLinks(): Promise<number> {
    await this.ready();
    let read = 0;
    const pages = this.searchPages<Pick<CardSource, 'link' | 'collisions'>>(
      { index: this.names.cards, query: UNDECODED_LINKS, sort: [{ card_id: { order: 'asc' } }], _source: ['link', 'collisions'], seq_no_primary_term: true },
      VOCABULARY_SCOPING_PAGE,
    );
    for await (const hits of pages) {
      for (const hit of hits) {
        await this.rewriteStoredCard(hit, (card) => ({ link_lower: linkFilterForm(card.link), collisions: (card.collisions ?? []).map(withDecodedLink), links_decoded: true }), (card) => card.links_decoded !== true);
      }
      read += hits.length;
    }
    await this.awaitRefresh([this.names.cards]);
    return read;
  }

  /**
   * One start-time rewrite of a stored card (`doc` of the card as read), under its sequence number. A
   * card's writer since did the rewrite itself, but another rewrite did not: foldStoredWords and decodeStoredLinks run
   * side by side at start (and other replicas' too), so a card both had to rewrite came out of the upgrade with one
   * of them skipped (its link not decoded). On a conflict the card is read again and the rewrite tried again while it
   * still `needs` it. False when the card is gone or no longer needs it.
   */
  private async rewriteStoredCard<S extends Partial<CardSource>>(
    hit: { _id?: string | null; _source?: S; _seq_no?: number; _primary_term?: number },
    doc: (card: S | CardSource) => Partial<CardSource>,
    needs: (card: CardSource) => boolean,
  ): Promise<boolean> {
    let seqNo = hit._seq_no!;
    let primaryTerm = hit._primary_term!;
    let current: S | CardSource = hit._source!;
    for (let attempt = 0; ; attempt++) {
      try {
        await this.client.update({ index: this.names.cards, id: hit._id!, doc: doc(current), if_seq_no: seqNo, if_primary_term: primaryTerm });
        return true;
      } catch (err) {
        if (err instanceof errors.ResponseError && err.statusCode === 404) return false;
        if (!(err instanceof errors.ResponseError && err.statusCode === 409 && attempt < 20)) throw err;
      }
      const stored = await this.storedCard(hit._id!);
      if (!stored || !needs(stored.card)) return false;
      ({ seqNo, primaryTerm, card: current } = stored);
    }
  }

  private async storedCard(id: string): Promise<{ card: CardSource; seqNo: number; primaryTerm: number } | undefined> {
    try {
      const got = await this.client.get<CardSource>({ index: this.names.cards, id });
      return got.found ? { card: got._source!, seqNo: got._seq_no!, primaryTerm: got._primary_term! } : undefined;
    } catch (err) {
      if (err instanceof errors.ResponseError && err.statusCode === 404) return undefined;
      throw err;
    }
  }

  private rememberWords(fresh: readonly string[]): void {
    if (this.knownWords.size + fresh.length > 200_000) this.knownWords.clear();
    for (const w of fresh) this.knownWords.add(w);
  }

  /**
   * Makes what was written to these indices searchable before the write method returns: it waits for their next
   * refresh now, or, inside batch(), once when the batch ends.
   */
  private async makeSearchable(...indices: string[]): Promise<void> {
    const batch = this.pendingRefresh.getStore();
    if (batch) {
      for (const index of indices) batch.add(index);
      return;
    }
    await this.awaitRefresh(indices);
  }

  /**
   * Resolves once the indices' next periodic refresh has made every write acknowledged so far searchable. A forced
   * refresh per write would make a segment each (a trickle of single events: a segment per event, each merged again
   * with its HNSW graph); Elasticsearch's advice is refresh=wait_for, which rides on the periodic refresh. wait_for is
   * a parameter of writes, and one write to a single-shard index waits for the refresh that also publishes everything
   * written before it, so the wait is a delete of a document that never exists: it stores nothing a search can see.
   */
  private async awaitRefresh(indices: readonly string[]): Promise<void> {
    const operations = [...new Set(indices)].map((index) => ({ delete: { _index: index, _id: REFRESH_PROBE_ID } }));
    const response = await this.client.bulk({ refresh: 'wait_for', operations }, { requestTimeout: this.refreshWaitTimeoutMs });
    for (const item of response.items) {
      const outcome = item.delete;
      if (outcome?.error) throw new Error(`waiting for ${outcome._index} to refresh failed: ${outcome.error.reason ?? outcome.error.type}`);
    }
  }

  /** Root cards whose vectors the current embedder made: cards embedded by another wait for refreshStaleVectors(). */
  private searchable(): estypes.QueryDslQueryContainer[] {
    return [{ term: { root: true } }, { term: { embedder: this.embedderId } }];
  }

  /** Filters of a scope: a searchable root card visible to the caller, with any listed tag, a listed link part, in the collection. */
  private async scopeFilter(scope: SearchScope, read: ReadOptions): Promise<estypes.QueryDslQueryContainer[]> {
    const visible: estypes.QueryDslQueryContainer[] = [...this.searchable(), visibleTo(scope.callerId)];
    const filter = [...visible];
    const tags = askedTags(scope.tags);
    const links = scope.links.map((l) => linkFilterForm(l.trim())).filter((l) => l.length > 0);
    if (tags.length > 0 || links.length > 0) filter.push(await this.tagAndLinkFilter(tags, links, scope.callerId, visible, read));
    if (scope.collectionId !== undefined) {
      // The root bookmarked itself, or through the entry of a bookmarked collision the caller may see (nested).
      const should: estypes.QueryDslQueryContainer[] = [
        { term: { collection_ids: scope.collectionId } },
        { nested: { path: 'collisions', query: { bool: { filter: [visibleEntry(scope.callerId), { term: { 'collisions.collection_ids': scope.collectionId } }] } } } },
      ];
      const viaUnentered = await this.rootsOfBookmarkedCollisions(scope.collectionId, scope.callerId, read);
      for (let i = 0; i < viaUnentered.length; i += CARDS_PER_PAGE) should.push({ terms: { card_id: viaUnentered.slice(i, i + CARDS_PER_PAGE) } });
      filter.push({ bool: { should, minimum_should_match: 1 } });
    }
    return filter;
  }

  /**
   * Roots holding any listed tag and a listed link part themselves, or through a collision the caller may see: a
   * collision is shown inside its root's entry. Someone else's private collision never counts (its tags stay hidden).
   */
  private async tagAndLinkFilter(tags: string[], links: string[], callerId: string | undefined, visible: estypes.QueryDslQueryContainer[], read: ReadOptions): Promise<estypes.QueryDslQueryContainer> {
    const matching: estypes.QueryDslQueryContainer[] = [];
    if (tags.length > 0) matching.push({ terms: { tags_lower: tags } });
    const visibleCollisions = [{ term: { root: false } }, visibleTo(callerId)];
    // Collisions written before entries existed, until denormalizeCollisions() has entered them (then none).
    const unentered = [...visibleCollisions, { bool: { must_not: [{ term: { entered: true } }] } }];
    const [ownLinks, entryLinks, unenteredLinks] =
      links.length > 0
        ? await Promise.all([this.linkFilter(links, visible, read), this.linkFilter(links, visibleCollisions, read, ENTRY_LINK), this.linkFilter(links, unentered, read)])
        : [];
    const own = { bool: { filter: [...matching, ...(ownLinks ? [ownLinks] : [])] } };
    // The root's entries of collisions the caller may see: each one matched against the whole filter (nested).
    const entryFilter: estypes.QueryDslQueryContainer[] = [visibleEntry(callerId)];
    if (tags.length > 0) entryFilter.push({ terms: { 'collisions.tags_lower': tags } });
    if (entryLinks) entryFilter.push(entryLinks);
    const should: estypes.QueryDslQueryContainer[] = [own, { nested: { path: 'collisions', query: { bool: { filter: entryFilter } } } }];
    const roots = await this.rootsOfCollisionsMatching([...unentered, ...matching, ...(unenteredLinks ? [unenteredLinks] : [])], read);
    for (let i = 0; i < roots.length; i += CARDS_PER_PAGE) should.push({ terms: { card_id: roots.slice(i, i + CARDS_PER_PAGE) } });
    return { bool: { should, minimum_should_match: 1 } };
  }

  /** The roots of the collisions these filters select, read page by page. */
  private async rootsOfCollisionsMatching(filter: estypes.QueryDslQueryContainer[], read: ReadOptions): Promise<string[]> {
    const roots = new Set<string>();
    const pages = this.searchPages<Pick<CardSource, 'collision_of'>>(
      { index: this.names.cards, query: { bool: { filter } }, sort: [{ card_id: { order: 'asc' } }], _source: ['collision_of'] },
      Math.min(CARDS_PER_PAGE, this.window),
      read,
    );
    for await (const hits of pages) for (const h of hits) if (h._source?.collision_of) roots.add(h._source.collision_of);
    return [...roots];
  }

  /**
   * Cards (within `base`) whose link contains any of the (lower-cased) strings; with `fields` of the collision entries,
   * the entries of such collisions, inside a nested query on them.
   */
  private async linkFilter(links: string[], base: estypes.QueryDslQueryContainer[], read: ReadOptions, fields: LinkFields = CARD_LINK): Promise<estypes.QueryDslQueryContainer> {
    const should: estypes.QueryDslQueryContainer[] = [];
    const long: string[] = [];
    for (const link of links) {
      if ([...link].length <= MAX_WILDCARD_CHARS) should.push(linkContaining(link, fields.link));
      else long.push(link);
    }
    if (long.length > 0) {
      const found = await this.cardsWithLinkContaining(long, base, read);
      for (let i = 0; i < found.length; i += CARDS_PER_PAGE) should.push({ terms: { [fields.id]: found.slice(i, i + CARDS_PER_PAGE) } });
    }
    return should.length === 0 ? { match_none: {} } : { bool: { should, minimum_should_match: 1 } };
  }

  /** Cards (within `base`) whose link contains one of these long strings: those holding a string's start, checked whole here. */
  private async cardsWithLinkContaining(long: string[], base: estypes.QueryDslQueryContainer[], read: ReadOptions): Promise<string[]> {
    const starts = [...new Set(long.map((link) => [...link].slice(0, MAX_WILDCARD_CHARS).join('')))];
    const query = { bool: { filter: [...base, { bool: { should: starts.map((start) => linkContaining(start)), minimum_should_match: 1 } }] } };
    const found: string[] = [];
    const pages = this.searchPages<Pick<CardSource, 'card_id' | 'link_lower'>>(
      { index: this.names.cards, query, sort: [{ card_id: { order: 'asc' } }], _source: ['card_id', 'link_lower'] },
      Math.min(CARDS_PER_PAGE, this.window),
      read,
    );
    for await (const hits of pages) for (const h of hits) if (long.some((link) => h._source!.link_lower.includes(link))) found.push(h._source!.card_id);
    return found;
  }

  /**
   * Puts a collision's entry on its root. When the root is not stored (yet), waits for the collision's document to be
   * searchable and looks again: either this look finds the root, or the root's writer, which looks for its collisions
   * after creating it (collisionsOf), finds this one. A removed root never comes back: nothing to wait for.
   */
  private async enterCollision(rootId: string, entry: CollisionEntry): Promise<void> {
    if ((await this.changeCollisionEntries(rootId, [{ cardId: entry.card_id, entry }])) !== 'absent') return;
    if (await this.isRemoved(rootId)) return;
    await this.awaitRefresh([this.names.cards]);
    await this.changeCollisionEntries(rootId, [{ cardId: entry.card_id, entry }]);
  }

  /** Takes a card's entry off a root; true when one was there. */
  private async takeCollisionEntry(rootId: string, cardId: string): Promise<boolean> {
    return (await this.changeCollisionEntries(rootId, [{ cardId }])) === 'written';
  }

  /**
   * After entering a collision on its root: if the card has since been removed or rewritten under another root (a
   * concurrent write that may have taken the entry off before this one put it on), takes the entry off again.
   */
  private async checkCollisionEntry(rootId: string, cardId: string): Promise<void> {
    const now = await this.cardFields(cardId, ['collision_of']);
    if (!now || now.source.collision_of !== rootId) await this.takeCollisionEntry(rootId, cardId);
  }

  /**
   * Applies entry changes to a root's document (an entry, or none to take the card's off) by a partial update of its
   * `collisions` under its sequence number, retried on conflict: its text and vector never travel. An entry older than
   * the one stored (updated_at) is not applied. Not refreshed: the caller makes it searchable.
   */
  private async changeCollisionEntries(rootId: string, changes: readonly { cardId: string; entry?: CollisionEntry }[]): Promise<'absent' | 'unchanged' | 'written'> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.cardFields(rootId, ['collisions']);
      if (!current) return 'absent';
      const entries = [...(current.source.collisions ?? [])];
      let changed = false;
      for (const { cardId, entry } of changes) {
        const at = entries.findIndex((e) => e.card_id === cardId);
        if (!entry) {
          if (at >= 0) {
            entries.splice(at, 1);
            changed = true;
          }
        } else if (at < 0) {
          entries.push(entry);
          changed = true;
        } else if (entries[at]!.updated_at <= entry.updated_at && JSON.stringify(entries[at]) !== JSON.stringify(entry)) {
          entries[at] = entry;
          changed = true;
        }
      }
      if (!changed) return 'unchanged';
      try {
        await this.client.update({
          index: this.names.cards,
          id: rootId,
          doc: { collisions: entries } satisfies Partial<CardSource>,
          if_seq_no: current.seqNo,
          if_primary_term: current.primaryTerm,
        });
        return 'written';
      } catch (err) {
        if (err instanceof errors.ResponseError && err.statusCode === 409 && attempt < 50) continue;
        if (err instanceof errors.ResponseError && err.statusCode === 404) return 'absent';
        throw err;
      }
    }
  }

  /** The entries of the stored collisions of a root (as last refreshed), read page by page. */
  private async collisionsOf(rootId: string): Promise<CollisionEntry[]> {
    const found: CollisionEntry[] = [];
    const pages = this.searchPages<CardSource>(
      {
        index: this.names.cards,
        query: { bool: { filter: [{ term: { root: false } }, { term: { collision_of: rootId } }] } },
        sort: [{ card_id: { order: 'asc' } }],
        _source: ['card_id', 'author_id', 'private', 'tags_lower', 'link_lower', 'updated_at', 'collection_ids'],
      },
      Math.min(CARDS_PER_PAGE, this.window),
    );
    for await (const hits of pages) for (const h of hits) found.push(collisionEntry(h._source!));
    return found;
  }

  /** How many collisions were written before roots held their entries (not yet entered by denormalizeCollisions()). */
  async unenteredCollisionCount(): Promise<number> {
    await this.ready();
    return (await this.client.count({ index: this.names.cards, query: UNENTERED_COLLISIONS })).count;
  }

  /**
   * Puts the entries of collisions written before entries existed on their roots, page by page, and marks them entered;
   * until then, filters find roots through such collisions by looking them up per query, as before. Idempotent, and
   * safe beside writes and other replicas doing the same. Answers how many collisions it read.
   */
  async denormalizeCollisions(): Promise<number> {
    await this.ready();
    let read = 0;
    const pages = this.searchPages<CardSource>(
      {
        index: this.names.cards,
        query: UNENTERED_COLLISIONS,
        sort: [{ card_id: { order: 'asc' } }],
        _source: ['card_id', 'author_id', 'private', 'tags_lower', 'link_lower', 'updated_at', 'collision_of', 'collection_ids'],
        seq_no_primary_term: true,
      },
      VOCABULARY_SCOPING_PAGE,
    );
    for await (const hits of pages) {
      const byRoot = new Map<string, { cardId: string; entry: CollisionEntry }[]>();
      for (const h of hits) {
        const root = h._source!.collision_of;
        if (!root) continue;
        let list = byRoot.get(root);
        if (!list) byRoot.set(root, (list = []));
        list.push({ cardId: h._source!.card_id, entry: collisionEntry(h._source!) });
      }
      // An absent root is removed, or not stored yet: its writer then looks for its collisions (collisionsOf).
      for (const [root, changes] of byRoot) await this.changeCollisionEntries(root, changes);
      for (const h of hits) {
        try {
          await this.client.update({ index: this.names.cards, id: h._id!, doc: { entered: true, entered_collections: true } satisfies Partial<CardSource>, if_seq_no: h._seq_no!, if_primary_term: h._primary_term! });
        } catch (err) {
          // Rewritten or removed meanwhile: a write since entries exist enters it itself.
          if (!(err instanceof errors.ResponseError && (err.statusCode === 409 || err.statusCode === 404))) throw err;
        }
      }
      // A bookmark synced while the hits were read (an entry copies its collections read in real time).
      for (const h of hits) if (h._source!.collision_of) await this.copyEntryCollections(h._source!.collision_of, h._source!.card_id);
      read += hits.length;
    }
    await this.awaitRefresh([this.names.cards]);
    return read;
  }

  /**
   * Roots of the collection's bookmarked collisions the caller may see whose entries do not hold their collections yet
   * (written before entries did, until denormalizeCollisions() has entered them; then none): a collision is searched
   * through its root and shown inside the root's entry.
   */
  private async rootsOfBookmarkedCollisions(collectionId: string, callerId: string | undefined, read: ReadOptions): Promise<string[]> {
    return this.rootsOfCollisionsMatching([
      { term: { root: false } },
      { term: { collection_ids: collectionId } },
      visibleTo(callerId),
      { bool: { must_not: [{ term: { entered_collections: true } }] } },
    ], read);
  }

  private async isRemoved(cardId: string): Promise<boolean> {
    return this.client.exists({ index: this.names.removed, id: cardId });
  }

  /** Deletes the card's document; false when there was none. */
  private async deleteCard(cardId: string): Promise<boolean> {
    try {
      await this.client.delete({ index: this.names.cards, id: cardId });
      return true;
    } catch (err) {
      if (err instanceof errors.ResponseError && err.statusCode === 404) return false;
      throw err;
    }
  }

  /** Last writer wins per (collection, card), by external version = change time; false when a later change is stored. */
  private async writeBookmark(collectionId: string, cardId: string, added: boolean, at: number): Promise<boolean> {
    try {
      await this.client.index({
        index: this.names.bookmarks,
        id: bookmarkId(collectionId, cardId),
        document: { collection_id: collectionId, card_id: cardId, added, at } satisfies BookmarkSource,
        version: Math.max(0, at),
        version_type: 'external_gte',
      });
      return true;
    } catch (err) {
      if (err instanceof errors.ResponseError && err.statusCode === 409) return false;
      throw err;
    }
  }

  /** Which of these collections bookmark the card, read in real time from the bookmark documents. */
  private async addedCollections(cardId: string, collectionIds: readonly string[]): Promise<string[]> {
    const ids = [...new Set(collectionIds)];
    const added: string[] = [];
    for (let i = 0; i < ids.length; i += BOOKMARK_PAGE) {
      const result = await this.client.mget<BookmarkSource>({ index: this.names.bookmarks, ids: ids.slice(i, i + BOOKMARK_PAGE).map((c) => bookmarkId(c, cardId)) });
      for (const d of result.docs) if ('found' in d && d.found && d._source?.added) added.push(d._source.collection_id);
    }
    return added.sort();
  }

  /** Every bookmark document of the card (as last refreshed), read in pages. */
  private async bookmarksOf(cardId: string): Promise<BookmarkSource[]> {
    const found: BookmarkSource[] = [];
    const pages = this.searchPages<BookmarkSource>({ index: this.names.bookmarks, query: { term: { card_id: cardId } }, sort: [{ collection_id: { order: 'asc' } }] }, BOOKMARK_PAGE);
    for await (const hits of pages) found.push(...hits.map((h) => h._source!));
    return found;
  }

  /**
   * The hits of a search, page after page of `pageSize` in `sort` order (which must end on a unique field), each page
   * asked with search_after from the last: never a from + size past the result window. The caller stops when it has enough.
   */
  private async *searchPages<T>(request: estypes.SearchRequest & { sort: estypes.Sort }, pageSize: number, read: ReadOptions = {}): AsyncGenerator<estypes.SearchHit<T>[]> {
    let after: estypes.SortResults | undefined;
    for (;;) {
      const result = await this.client.search<T>({ ...request, size: pageSize, ...(after ? { search_after: after } : {}) }, read);
      const hits = result.hits.hits;
      if (hits.length > 0) yield hits;
      if (hits.length < pageSize) return;
      after = hits[hits.length - 1]!.sort;
    }
  }

  private fromSource(source: CardSource): StoredCard {
    return cardFromSource(source, this.dimensions);
  }

  /**
   * Copies the state of these bookmarks onto the card's document (read after the card, so a concurrent change is never
   * lost); its other collections stay as they are, so a bookmark event reads one bookmark document however many
   * collections hold the card. Only `collection_ids` is read and sent (a partial update under the card's sequence
   * number): the card's text and vector never travel for a bookmark. Not refreshed: the caller makes it searchable.
   */
  private async syncCollections(cardId: string, collectionIds: readonly string[]): Promise<'absent' | 'unchanged' | 'written'> {
    const outcome = await this.syncCardCollections(cardId, collectionIds);
    if (outcome !== 'written') return outcome;
    // A collision's collections also go into its entry on its root, which a collection scope reads.
    const root = (await this.cardFields(cardId, ['collision_of']))?.source.collision_of;
    if (root) await this.copyEntryCollections(root, cardId);
    return outcome;
  }

  /**
   * Copies a collision's collections, read in real time after its root's entry, into that entry (a partial update of
   * the root's `collisions` under its sequence number, retried on conflict). Whoever changes the collision's collections
   * copies them after its write, so the last copy reads the last change. Not refreshed: the caller makes it searchable.
   */
  private async copyEntryCollections(rootId: string, cardId: string): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      const root = await this.cardFields(rootId, ['collisions']);
      if (!root) return false;
      const entries = [...(root.source.collisions ?? [])];
      const at = entries.findIndex((e) => e.card_id === cardId);
      if (at < 0) return false;
      const card = await this.cardFields(cardId, ['collection_ids', 'collision_of']);
      if (!card || card.source.collision_of !== rootId) return false;
      const collections = [...(card.source.collection_ids ?? [])].sort();
      if (entries[at]!.collection_ids !== undefined && entries[at]!.collection_ids.join(',') === collections.join(',')) return false;
      entries[at] = { ...entries[at]!, collection_ids: collections };
      try {
        await this.client.update({
          index: this.names.cards,
          id: rootId,
          doc: { collisions: entries } satisfies Partial<CardSource>,
          if_seq_no: root.seqNo,
          if_primary_term: root.primaryTerm,
        });
        return true;
      } catch (err) {
        if (err instanceof errors.ResponseError && err.statusCode === 409 && attempt < 50) continue;
        if (err instanceof errors.ResponseError && err.statusCode === 404) return false;
        throw err;
      }
    }
  }

  private async syncCardCollections(cardId: string, collectionIds: readonly string[]): Promise<'absent' | 'unchanged' | 'written'> {
    const synced = new Set(collectionIds);
    let wrote = false;
    for (let attempt = 0; ; attempt++) {
      const current = await this.cardFields(cardId, ['collection_ids']);
      if (!current) return wrote ? 'written' : 'absent';
      const stored = current.source.collection_ids ?? [];
      const collections = [...new Set([...stored.filter((c) => !synced.has(c)), ...(await this.addedCollections(cardId, [...synced]))])].sort();
      if (collections.join(',') === [...stored].sort().join(',')) return wrote ? 'written' : 'unchanged';
      try {
        await this.client.update({
          index: this.names.cards,
          id: cardId,
          doc: { collection_ids: collections } satisfies Partial<CardSource>,
          if_seq_no: current.seqNo,
          if_primary_term: current.primaryTerm,
        });
      } catch (err) {
        if (err instanceof errors.ResponseError && err.statusCode === 409 && attempt < 20) continue;
        // Removed since it was read.
        if (err instanceof errors.ResponseError && err.statusCode === 404) return wrote ? 'written' : 'absent';
        throw err;
      }
      wrote = true;
      // A bookmark that changed after we read it had its own sync read the card before this write, and find nothing to
      // do: its change would be lost under ours. Read the bookmarks again and sync once more if they moved.
      const now = await this.addedCollections(cardId, [...synced]);
      if (now.join(',') === collections.filter((c) => synced.has(c)).join(',') || attempt >= 20) return 'written';
    }
  }

  /** These fields of the card (all of them when none are named) with its sequence number, read in real time. */
  private async cardFields<K extends keyof CardSource = keyof CardSource>(cardId: string, fields?: K[]): Promise<{ source: Pick<CardSource, K>; seqNo: number; primaryTerm: number } | undefined> {
    try {
      const doc = await this.client.get<Pick<CardSource, K>>({ index: this.names.cards, id: cardId, ...(fields ? { _source_includes: fields } : {}) });
      if (!doc.found || !doc._source) return undefined;
      return { source: doc._source, seqNo: doc._seq_no!, primaryTerm: doc._primary_term! };
    } catch (err) {
      if (err instanceof errors.ResponseError && err.statusCode === 404) return undefined;
      throw err;
    }
  }
}

function foundDoc(doc: estypes.MgetResponseItem | undefined): doc is estypes.GetGetResult {
  if (doc && 'error' in doc && doc.error) throw new Error(`reading ${doc._index}/${doc._id} failed: ${doc.error.reason ?? doc.error.type}`);
  return !!doc && 'found' in doc && doc.found;
}

/** The card a document holds; a zero vector is not stored (cosine cannot index it). */
function cardFromSource(source: CardSource, dimensions: number): StoredCard {
  return {
    cardId: source.card_id,
    authorId: source.author_id,
    content: source.content,
    tags: source.tags,
    link: source.link,
    private: source.private,
    collectionIds: [...source.collection_ids].sort(),
    vector: source.vector ? Float32Array.from(source.vector) : new Float32Array(dimensions),
    vectorPointId: source.vector_point_id,
    ...(source.collision_of ? { collisionOf: source.collision_of } : {}),
    updatedAt: new Date(source.updated_at),
    ...(typeof source.created_at === 'number' ? { createdAt: new Date(source.created_at) } : {}),
  };
}

function normalizeTags(tags: readonly string[]): string[] {
  return tags.map((t) => tagFilterForm(t.trim())).filter((t) => t.length > 0);
}

/**
 * The `tags_lower` values a tag filter looks for: each tag's folded form (tagFilterForm, as cards are written now) and
 * its filterForm, as cards written before the fold hold it, until they are re-indexed: equal under filterForm implies
 * equal under the fold, so the second form finds no card the first would not.
 */
function askedTags(tags: readonly string[]): string[] {
  return [...new Set(tags.flatMap((t) => [tagFilterForm(t.trim()), filterForm(t.trim())]).filter((t) => t.length > 0))];
}

/**
 * The cards a query word's match counts for: those holding its word, but none of its `unless` (TermForm.unless), and
 * one of its `onlyWith` when given (TermForm.onlyWith).
 */
function matchFilter(match: { word: string } & FormLimits): estypes.QueryDslQueryContainer {
  const holding = { term: { words: match.word } };
  if (match.unless === undefined && match.onlyWith === undefined) return holding;
  return {
    bool: {
      filter: [holding, ...(match.onlyWith === undefined ? [] : [{ terms: { words: [...match.onlyWith] } }])],
      ...(match.unless === undefined ? {} : { must_not: [{ terms: { words: [...match.unless] } }] }),
    },
  };
}

/** Public cards, and the caller's own private ones. */
function visibleTo(callerId: string | undefined): estypes.QueryDslQueryContainer {
  return callerId === undefined
    ? { term: { private: false } }
    : { bool: { should: [{ term: { private: false } }, { term: { author_id: callerId } }], minimum_should_match: 1 } };
}

function bookmarkId(collectionId: string, cardId: string): string {
  return `${collectionId}:${cardId}`;
}

function escapeWildcard(value: string): string {
  return value.replace(/[\\*?]/g, (c) => `\\${c}`);
}

function linkContaining(text: string, field = 'link_lower'): estypes.QueryDslQueryContainer {
  return { wildcard: { [field]: { value: `*${escapeWildcard(text)}*` } } };
}

/** Where a link filter looks: a card's own link, or its collisions' entries on a root (inside a nested query). */
interface LinkFields {
  link: string;
  id: string;
}
const CARD_LINK: LinkFields = { link: 'link_lower', id: 'card_id' };
const ENTRY_LINK: LinkFields = { link: 'collisions.link_lower', id: 'collisions.card_id' };

/** A root's entries of public collisions, and of the caller's own private ones (inside a nested query). */
function visibleEntry(callerId: string | undefined): estypes.QueryDslQueryContainer {
  return callerId === undefined
    ? { term: { 'collisions.private': false } }
    : { bool: { should: [{ term: { 'collisions.private': false } }, { term: { 'collisions.author_id': callerId } }], minimum_should_match: 1 } };
}

/** The entry of a collision's document on its root. */
function collisionEntry(source: Pick<CardSource, 'card_id' | 'author_id' | 'private' | 'tags_lower' | 'link_lower' | 'updated_at' | 'collection_ids'>): CollisionEntry {
  return {
    card_id: source.card_id,
    author_id: source.author_id,
    private: source.private,
    tags_lower: source.tags_lower,
    link_lower: linkFilterForm(source.link_lower),
    updated_at: source.updated_at,
    collection_ids: [...(source.collection_ids ?? [])].sort(),
  };
}

/** The marks every write and foldStoredWords set: a card lacking one has words to rewrite. */
const FOLD_MARKS = ['folded', 'segmented', 'korean_forms', 'marks_folded', 'prefix_forms', 'chinese_folded'] as const;
const WORDS_FOLDED = Object.fromEntries(FOLD_MARKS.map((mark) => [mark, true])) as Record<(typeof FOLD_MARKS)[number], true>;

/** The entry with its link in linkFilterForm (entries written before links were decoded hold filterForm). */
function withDecodedLink(entry: CollisionEntry): CollisionEntry {
  return { ...entry, link_lower: linkFilterForm(entry.link_lower) };
}

/**
 * Cards written before links were compared decoded whose link, or a collision entry's link, may read otherwise in
 * linkFilterForm: it holds a '%' or an `xn--` label (filterForm and linkFilterForm agree on any other link).
 */
const UNDECODED_LINKS: estypes.QueryDslQueryContainer = {
  bool: {
    must_not: [{ term: { links_decoded: true } }],
    should: [
      linkContaining('%'),
      linkContaining('xn--'),
      { nested: { path: 'collisions', query: { bool: { should: [linkContaining('%', ENTRY_LINK.link), linkContaining('xn--', ENTRY_LINK.link)], minimum_should_match: 1 } } } },
    ],
    minimum_should_match: 1,
  },
};

/** Collisions whose entries on their roots are missing, or lack their collections (written before those existed). */
const UNENTERED_COLLISIONS: estypes.QueryDslQueryContainer = {
  bool: {
    filter: [{ term: { root: false } }],
    should: [{ bool: { must_not: [{ term: { entered: true } }] } }, { bool: { must_not: [{ term: { entered_collections: true } }] } }],
    minimum_should_match: 1,
  },
};

function errorText(err: unknown): string {
  if (err instanceof errors.ResponseError) return JSON.stringify((err.body as { error?: unknown } | undefined)?.error ?? err.body);
  return (err as Error).message;
}
