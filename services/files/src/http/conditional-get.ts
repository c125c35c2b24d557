import { httpDateMs } from '@cards/platform';

/**
 * RFC 9110 conditional GET for the raw download (section 13): If-None-Match and If-Modified-Since, evaluated in the
 * order of 13.2.2 (If-None-Match first; If-Modified-Since only without it), on GET and HEAD. Evaluated only once the
 * caller may read the file: a 304 is never an answer to someone the file is hidden from (they get the 404 as before).
 */

/** One entity-tag of a list (RFC 9110 §8.8.3: `W/` for a weak one; its opaque part may hold commas), and the comma or end after it. */
const LISTED_ENTITY_TAG = /(W\/)?("[\x21\x23-\x7e\x80-\xff]*")\s*(?:,|$)/y;
/** Empty list elements and the whitespace around elements (RFC 9110 §5.6.1.2: ignored). */
const EMPTY_LIST_ELEMENTS = /[\s,]*/y;

/**
 * The entity-tags of an If-None-Match or If-Match list, by their opaque part (what the weak comparison compares) and
 * whether they are weak, or '*'; undefined when the value is not such a list (then the header is ignored: RFC 9110
 * gives a malformed one no meaning).
 */
function entityTagsOf(value: string): '*' | Array<{ opaque: string; weak: boolean }> | undefined {
  const trimmed = value.trim();
  if (trimmed === '*') return '*';
  const tags: Array<{ opaque: string; weak: boolean }> = [];
  for (let at = 0; ; ) {
    EMPTY_LIST_ELEMENTS.lastIndex = at;
    EMPTY_LIST_ELEMENTS.exec(trimmed);
    if (EMPTY_LIST_ELEMENTS.lastIndex === trimmed.length) break;
    LISTED_ENTITY_TAG.lastIndex = EMPTY_LIST_ELEMENTS.lastIndex;
    const match = LISTED_ENTITY_TAG.exec(trimmed);
    if (!match) return undefined;
    tags.push({ opaque: match[2]!, weak: match[1] !== undefined });
    at = LISTED_ENTITY_TAG.lastIndex;
  }
  return tags.length > 0 ? tags : undefined;
}

/** The one value of a header Node may hand as several (If-None-Match's list members joined as one list). */
function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Whether a GET or HEAD of the file is answered 304 Not Modified (RFC 9110 §13.1.2, §13.1.3, §13.2.2): If-None-Match
 * `*` (the file is there) or naming its ETag by the weak comparison (`W/"…"` matches too: the file's bytes are the
 * same); without If-None-Match, If-Modified-Since a valid HTTP-date no earlier than its Last-Modified (which has whole
 * seconds). A malformed If-None-Match or an If-Modified-Since that is no HTTP-date is ignored, as the RFC has it.
 */
export function notModified(
  method: string | undefined,
  headers: { 'if-none-match'?: string | string[]; 'if-modified-since'?: string | string[] },
  etag: string,
  lastModified: Date,
): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  const ifNoneMatch = single(headers['if-none-match']);
  if (ifNoneMatch !== undefined) {
    const tags = entityTagsOf(ifNoneMatch);
    if (tags === '*') return true;
    if (tags !== undefined) return tags.some(({ opaque }) => opaque === etag.replace(/^W\//, ''));
    // A malformed If-None-Match is no condition: If-Modified-Since is still ignored (13.1.3: only without If-None-Match).
    return false;
  }
  const ifModifiedSince = single(headers['if-modified-since']);
  if (ifModifiedSince === undefined) return false;
  const since = httpDateMs(ifModifiedSince);
  if (since === undefined) return false;
  return Math.floor(lastModified.getTime() / 1000) * 1000 <= since;
}

/**
 * The precondition a GET or HEAD of the file fails (RFC 9110 §13.2.2 steps 1 and 2, evaluated before If-None-Match and
 * If-Modified-Since), to be answered 412 Precondition Failed: If-Match neither `*` nor naming its strong ETag by the
 * strong comparison (§13.1.1: a weak `W/"…"` never matches), or, without If-Match, If-Unmodified-Since a valid
 * HTTP-date before its Last-Modified (whole seconds; §13.1.4). A malformed If-Match or an If-Unmodified-Since that is no
 * HTTP-date is ignored, as If-None-Match's and If-Modified-Since's are. A resuming client sends them with its Range
 * (§13.1.1) to be told when the file is no longer the one it holds part of.
 */
export function preconditionFailed(
  method: string | undefined,
  headers: { 'if-match'?: string | string[]; 'if-unmodified-since'?: string | string[] },
  etag: string,
  lastModified: Date,
): 'If-Match' | 'If-Unmodified-Since' | undefined {
  if (method !== 'GET' && method !== 'HEAD') return undefined;
  const ifMatch = single(headers['if-match']);
  if (ifMatch !== undefined) {
    const tags = entityTagsOf(ifMatch);
    if (tags === undefined || tags === '*') return undefined;
    const strong = !etag.startsWith('W/');
    return strong && tags.some(({ opaque, weak }) => !weak && opaque === etag) ? undefined : 'If-Match';
  }
  const ifUnmodifiedSince = single(headers['if-unmodified-since']);
  if (ifUnmodifiedSince === undefined) return undefined;
  const since = httpDateMs(ifUnmodifiedSince);
  if (since === undefined) return undefined;
  return Math.floor(lastModified.getTime() / 1000) * 1000 <= since ? undefined : 'If-Unmodified-Since';
}
