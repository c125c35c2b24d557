import { httpDateMs } from './conditional-get';

/**
 * RFC 9110 byte ranges (section 14) for the raw download: one range is served (206), a Range header that asks for
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
