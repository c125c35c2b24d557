import type { Request } from 'express';
import { ClientError, Status } from 'nice-grpc';
import { changedSinceReadMessage } from '@cards/card-rules';
import { badRequest, HttpError } from './http-error';

/**
 * The ETag of a card or a collection names its stored version, its updated_at (to the millisecond, as the cards service
 * stores it): every change an update writes gives it a later updated_at (a card's also every collision move). It is
 * the same for every caller who may see it; what an answer adds per caller (a card's vote counts and the caller's own
 * vote, the author's presentation; a collection page's cards) is not part of it, so another user's vote or a bookmark
 * does not fail an edit's If-Match. API answers are no-store and never answered 304, so no cache takes it for the bytes
 * of the answer.
 */
export function versionEtag(updatedAt: Date): string {
  return `"${updatedAt.getTime()}"`;
}

/** What an If-Match is compared with: the resource's name in messages and the read that answers its ETag. */
export interface VersionedResource {
  name: 'card' | 'collection';
  read: string;
}

export const CARD: VersionedResource = { name: 'card', read: 'GET /api/card/:card_id' };
export const COLLECTION: VersionedResource = { name: 'collection', read: 'GET /api/card_collection/:collection_id/:page' };

/** One entity-tag of an If-Match list, and the comma or end after it (RFC 9110: its opaque part may hold commas). */
const LISTED_ENTITY_TAG = /(?:W\/)?"([\x21\x23-\x7e\x80-\xff]*)"\s*(?:,|$)/y;
/**
 * Empty list elements (commas with only whitespace between): RFC 9110 §5.6.1.2 has a recipient parse and ignore them,
 * before, between and after the elements ("foo ,bar,", "foo , ,bar,charlie"), as senders merging values make them.
 * The header's length is bounded by Node's header limit, so their number is too.
 */
const EMPTY_LIST_ELEMENTS = /[\s,]*/y;
/** The latest instant a Date holds (ECMAScript: 8.64e15 ms); a larger number names no version. */
const LATEST_DATE_MS = 8.64e15;

/** The 412 of a change whose If-Match names no version of the resource as it is now. */
export const preconditionFailedMessage = ({ name }: VersionedResource) => changedSinceReadMessage(name);

/**
 * The version an update's If-Match asks for: undefined without the header or with `*` (the update as without it), the
 * updated_at its tag names otherwise. One tag of ours is taken, also in the weak form W/"…" that the API's compression
 * gives a strong ETag of a compressed answer (it names the same version). A tag that cannot be one of ours (another
 * format) can match no version: 412 at once. Empty list elements are ignored (RFC 9110 §5.6.1.2: `"1764030000000",`
 * is that tag). A malformed header, one with no tag, or several of our tags (one version is compared, atomically, by
 * the cards service): 400.
 */
export function ifMatchVersion(req: Request, resource: VersionedResource): Date | undefined {
  const header = req.headers['if-match'];
  if (header === undefined) return undefined;
  const value = header.trim();
  if (value === '*') return undefined;
  const versions = new Set<number>();
  const malformed = () => badRequest(`If-Match: must be * or the ETag that ${resource.read} answered, e.g. "1764030000000"`);
  let tags = 0;
  for (let at = 0; ; tags++) {
    EMPTY_LIST_ELEMENTS.lastIndex = at;
    EMPTY_LIST_ELEMENTS.exec(value);
    if (EMPTY_LIST_ELEMENTS.lastIndex === value.length) break;
    LISTED_ENTITY_TAG.lastIndex = EMPTY_LIST_ELEMENTS.lastIndex;
    const opaque = LISTED_ENTITY_TAG.exec(value)?.[1];
    if (opaque === undefined) throw malformed();
    at = LISTED_ENTITY_TAG.lastIndex;
    // Ours is a millisecond count a Date holds; a longer one (16 digits past 8.64e15) is no version of ours, as any
    // other tag: it matches nothing (before, new Date() of it was Invalid and the update a 500).
    const ms = /^\d{1,16}$/.test(opaque) ? Number(opaque) : NaN;
    if (ms <= LATEST_DATE_MS) versions.add(ms);
  }
  // No tag at all (an empty value, only commas): a list RFC 9110 allows, but that names nothing to compare; said as
  // malformed (400, how to send it) rather than 412, which would send the client to read again and send it again.
  if (tags === 0) throw malformed();
  if (versions.size > 1) throw badRequest(`If-Match: send one ETag, the one ${resource.read} answered`);
  const [version] = versions;
  if (version === undefined) throw new HttpError(412, preconditionFailedMessage(resource));
  return new Date(version);
}

/**
 * The version an update left (its Versioned RPC's answer, for the 204's ETag), or undefined from a cards service that
 * predates that RPC (UNIMPLEMENTED: nothing was written), with which the update is made by the older RPC, answering none.
 */
export async function versionAfterUpdate(versioned: () => Promise<{ updatedAt?: Date | undefined }>, older: () => Promise<unknown>): Promise<Date | undefined> {
  try {
    return (await versioned()).updatedAt;
  } catch (err) {
    if (!(err instanceof ClientError && err.code === Status.UNIMPLEMENTED)) throw err;
    await older();
    return undefined;
  }
}
