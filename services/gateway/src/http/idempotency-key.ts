import { createHash } from 'node:crypto';
import type { Request } from 'express';
import { z } from 'zod';
import { badRequest } from './http-error';

const KEY = /^[\x21-\x7e]{1,255}$/;
const RULE = '1 to 255 visible ASCII characters';

/** The optional `Idempotency-Key` request header, as the OpenAPI document shows it. */
export const idempotencyKeyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .regex(KEY)
    .optional()
    .describe(`${RULE}, chosen by the client per intended creation (e.g. a UUID). A request repeated with the same key by the same user (a retry after a lost answer, a second click, both at once) answers what the first one created instead of creating another. The key names that one request: sent with a different body it is refused with 422. Keys are per user and per kind of resource; once what a key created is deleted, the key answers 409 for IDEMPOTENCY_KEY_TTL_HOURS (24 hours unless the deployment sets otherwise) after the deletion, and is then forgotten: a repeat after that creates anew. The key of a resource that still exists never expires.`),
});

/**
 * The caller's Idempotency-Key, in a namespace of its own (the files service's ingestion keys its cards per file
 * block for the same user); undefined without the header, 400 for one that breaks the rule.
 */
export function idempotencyKeyOf(req: Request): string | undefined {
  const key = req.headers['idempotency-key'];
  if (key === undefined) return undefined;
  if (typeof key !== 'string' || !KEY.test(key)) throw badRequest(`Idempotency-Key: must be ${RULE}`);
  return `http:${key}`;
}

/**
 * The caller's Idempotency-Key (idempotencyKeyOf) with the fingerprint of the request it comes with, for the service to
 * store with the key and compare on a repeat; nothing without the header. `fields`: the fields of the request that
 * matter, as parsed (so JSON spacing, member order or `"true"` for `true` make no other request), in a fixed order;
 * asked for only when there is a key.
 */
export function idempotencyOf(req: Request, fields: () => Record<string, unknown>): { idempotencyKey?: string; requestFingerprint?: string } {
  const idempotencyKey = idempotencyKeyOf(req);
  if (idempotencyKey === undefined) return {};
  return { idempotencyKey, requestFingerprint: createHash('sha256').update(JSON.stringify(fields())).digest('base64url') };
}

/** A digest standing for a request's bytes in its fingerprint (an upload's file). */
export const digestOf = (bytes: Buffer) => createHash('sha256').update(bytes).digest('base64url');
