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
 * The entity-tags of an If-None-Match list, by their opaque part (what the weak comparison compares), or '*'; undefined
 * when the value is not such a list (then the header is ignored: RFC 9110 gives a malformed one no meaning).
 */
function entityTagsOf(value: string): '*' | string[] | undefined {
  const trimmed = value.trim();
  if (trimmed === '*') return '*';
  const tags: string[] = [];
  for (let at = 0; ; ) {
    EMPTY_LIST_ELEMENTS.lastIndex = at;
    EMPTY_LIST_ELEMENTS.exec(trimmed);
    if (EMPTY_LIST_ELEMENTS.lastIndex === trimmed.length) break;
    LISTED_ENTITY_TAG.lastIndex = EMPTY_LIST_ELEMENTS.lastIndex;
    const match = LISTED_ENTITY_TAG.exec(trimmed);
    if (!match) return undefined;
    tags.push(match[2]!);
    at = LISTED_ENTITY_TAG.lastIndex;
  }
  return tags.length > 0 ? tags : undefined;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
/** The obsolete RFC 850 form: `Sunday, 06-Nov-94 08:49:37 GMT`. */
const RFC850_DATE = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
/** The obsolete asctime form (in UTC, as every HTTP-date): `Sun Nov  6 08:49:37 1994`. */
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ( \\d|\\d{2}) ${TIME} (\\d{4})$`);

/**
 * An HTTP-date (RFC 9110 §5.6.7: IMF-fixdate, or one of the two obsolete forms a recipient accepts) in milliseconds,
 * or undefined for anything else. Not Date.parse: it takes many other forms, and reads the asctime form, which has no
 * zone, as local time.
 */
export function httpDateMs(value: string): number | undefined {
  const text = value.trim();
  let parts: { day: string; month: string; year: number; time: string[] } | undefined;
  let m = IMF_FIXDATE.exec(text);
  if (m) parts = { day: m[1]!, month: m[2]!, year: Number(m[3]), time: m.slice(4, 7) };
  else if ((m = RFC850_DATE.exec(text))) {
    // RFC 9110: a two-digit year more than 50 years in the future is the most recent past year with those digits.
    const yy = Number(m[3]);
    const thisYear = new Date().getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + yy;
    if (year > thisYear + 50) year -= 100;
    parts = { day: m[1]!, month: m[2]!, year, time: m.slice(4, 7) };
  } else if ((m = ASCTIME_DATE.exec(text))) parts = { day: m[2]!.trim(), month: m[1]!, year: Number(m[6]), time: m.slice(3, 6) };
  if (!parts) return undefined;
  const [hours, minutes, seconds] = parts.time.map(Number) as [number, number, number];
  const day = Number(parts.day);
  const month = MONTHS.indexOf(parts.month);
  if (day < 1 || day > 31 || hours > 23 || minutes > 59 || seconds > 60) return undefined;
  const ms = Date.UTC(parts.year, month, day, hours, minutes, Math.min(seconds, 59));
  // 31 Feb and the like roll over into the next month: no such date.
  return new Date(ms).getUTCDate() === day ? ms : undefined;
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
    if (tags !== undefined) return tags.includes(etag.replace(/^W\//, ''));
    // A malformed If-None-Match is no condition: If-Modified-Since is still ignored (13.1.3: only without If-None-Match).
    return false;
  }
  const ifModifiedSince = single(headers['if-modified-since']);
  if (ifModifiedSince === undefined) return false;
  const since = httpDateMs(ifModifiedSince);
  if (since === undefined) return false;
  return Math.floor(lastModified.getTime() / 1000) * 1000 <= since;
}
