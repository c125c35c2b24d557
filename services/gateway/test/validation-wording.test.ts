import type { Request } from 'express';
import { z, type ZodTypeAny } from 'zod';
import { HttpError } from '../src/http/http-error';
import { parseBody } from '../src/http/validation';
import { OPERATIONS, buildOpenApiDocument } from '../src/openapi/document';
import { findBookmarksBody } from '../src/routes/collection-routes';
import { invitationBody, loginBody, registerBody, updateUserBody } from '../src/routes/identity-routes';

/** The 400 message parseBody gives a body, or 'ok' when the body passes. */
function answer(schema: ZodTypeAny, body: unknown): string {
  try {
    parseBody(schema, { body } as Request);
    return 'ok';
  } catch (err) {
    expect(err).toBeInstanceOf(HttpError);
    expect((err as HttpError).status).toBe(400);
    return (err as Error).message;
  }
}

/** zod's own wording ("Required", "Expected string, received number", "String must contain at most 5 character(s)", ...). */
const ZOD_WORDING = /Required|Expected|received|Invalid|must contain|character\(s\)|element\(s\)|Number must|String must|Array must/;

/** The object schemas a body schema is made of: itself, or each option of a union (the reset body). */
function objectsOf(schema: ZodTypeAny): z.AnyZodObject[] {
  if (schema instanceof z.ZodObject) return [schema];
  if (schema instanceof z.ZodUnion) return (schema.options as ZodTypeAny[]).flatMap(objectsOf);
  if (schema instanceof z.ZodEffects) return objectsOf(schema.innerType() as ZodTypeAny);
  throw new Error(`no object in ${schema.constructor.name}`);
}

/** Values of every JSON type, and strings and arrays too long for any field. */
const WRONG_VALUES: unknown[] = [null, 12345, -1.5, true, 'false', '', 'x', [], [1], [null], ['x'], {}, { a: 1 }, 'x'.repeat(60_000), Array.from({ length: 600 }, () => 'x'), ['x'.repeat(60_000)]];

const BODIES = OPERATIONS.filter((op) => op.body).map((op) => ({ name: `${op.method.toUpperCase()} ${op.path}`, schema: op.body! }));

describe('400 messages of request bodies are in the project\'s wording, never zod\'s', () => {
  it('covers every route that takes a body', () => {
    expect(BODIES.length).toBeGreaterThanOrEqual(20);
  });

  it.each(BODIES)('$name: an empty body and each field with each wrong type or size', ({ schema }) => {
    const messages = [answer(schema, {})];
    for (const object of objectsOf(schema)) {
      for (const field of Object.keys(object.shape as Record<string, unknown>)) {
        for (const value of WRONG_VALUES) messages.push(answer(schema, { [field]: value }));
      }
    }
    const raw = messages.filter((m) => ZOD_WORDING.test(m));
    expect(raw).toEqual([]);
  });

  it('the audit\'s examples answer in the project\'s words', () => {
    expect(answer(invitationBody, {})).toBe('email: is required; referral_tokens: is required');
    expect(answer(invitationBody, { email: 'a@example.com', referral_tokens: 'x' })).toBe('referral_tokens: must be an array of strings');
    expect(answer(invitationBody, { email: 'a@example.com', referral_tokens: [5] })).toBe('referral_tokens.0: must be a string');
    expect(answer(invitationBody, { email: 'a@example.com', referral_tokens: Array.from({ length: 101 }, () => 'x') })).toBe('referral_tokens: must hold at most 100 items');
    expect(answer(registerBody, { password: 'x'.repeat(1025), password_confirmation: 'x' })).toBe('password: must be at most 1024 characters');
    expect(answer(loginBody, { email: 5, password: 'x' })).toBe('email: must be a string');
    expect(answer(updateUserBody, { visible_email: null })).toBe('visible_email: must be true or false');
    expect(answer(findBookmarksBody, { collection_ids: 'x'.repeat(50_001) })).toBe('collection_ids: must be at most 50000 characters');
  });
});

describe('null in a request body', () => {
  // Where null is taken: optional fields whose value may be empty (null is that empty value: "", no tags, no file).
  const TAKES_NULL = new Set([
    'POST /api/card_collection description',
    'PUT /api/card_collection description',
    'PUT /api/user username',
    'PUT /api/user website',
    'POST /api/card tag_set',
    'POST /api/card file_uuid',
    'POST /api/card oc_file_path',
    'PUT /api/card/update link',
    'POST /api/file tag_set',
    ...['/api/card/search/:page', '/api/card/fulltextsearch/:page', '/api/card_collection/search/:page', '/api/card_collection/fulltextsearch/:page'].flatMap((path) => [`POST ${path} tag_set`, `POST ${path} link`]),
  ]);

  it('is the empty value of an optional field that may be empty, and refused for every other field (required, or never empty)', () => {
    const taken: string[] = [];
    for (const { name, schema } of BODIES) {
      for (const object of objectsOf(schema)) {
        for (const field of Object.keys(object.shape as Record<string, unknown>)) {
          const refused = answer(object, { [field]: null }).split('; ').find((part) => part.startsWith(`${field}: `));
          if (refused === undefined) taken.push(`${name} ${field}`);
          else expect([name, refused]).toEqual([name, expect.stringMatching(new RegExp(`^${field}: must be `))]);
        }
      }
    }
    expect(new Set(taken)).toEqual(TAKES_NULL);
  });
});

describe('visible_email', () => {
  it('accepts the strings "true" and "false" as every other boolean of the interface does', () => {
    expect(updateUserBody.parse({ visible_email: 'false' })).toEqual({ visible_email: false });
    expect(updateUserBody.parse({ visible_email: 'true' })).toEqual({ visible_email: true });
    expect(updateUserBody.parse({ visible_email: false })).toEqual({ visible_email: false });
    expect(answer(updateUserBody, { visible_email: 'no' })).toBe('visible_email: must be true or false');
  });

  it('is documented in the same form as is_public', () => {
    type Doc = { paths: Record<string, Record<string, { requestBody: { content: Record<string, { schema: { properties: Record<string, unknown> } }> } }>> };
    const document = buildOpenApiDocument() as unknown as Doc;
    const bodyOf = (path: string, method: string) => document.paths[path]![method]!.requestBody.content['application/json']!.schema.properties;
    expect(bodyOf('/api/user', 'put').visible_email).toEqual(bodyOf('/api/card_collection', 'post').is_public);
  });
});
