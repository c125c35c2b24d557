import { truncatedToCharacters } from '@cards/card-rules';
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

/** What the scan of a JSON body found wrong: too many values or levels (`shape`), or a key given twice in one object. */
export type JsonScanProblem = { shape: string } | { duplicateKey: string };

/** An object open during the scan: the keys met in it, and whether the next string is a key. */
interface OpenObject {
  keys: Set<string>;
  expectsKey: boolean;
}

const COLON = 0x3a;

/**
 * The text of a key (the bytes between its quotes): escapes decoded, so "a" and "\u0061" are one key as JSON.parse
 * reads them; as written when it is not valid JSON (JSON.parse refuses the body afterwards).
 */
function keyText(bytes: Buffer, open: number, close: number): string {
  // Searched in the key's bytes only (a view): the body after it may be megabytes.
  if (!bytes.subarray(open + 1, close).includes(BACKSLASH)) return bytes.toString('utf8', open + 1, close);
  try {
    return JSON.parse(bytes.toString('utf8', open, close + 1)) as string;
  } catch {
    return bytes.toString('utf8', open + 1, close);
  }
}

/**
 * What is wrong with `bytes` before they are parsed, or null: more values or levels than `bounds`, or an object
 * holding one key twice (`{"private":true,"private":false}`, which JSON.parse reads as its last value; RFC 8259 calls
 * such an object's meaning unpredictable, I-JSON (RFC 7493) forbids it, and parsers differ on which value counts).
 * One pass over the bytes outside strings; a string is skipped with Buffer.indexOf (native) to its closing quote, so
 * a 20 MiB upload (one base64 string) costs a few milliseconds, and a body of millions of values is refused after
 * reading about `maxValues` of them. A key's text is read only for strings in key position (after `{` or `,` in an
 * object), each looked up in its object's set: linear in the body's size. It checks no syntax: JSON.parse still does
 * (an unterminated string simply ends the scan).
 */
export function jsonScanProblem(bytes: Buffer, bounds: JsonShapeBounds): JsonScanProblem | null {
  let values = 0;
  // One entry per open container: the object's keys, or null for an array.
  const open: (OpenObject | null)[] = [];
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
      const object = open[open.length - 1];
      if (object?.expectsKey) {
        const key = keyText(bytes, i, end);
        if (object.keys.has(key)) return { duplicateKey: key };
        object.keys.add(key);
        object.expectsKey = false;
      }
      i = end;
    } else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
      open.push(byte === OPEN_BRACE ? { keys: new Set(), expectsKey: true } : null);
      if (open.length > bounds.maxDepth) return { shape: `it nests more than ${bounds.maxDepth} levels of objects and arrays` };
      if (++values > bounds.maxValues) return { shape: `it holds more than ${bounds.maxValues} values` };
    } else if (byte === COMMA) {
      if (++values > bounds.maxValues) return { shape: `it holds more than ${bounds.maxValues} values` };
      const object = open[open.length - 1];
      if (object) object.expectsKey = true;
    } else if (byte === COLON) {
      const object = open[open.length - 1];
      if (object) object.expectsKey = false;
    } else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
      open.pop();
    }
  }
  return null;
}

/** What makes `bytes` exceed `bounds`, or null when they do not (jsonScanProblem's `shape`). */
export function jsonShapeProblem(bytes: Buffer, bounds: JsonShapeBounds): string | null {
  const problem = jsonScanProblem(bytes, bounds);
  return problem && 'shape' in problem ? problem.shape : null;
}

/**
 * Throws the 400 for a body past `bounds` or holding a key twice in one object (run in the JSON parser's verify
 * step, before JSON.parse).
 */
export function refuseUnacceptedJson(bytes: Buffer, bounds: JsonShapeBounds): void {
  const problem = jsonScanProblem(bytes, bounds);
  if (problem === null) return;
  if ('shape' in problem) throw new HttpError(400, `The request body is not accepted: ${problem.shape}, far more than any request of this API needs`);
  // Cut by characters (an emoji is one), so the key quoted never ends in half a surrogate pair.
  const shown = truncatedToCharacters(problem.duplicateKey, 100);
  const key = JSON.stringify(shown === problem.duplicateKey ? shown : `${shown}…`);
  throw new HttpError(400, `The request body is ambiguous: duplicate key ${key} in one object (JSON readers differ on which value counts); send each key once`);
}
