/**
 * RFC 9110 byte ranges (section 14) and HTTP-dates (5.6.7), for the files service's raw download and the gateway's
 * static files.
 *
 * Byte ranges, as the raw download answers them: one range is served (206), a Range header that asks for
 * several is answered with the whole file (200, as 14.2 allows: no multipart/byteranges), one the grammar does not
 * hold or of another unit is ignored (200), and one whose ranges all start at or past the end is unsatisfiable (416).
 * Hand-written, not range-parser: that library answers a suffix longer than the file (`bytes=-100` of 50 bytes) as
 * unsatisfiable, where 14.1.3 says the whole representation is used, and takes `bytes=5-2` for unsatisfiable, where
 * it is no valid range-spec (the header is ignored).
 */
export type ByteRangeAnswer =
  | { kind: 'whole' }
  | { kind: 'range'; start: number; end: number }
  | { kind: 'unsatisfiable' };

const RANGE_SPEC = /^(?:(\d+)-(\d*)|-(\d+))$/;

export function byteRangeOf(header: string | undefined, size: number): ByteRangeAnswer {
  if (header === undefined) return { kind: 'whole' };
  const match = /^bytes=(.*)$/i.exec(header.trim());
  if (!match) return { kind: 'whole' };
  const specs = (match[1] ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (specs.length === 0) return { kind: 'whole' };
  const satisfiable: Array<{ start: number; end: number }> = [];
  for (const spec of specs) {
    const parts = RANGE_SPEC.exec(spec);
    if (!parts) return { kind: 'whole' };
    if (parts[3] !== undefined) {
      const suffix = Number(parts[3]);
      if (!Number.isSafeInteger(suffix)) return { kind: 'whole' };
      // A suffix longer than the file is the whole file; a suffix of 0 (or any of an empty file) selects nothing.
      if (suffix > 0 && size > 0) satisfiable.push({ start: Math.max(0, size - suffix), end: size - 1 });
      continue;
    }
    const start = Number(parts[1]);
    const last = parts[2] === '' ? Infinity : Number(parts[2]);
    if (!Number.isSafeInteger(start) || (last !== Infinity && !Number.isSafeInteger(last)) || last < start) return { kind: 'whole' };
    if (start < size) satisfiable.push({ start, end: Math.min(last, size - 1) });
  }
  if (satisfiable.length === 0) return { kind: 'unsatisfiable' };
  const [only] = satisfiable;
  if (specs.length > 1 || !only) return { kind: 'whole' };
  return { kind: 'range', start: only.start, end: only.end };
}

/**
 * If-Range (RFC 9110 13.1.5): the range is served only while the file is the one the client holds part of, named by
 * its strong ETag or its exact Last-Modified date; anything else (a weak tag, another tag or date) gets the whole file.
 */
export function ifRangeHolds(ifRange: string | undefined, etag: string, lastModified: Date): boolean {
  if (ifRange === undefined) return true;
  const value = ifRange.trim();
  if (value.startsWith('"') || value.startsWith('W/')) return value === etag;
  const date = httpDateMs(value);
  return date !== undefined && date === Math.floor(lastModified.getTime() / 1000) * 1000;
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
