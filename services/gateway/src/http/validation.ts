import type { Request } from 'express';
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { fitsCharacters, MAX_TAG_CHARS, MAX_TAGS, wellFormedProblem } from '@cards/card-rules';
import { isUuid } from '@cards/platform';
import { badRequest } from './http-error';
import { bodyEncodingProblem } from './json-body';

/** "must be ..." for the type zod expected. */
const EXPECTED_WORDING: Partial<Record<string, string>> = {
  string: 'must be a string',
  boolean: 'must be true or false',
  number: 'must be a number',
  integer: 'must be an integer',
  array: 'must be an array',
  object: 'must be an object',
};

function wordingOfExpected(expected: string): string {
  return EXPECTED_WORDING[expected] ?? `must be ${expected}`;
}

/** The project's wording for one zod issue (a code zod would answer in its own words). */
function projectWording(issue: z.ZodIssueOptionalMessage, data: unknown): string {
  switch (issue.code) {
    case z.ZodIssueCode.invalid_type:
      if (data === undefined || issue.received === 'undefined') return 'is required';
      return wordingOfExpected(issue.expected);
    case z.ZodIssueCode.too_big: {
      const max = Number(issue.maximum);
      if (issue.type === 'string') return `must be at most ${max} characters`;
      if (issue.type === 'array' || issue.type === 'set') return `must hold at most ${max} items`;
      return `must be at most ${max}`;
    }
    case z.ZodIssueCode.too_small: {
      const min = Number(issue.minimum);
      if (issue.type === 'string') return min <= 1 ? 'must not be empty' : `must be at least ${min} characters`;
      if (issue.type === 'array' || issue.type === 'set') return min <= 1 ? 'must not be empty' : `must hold at least ${min} items`;
      return `must be at least ${min}`;
    }
    case z.ZodIssueCode.invalid_string:
      return issue.validation === 'uuid' ? 'must be a UUID' : issue.validation === 'regex' ? 'is not in the expected form' : `must be a valid ${String(issue.validation)}`;
    case z.ZodIssueCode.invalid_enum_value:
      return `must be one of ${issue.options.map((o) => JSON.stringify(o)).join(', ')}`;
    case z.ZodIssueCode.invalid_literal:
      return `must be ${JSON.stringify(issue.expected)}`;
    case z.ZodIssueCode.invalid_union: {
      // Every option refused the value's type: name the types they take ("must be an array or a string").
      const alternatives = issue.unionErrors.map((e) => e.issues.find((i) => i.path.length === issue.path.length));
      if (data !== undefined && alternatives.every((i) => i?.code === z.ZodIssueCode.invalid_type)) {
        const types = [...new Set(alternatives.map((i) => (i as z.ZodInvalidTypeIssue).expected))];
        return `must be ${types.map((t) => wordingOfExpected(t).replace(/^must be /, '')).join(' or ')}`;
      }
      return data === undefined ? 'is required' : 'is not valid';
    }
    default:
      return data === undefined ? 'is required' : 'is not valid';
  }
}

/**
 * The zod error map parseBody uses: every issue a schema left in zod's own wording ("Required", "Expected string,
 * received number", "String must contain at most 1024 character(s)") gets the project's instead ("is required",
 * "must be a string", "must be at most 1024 characters"), so no route can answer in zod's words. A
 * message a schema chose (required_error, invalid_type_error, an errorMap, a check's message) is kept.
 */
export const projectErrorMap: z.ZodErrorMap = (issue, ctx) => {
  const zodWording = z.defaultErrorMap(issue, { data: ctx.data, defaultError: '' }).message;
  if (ctx.defaultError !== zodWording && ctx.defaultError !== '') return { message: ctx.defaultError };
  return { message: projectWording(issue, ctx.data) };
};

/** "field: problem" for the first few issues, so the client learns which field to fix. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => (i.path.length ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
}

/** "field: problem" for the first string in a parsed body that is not well-formed Unicode (@cards/card-rules), or null. */
function illFormedText(value: unknown, field = ''): string | null {
  if (typeof value === 'string') {
    const problem = wellFormedProblem(value);
    return problem && (field ? `${field}: ${problem}` : problem);
  }
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    // An array item is named by its field, as the services name a tag by tag_set.
    const found = illFormedText(item, Array.isArray(value) ? field : field ? `${field}.${key}` : key);
    if (found) return found;
  }
  return null;
}

