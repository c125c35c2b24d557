import type { Stats } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { byteRangeOf, httpDateMs } from '@cards/platform';

/**
 * An If-Range that send's check (isRangeFresh) always finds stale: it contains no ETag of send's (they are weak,
 * `W/"…"`) and is no date. Set on a request whose Range is to be ignored, it makes send answer the whole file (200).
 */
const RANGE_IGNORED = '"range-ignored"';

/**
 * Keeps send's byte ranges (express.static) to RFC 9110, from its `setHeaders` hook (called with the file's stats
 * before send reads Range and If-Range). send parses Range with range-parser, which answers 416 to a suffix longer than
 * the file (`bytes=-100000`: the whole file, 14.1.3) and, leniently, serves ranges the grammar does not hold
 * (`bytes=0-1abc`, `bytes=0-1,5-2`); it takes If-Range's ETag by substring with its own weak ETag (13.1.5: strong
 * comparison only, so a weak tag never holds) and any later date for the Last-Modified one (13.1.5: an exact match). Here
 * the request's Range is answered as the raw download answers it (@cards/platform byteRangeOf): one valid range is
 * left to send (its bytes are the same); several ranges, an invalid header, a Range on HEAD or an If-Range that does
 * not hold get the whole file (200: a server may ignore Range, 14.2), as does a range naming the whole file (the
 * suffix longer than it: send would refuse it); an unsatisfiable one is send's 416 as before.
 */
export function keepRangesToRfc9110(res: ServerResponse, stat: Stats): void {
  const req = (res as ServerResponse & { req?: IncomingMessage }).req;
  const header = req?.headers.range;
  if (!req || header === undefined) return;
  const answer = byteRangeOf(header, stat.size);
  const wholeFile = answer.kind === 'whole' || (answer.kind === 'range' && answer.start === 0 && answer.end === stat.size - 1);
  if (wholeFile || req.method === 'HEAD' || !ifRangeHolds(req.headers['if-range'], stat)) req.headers['if-range'] = RANGE_IGNORED;
}

/** If-Range against send's validators: its ETags are weak (never a strong match), its Last-Modified the file's mtime in whole seconds. */
function ifRangeHolds(ifRange: string | string[] | undefined, stat: Stats): boolean {
  if (ifRange === undefined) return true;
  const value = (Array.isArray(ifRange) ? ifRange.join(', ') : ifRange).trim();
  if (value.startsWith('"') || value.startsWith('W/')) return false;
  return httpDateMs(value) === Math.floor(stat.mtimeMs / 1000) * 1000;
}
