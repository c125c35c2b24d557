import { fitsCharacters, freeTextProblem, MAX_TAGS, splitTags } from '@cards/card-rules';
import { InvalidArgumentError, isUuid, refuseIfProblem } from '@cards/platform';
import { stopIfCancelled, totalPages, type IndexHit, type SearchScope } from '../domain/model';
import type { CardIndex, Embedder } from '../domain/ports';
import { shingleJaccard } from '../domain/text';
import { sameNamesAndFigures } from '../domain/names-and-figures';

export const MAX_QUERY_LENGTH = 2000;
export const MAX_PAGE_SIZE = 100;
const MAX_FILTER_LINKS = 100;
/** Not-yet-indexed cards one near-duplicate lookup may compare with (each is embedded on every lookup). */
export const MAX_UNINDEXED = 50;
/**
 * Word 3-shingle Jaccard that confirms a bag-of-words embedder's duplicate verdict: near copies keep most shingles
 * (>= 0.8 on the labelled set), while texts sharing only vocabulary share almost none (< 0.1).
 */
export const MIN_SHINGLE_OVERLAP_FOR_ORDER_BLIND = 0.5;
/**
 * Whether the wording confirms an order-blind embedder's verdict that `content` copies `stored`: such an embedder
 * cannot tell texts of the same words apart, nor one template filled in with other names and figures (another
 * quarter's or another company's report), which users keep as distinct cards.
 */
function wordingConfirmsCopy(content: string, stored: string): boolean {
  return shingleJaccard(content, stored) >= MIN_SHINGLE_OVERLAP_FOR_ORDER_BLIND && sameNamesAndFigures(content, stored);
}

export interface SearchQuery {
  query: string;
  tags: string[];
  links: string[];
  callerId?: string;
  collectionId?: string;
  /** 1-based. */
  page: number;
  pageSize: number;
}

export interface SearchResult {
  hits: IndexHit[];
  totalHits: number;
  totalPages: number;
}

/** A root card the index may not hold yet, as the cards service sends it with a near-duplicate lookup. */
export interface UnindexedCard {
  cardId: string;
  content: string;
}

export interface NearDuplicate {
  cardId: string;
  cosine: number;
  duplicate: boolean;
}

/** The search use cases: semantic and full-text search, near-duplicate lookup. */
export class SearchService {
  constructor(
    private readonly index: CardIndex,
    private readonly embedder: Embedder,
  ) {}

  /**
   * Cards nearest in meaning to the query. A query of which the embedder knows no word (a product name, a rare term)
   * has no meaning to it: its vector is zero and would match nothing, so it is answered by the words themselves, as
   * a full-text search with the same scope and filters. `signal`: the call's; once aborted (its caller went away),
   * the search ends with an AbortError at its next step instead of scoring the index for nobody.
   */
  async semanticSearch(query: SearchQuery, signal?: AbortSignal): Promise<SearchResult> {
    const { scope, offset, pageSize } = validate(query);
    stopIfCancelled(signal);
    const [vector] = await this.embedder.embed([query.query], signal);
    if (vector!.every((v) => v === 0)) return this.fullTextSearch(query, signal);
    stopIfCancelled(signal);
    const page = await this.index.nearest(vector!, scope, { offset, limit: pageSize, signal });
    return { hits: page.hits, totalHits: page.total, totalPages: totalPages(page.reachable, pageSize) };
  }

  async fullTextSearch(query: SearchQuery, signal?: AbortSignal): Promise<SearchResult> {
    const { scope, offset, pageSize } = validate(query);
    stopIfCancelled(signal);
    const page = await this.index.matchText(query.query, scope, { offset, limit: pageSize, signal });
    return { hits: page.hits, totalHits: page.total, totalPages: totalPages(page.reachable, pageSize) };
  }