/**
 * Body fields whose strings are kept as sent, not put in NFC (nfcText). Passwords: identity hashes the raw string and
 * every stored hash was made from the bytes as sent, so a password set in NFD (macOS input) would no longer match once
 * normalized; normalizing them is a decision for identity together with its stored hashes, not the gateway.
 * base64_docx_file and referral_tokens are opaque (ASCII or compared as given): normalizing them would change nothing
 * a user sees and only walk megabytes of base64.
 */
export const KEPT_AS_SENT = new Set(['password', 'password_confirmation', 'base64_docx_file', 'referral_tokens']);

/**
 * The body with every string put in Unicode NFC, except the fields of KEPT_AS_SENT (any depth; an array item counts
 * as its field). Text that looks the same arrives composed ("é", U+00E9) or decomposed ("e" + U+0301, macOS input,
 * copy-paste); services compare tags, links, names and e-mails as strings, so two spellings would be two values. One
 * form at the boundary makes them one: tags and links match their filters in either form, names look and compare
 * equal. Lengths are then checked on the NFC form, the one stored. Keys are kept as sent (none is user text).
 */
export function nfcText(value: unknown, key?: string): unknown {
  if (key !== undefined && KEPT_AS_SENT.has(key)) return value;
  if (typeof value === 'string') return value.normalize('NFC');
  if (Array.isArray(value)) return value.map((item) => nfcText(item));
  if (typeof value !== 'object' || value === null) return value;
  // fromEntries defines each key as an own property, so a "__proto__" key of the JSON stays a key (assigning it would set the prototype).
  return Object.fromEntries(Object.entries(value).map(([k, item]) => [k, nfcText(item, k)]));
}

/**
 * Parses a JSON body with the route's schema, its text put in NFC first (nfcText; passwords and opaque fields aside);
 * unknown fields are dropped (tolerant reader); 400 otherwise, for a body whose bytes were not UTF-8 (naming the first
 * bad sequence), and for a kept string that is not well-formed Unicode: JSON can spell an unpaired surrogate ("\ud800") but the protobuf strings
 * that carry it to the services are UTF-8, which would turn it into U+FFFD unseen, so the services' own free-text rule
 * never sees it. `comparedOnly`: the body's text is only compared (logging in), so it passes as it always did, bytes
 * that are not UTF-8 included (a password set through a Latin-1 client was stored with U+FFFD and still matches).
 */
export function parseBody<S extends z.ZodTypeAny>(schema: S, req: Request, { comparedOnly = false }: { comparedOnly?: boolean } = {}): z.infer<S> {
  // Bytes that are not UTF-8 were decoded to U+FFFD: refused before anything is read from the body (json-body.ts).
  const notUtf8 = comparedOnly ? undefined : bodyEncodingProblem(req);
  if (notUtf8) throw badRequest(notUtf8);
  const raw: unknown = req.body ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest('The request body must be a JSON object');
  const body = nfcText(raw);
  const result = schema.safeParse(body, { errorMap: projectErrorMap });
  if (!result.success) throw badRequest(describeZodError(result.error));
  const illFormed = comparedOnly ? null : illFormedText(result.data);
  if (illFormed) throw badRequest(illFormed);
  return result.data;
}

const NO_FIELDS = z.object({});

/**
 * For a route that reads no body (a logout, a deletion, marking every notification read): a body sent anyway is held
 * to what every route takes, as parseBody holds it (a JSON object, its bytes UTF-8; its fields are ignored), so `[1,2]`
 * or Latin-1 bytes are 400 here as they are everywhere else, not 204 while "{oops" was 400. No body at all is fine.
 */
export function refuseUnreadableBody(req: Request): void {
  parseBody(NO_FIELDS, req);
}

/** A UUID path parameter; 400 when it is not one. */
export function uuidParam(req: Request, name: string): string {
  const value = req.params[name];
  if (!isUuid(value)) throw badRequest(`${name}: must be a UUID`);
  return value.toLowerCase();
}

