import type { Request } from 'express';
import { badRequest, HttpError } from './http-error';

/**
 * A card's ETag names its stored version, its updated_at (to the millisecond, as the cards service stores it): every
 * change of what an update writes (HTML, text, link, privacy) and every collision move gives it a later updated_at.
 * It is the same for every caller who may see the card; what the answer adds per caller (vote counts, the caller's own
 * vote, the author's presentation) is not the card's and is not part of it, so another user's vote does not fail an
 * edit's If-Match. API answers are no-store and never answered 304, so no cache takes it for the bytes of the answer.
 */
export function cardEtag(updatedAt: Date): string {
  return `"${updatedAt.getTime()}"`;
}

const ENTITY_TAG = /^(?:W\/)?"([\x21\x23-\x7e\x80-\xff]*)"$/;

export const PRECONDITION_FAILED_MESSAGE =
  'The card was changed since you read it (If-Match does not match its current ETag): read it again and apply your change to it';

/**
 * The version an update's If-Match asks for: undefined without the header or with `*` (the update as without it), the
 * updated_at its tag names otherwise. One tag of ours is taken, also in the weak form W/"…" that the API's compression
 * gives a strong ETag of a compressed answer (it names the same version). A tag that cannot be one of ours (another
 * format) can match no version: 412 at once. A malformed header, or several of our tags (one version is compared,
 * atomically, by the cards service): 400.
 */
export function ifMatchVersion(req: Request): Date | undefined {
  const header = req.headers['if-match'];
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value === '*') return undefined;
  const tags = value.split(',').map((t) => t.trim());
  const versions = new Set<number>();
  for (const tag of tags) {
    const opaque = ENTITY_TAG.exec(tag)?.[1];
    if (opaque === undefined) throw badRequest('If-Match: must be * or the ETag that GET /api/card/:card_id answered, e.g. "1764030000000"');
    if (/^\d{1,16}$/.test(opaque)) versions.add(Number(opaque));
  }
  if (versions.size > 1) throw badRequest('If-Match: send one ETag, the one GET /api/card/:card_id answered');
  const [version] = versions;
  if (version === undefined) throw new HttpError(412, PRECONDITION_FAILED_MESSAGE);
  return new Date(version);
}