  /**
   * The root cards nearest to a new card's content that the caller may see, with this embedder's duplicate verdict.
   * `unindexed` are root cards the caller may see that the index may not hold yet (it learns of new cards from events):
   * they are ranked with the indexed ones as if they were indexed, so a card sent right after the one it copies finds it.
   */
  async findNearDuplicates(content: string, callerId: string | undefined, limit: number, unindexed: readonly UnindexedCard[] = [], signal?: AbortSignal): Promise<NearDuplicate[]> {
    if (content.trim() === '') throw new InvalidArgumentError('content: must not be empty');
    if (callerId !== undefined && !isUuid(callerId)) throw new InvalidArgumentError('caller_id: must be a UUID');
    if (unindexed.length > MAX_UNINDEXED) throw new InvalidArgumentError(`unindexed: at most ${MAX_UNINDEXED} cards`);
    if (unindexed.some((c) => !isUuid(c.cardId))) throw new InvalidArgumentError('unindexed: card_id must be a UUID');
    const capped = Math.min(Math.max(limit || 1, 1), 25);
    stopIfCancelled(signal);
    const [vector, ...unindexedVectors] = await this.embedder.embed([content, ...unindexed.map((c) => c.content)], signal);
    stopIfCancelled(signal);
    const page = await this.index.nearest(vector!, { callerId, tags: [], links: [] }, { offset: 0, limit: capped, signal });
    const indexed = new Set(page.hits.map((h) => h.cardId));
    const nearest: { cardId: string; cosine: number; content?: string }[] = page.hits.map((h) => ({ cardId: h.cardId, cosine: h.score }));
    unindexed.forEach((card, i) => {
      if (indexed.has(card.cardId)) return;
      indexed.add(card.cardId);
      nearest.push({ cardId: card.cardId, cosine: dot(vector!, unindexedVectors[i]!), content: card.content });
    });
    nearest.sort((a, b) => b.cosine - a.cosine);
    const threshold = this.embedder.duplicateThreshold(content.length);
    const verdicts: NearDuplicate[] = [];
    for (const hit of nearest.slice(0, capped)) {
      let duplicate = hit.cosine >= threshold;
      if (duplicate && !this.embedder.orderAware) {
        // Up to 25 reads of stored texts, one after the other (Elasticsearch: a request each): none once the caller left.
        if (hit.content === undefined) stopIfCancelled(signal);
        const stored = hit.content ?? (await this.index.contentOf(hit.cardId));
        duplicate = stored !== undefined && wordingConfirmsCopy(content, stored);
      }
      verdicts.push({ cardId: hit.cardId, cosine: hit.cosine, duplicate });
    }
    return verdicts;
  }
}

/** Cosine of two unit-length vectors. */
function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
}

function validate(query: SearchQuery): { scope: SearchScope; offset: number; pageSize: number } {
  if (query.query.trim() === '') throw new InvalidArgumentError('content: must not be empty');
  if (!fitsCharacters(query.query, MAX_QUERY_LENGTH)) throw new InvalidArgumentError(`content: at most ${MAX_QUERY_LENGTH} characters`);
  // A query may be a pasted paragraph: tabs and line breaks are kept, as in a card's text.
  refuseIfProblem('content', freeTextProblem(query.query, 'multi-line'));
  if (!Number.isInteger(query.page) || query.page < 1) throw new InvalidArgumentError('page: must be a positive integer');
  const pageSize = query.pageSize || 25;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > MAX_PAGE_SIZE) throw new InvalidArgumentError(`page_size: must be between 1 and ${MAX_PAGE_SIZE}`);
  if (query.callerId !== undefined && !isUuid(query.callerId)) throw new InvalidArgumentError('caller_id: must be a UUID');
  if (query.collectionId !== undefined && !isUuid(query.collectionId)) throw new InvalidArgumentError('collection_id: must be a UUID');
  // Filter tags are read as stored tags are: an item 'a, b' is the two tags a and b.
  const tags = splitTags(query.tags);
  if (tags.length > MAX_TAGS) throw new InvalidArgumentError(`tag_set: at most ${MAX_TAGS} tags`);
  if (query.links.length > MAX_FILTER_LINKS) throw new InvalidArgumentError(`link: at most ${MAX_FILTER_LINKS} links`);
  return {
    scope: { callerId: query.callerId, tags, links: query.links, collectionId: query.collectionId?.toLowerCase() },
    offset: (query.page - 1) * pageSize,
    pageSize,
  };
}
