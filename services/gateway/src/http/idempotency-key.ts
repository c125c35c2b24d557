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
    .describe(`${RULE}, chosen by the client per intended creation (e.g. a UUID). A request repeated with the same key by the same user (a retry after a lost answer, a second click, both at once) answers what the first one created instead of creating another; the first request's body counts. Keys are per user and per kind of resource. The key of a collection or a file answers 409 once that is deleted.`),
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
