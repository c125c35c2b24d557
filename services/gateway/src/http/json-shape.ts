import { HttpError } from './http-error';

/** How many values, and how deep, a route's JSON body may hold; past either it is refused before JSON.parse. */
export interface JsonShapeBounds {
  /** Containers opened plus separators (`{`, `[` and `,` outside strings): about the number of values JSON.parse builds. */
  maxValues: number;
  /** Containers open at once. */
  maxDepth: number;
}

/**
 * The bounds every JSON body of the API is held to. The largest legitimate bodies hold a few hundred values at two
 * levels (an upload: one object of five fields and at most MAX_TAGS = 100 tags; a bookmark look-up: at most 500
 * card ids), so 10,000 values and 32 levels leave a wide margin. Past them a body is refused 400 after a byte scan
 * instead of being parsed: 18 MB of `[{},{},...]` (6 million objects, 17.5 KB gzipped) blocked the event loop ~2.7 s
 * in JSON.parse, and every request of the process waited.
 */
export const API_JSON_SHAPE: JsonShapeBounds = { maxValues: 10_000, maxDepth: 32 };

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * What makes `bytes` exceed `bounds`, or null when they do not. One pass over the bytes outside strings; a string
 * is skipped with Buffer.indexOf (native) to its closing quote, so a 27 MB upload (one base64 string) costs a few
 * milliseconds, and a body of millions of values is refused after reading about `maxValues` of them. It checks no
 * syntax: JSON.parse still does (an unterminated string simply ends the scan).
 */
export function jsonShapeProblem(bytes: Buffer, bounds: JsonShapeBounds): string | null {
  let values = 0;
  let depth = 0;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i]!;
    if (byte === QUOTE) {
      // The closing quote is the first one not escaped, i.e. not preceded by an odd run of backslashes.
      let end = bytes.indexOf(QUOTE, i + 1);
      while (end !== -1) {
        let backslashes = 0;
        while (bytes[end - 1 - backslashes] === BACKSLASH) backslashes++;
        if (backslashes % 2 === 0) break;
        end = bytes.indexOf(QUOTE, end + 1);
      }
      if (end === -1) return null;
      i = end;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      if (++depth > bounds.maxDepth) return `it nests more than ${bounds.maxDepth} levels of objects and arrays`;
      if (++values > bounds.maxValues) return `it holds more than ${bounds.maxValues} values`;
    } else if (byte === COMMA) {
      if (++values > bounds.maxValues) return `it holds more than ${bounds.maxValues} values`;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      depth--;
    }
  }
  return null;
}

/** Throws the 400 for a body past `bounds` (run in the JSON parser's verify step, before JSON.parse). */
export function refuseOversizedJsonShape(bytes: Buffer, bounds: JsonShapeBounds): void {
  const problem = jsonShapeProblem(bytes, bounds);
  if (problem) throw new HttpError(400, `The request body is not accepted: ${problem}, far more than any request of this API needs`);
}