/** The largest page number passed on; services answer it (and any larger one) with an empty page. */
const MAX_PAGE = 999_999_999;

/** A 1-based page number path parameter; 0, negative or non-numeric is 400. */
export function pageParam(req: Request, name = 'page'): number {
  const param = req.params[name];
  const raw = typeof param === 'string' ? param : '';
  if (!/^\d+$/.test(raw) || !/[1-9]/.test(raw)) throw badRequest(`${name}: must be a positive integer`);
  // Every page past 999,999,999 is past the end of any listing (25 per page): it answers as that one does, empty.
  return Math.min(Number(raw), MAX_PAGE);
}

// Adds .openapi() to zod's prototypes, for characterString's maxLength.
extendZodWithOpenApi(z);

/**
 * A string of at most `max` characters counted as the owning service counts what it stores: code points, of the
 * trimmed value with `trim`. zod's max() counts UTF-16 units, so it would refuse 255 emoji as 510 and a name with
 * spaces around it before they are trimmed (fitsCharacters never walks huge input). The OpenAPI document states
 * maxLength `max`, which JSON Schema counts in code points too.
 */
export function characterString(max: number, { trim = false }: { trim?: boolean } = {}) {
  const tooLong = `must be at most ${max} characters`;
  return z
    .string({ required_error: 'is required', invalid_type_error: 'must be a string' })
    .superRefine((value, ctx) => {
      if (!fitsCharacters(trim ? value.trim() : value, max)) ctx.addIssue({ code: z.ZodIssueCode.custom, message: tooLong });
    })
    .openapi({ maxLength: max });
}

/** A characterString that must hold more than whitespace. */
export function nonBlankCharacterString(max: number, options: { trim?: boolean } = {}) {
  return characterString(max, options).refine((v) => v.trim().length > 0, 'must not be empty');
}

/** A UUID in a body field. */
export const uuidString = z
  .string({ invalid_type_error: 'must be a string', required_error: 'is required' })
  .openapi({ format: 'uuid' })
  .refine(isUuid, 'must be a UUID')
  .transform((v) => v.toLowerCase());

/** A JSON boolean; the strings "true" and "false" are accepted too. */
export const looseBoolean = z
  .union([z.boolean(), z.enum(['true', 'false']).transform((v) => v === 'true')], {
    errorMap: (_issue, ctx) => ({ message: ctx.data === undefined ? 'is required' : 'must be true or false' }),
  })
  // One named schema: else client generators name this type after the first operation that takes it (UpdateUserRequestVisibleEmail for a card's `private`).
  .openapi('LooseBoolean', { description: 'true or false; the strings "true" and "false" are read as those' });

/**
 * Tags: an array of strings, or one comma-separated string; trimmed, empty ones dropped, duplicates removed. Each tag
 * is at most 200 characters (code points) as stored, where array items are split at commas too, so an item is bounded
 * only by size here (it may hold several tags, and spaces that are trimmed); the document states maxLength 200 for
 * an item holding one tag.
 */
const tagsTooLong = `at most ${MAX_TAGS} tags of at most ${MAX_TAG_CHARS} characters`;
// Holds the longest valid list in one string (100 tags of 200 code points, two UTF-16 units each, with separators)
// and room for spaces; zod counts UTF-16 units.
const TAGS_PRE_BOUND = 4 * MAX_TAGS * MAX_TAG_CHARS;
export const tagList = z
  .union([z.array(z.string().max(TAGS_PRE_BOUND, tagsTooLong).openapi({ maxLength: MAX_TAG_CHARS })).max(MAX_TAGS, `at most ${MAX_TAGS} tags`), z.string().max(TAGS_PRE_BOUND, tagsTooLong)], {
    errorMap: () => ({ message: 'must be an array of strings or a comma-separated string' }),
  })
  .transform((v) => [...new Set((Array.isArray(v) ? v : v.split(',')).map((t) => t.trim()).filter((t) => t.length > 0))])
  .refine((tags) => tags.flatMap((t) => t.split(',')).every((piece) => fitsCharacters(piece.trim(), MAX_TAG_CHARS)), `each tag at most ${MAX_TAG_CHARS} characters`);
