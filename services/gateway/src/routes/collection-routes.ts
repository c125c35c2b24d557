import type { Router } from 'express';
import { z } from 'zod';
import { truncatedToCharacters } from '@cards/card-rules';
import { GRPC_PART_BYTES, isUuid } from '@cards/platform';
import type { RouteDeps } from '../app';
import { notFound } from '../http/http-error';
import { idempotencyOf } from '../http/idempotency-key';
import { pagesOf, sendJsonArrayInPages } from '../http/json-array-in-pages';
import { requireUser } from '../http/session';
import { COLLECTION, ifMatchVersion, versionAfterUpdate, versionEtag } from '../http/version-tag';
import { characterString, looseBoolean, nonBlankCharacterString, pageParam, parseBody, uuidParam, uuidString } from '../http/validation';
import { presentCardGroups } from '../presenters/card-presenter';
import { withRestOfCardGroups } from './card-groups';
import { presentCollection } from '../presenters/collection-presenter';
import { forKnownUser } from './known-user';

// The cards service stores the name trimmed and the description as sent; both limits count characters (code points).
const name = nonBlankCharacterString(255, { trim: true });
const description = characterString(2000);

export const createCollectionBody = z.object({ name, is_public: looseBoolean, description: description.nullish() });
export const updateCollectionBody = z.object({ collection_id: uuidString, name: name.optional(), description: description.nullish(), is_public: looseBoolean.optional() });
export const deleteCollectionBody = z.object({ collection_id: uuidString });
export const bookmarkBody = z.object({ card_metadata_id: uuidString });
/** collection_ids holds CARD ids (the interface's naming): a comma-separated string, or an array. */
export const findBookmarksBody = z.object({
  collection_ids: z
    .union([z.string().max(50_000), z.array(z.string().max(64)).max(500)], { errorMap: () => ({ message: 'must be a comma-separated string of card ids' }) })
    .transform((v, ctx) => {
      const ids = (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter((s) => s.length > 0);
      if (ids.length === 0) ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'must list at least one card id' });
      else if (ids.length > 500) ctx.addIssue({ code: z.ZodIssueCode.custom, message: 'at most 500 card ids' });
      const bad = ids.filter((id) => !isUuid(id) as boolean)[0] as string | undefined;
      if (bad !== undefined) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `${JSON.stringify(truncatedToCharacters(bad, 64))} is not a UUID` });
      return ids.map((id) => id.toLowerCase());
    }),
});

/** Well under the gRPC message limit per page: 1,000 collections with 2,000-character descriptions are ~2.1 MB. */
const COLLECTIONS_PAGE_SIZE = 1000;

/** Reads one page of a user's collections as the caller may see them, presented as listings show them. */
function collectionPageReader(clients: RouteDeps['clients'], userId: string, callerId: string | undefined) {
  return async (pageToken: string) => {
    const page = await clients.cards.listUserCollections({ userId, callerId, pageSize: COLLECTIONS_PAGE_SIZE, pageToken }, { idempotent: true });
    return { items: page.collections.map((c) => presentCollection(c, { withFileId: true })), nextPageToken: page.nextPageToken };
  };
}

/** Collections and bookmarks. Registered before the card and user routes (see app.ts). */
export function registerCollectionRoutes(router: Router, { clients }: RouteDeps): void {
  router.get('/user/collections/:user_id', async (req, res) => {
    const userId = uuidParam(req, 'user_id');
    const readPage = collectionPageReader(clients, userId, req.user?.id);
    const first = readPage('');
    await forKnownUser(clients, userId, first);
    await sendJsonArrayInPages(res, pagesOf(readPage, first));
  });

  router.get('/card_collection', async (req, res) => {
    const user = requireUser(req);
    await sendJsonArrayInPages(res, pagesOf(collectionPageReader(clients, user.id, user.id)));
  });

  router.post('/card_collection', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(createCollectionBody, req);
    const request = { name: body.name, description: body.description ?? '', isPublic: body.is_public };
    const created = await clients.cards.createCollection({ callerId: user.id, ...request, ...idempotencyOf(req, () => ({ ...request, name: request.name.trim() })) });
    res.location(`/api/card_collection/${created.id}`).status(204).end();
  });

  router.put('/card_collection', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(updateCollectionBody, req);
    // Optional If-Match (the collection's ETag as read): checked and written in one step by the cards service, 412 when
    // it changed since. The 204 carries the version the update wrote, for the next If-Match without a read between.
    const ifUpdatedAt = ifMatchVersion(req, COLLECTION);
    const request = { callerId: user.id, collectionId: body.collection_id, name: body.name, description: body.description === null ? '' : body.description, isPublic: body.is_public, ifUpdatedAt };
    const updatedAt = await versionAfterUpdate(
      () => clients.cards.updateCollectionVersioned(request),
      () => clients.cards.updateCollection(request),
    );
    if (updatedAt) res.setHeader('etag', versionEtag(updatedAt));
    res.status(204).end();
  });

  router.delete('/card_collection', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(deleteCollectionBody, req);
    await clients.cards.deleteCollection({ callerId: user.id, collectionId: body.collection_id });
    res.status(204).end();
  });

  router.post('/card_collection/bookmark', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(findBookmarksBody, req);
    const entryPages = pagesOf(async (pageToken) => {
      const page = await clients.cards.findCardCollections({ callerId: user.id, cardIds: body.collection_ids, pageSize: 500, pageToken }, { idempotent: true });
      return { items: page.entries.map((e) => ({ card_uuid: e.cardId, collection_ids: e.collectionIds })), nextPageToken: page.nextPageToken };
    });
    await sendJsonArrayInPages(res, entryPages);
  });

  router.get('/card_collection/:collection_id/:page', async (req, res) => {
    const collectionId = uuidParam(req, 'collection_id');
    const page = pageParam(req);
    const callerId = req.user?.id;
    const result = await clients.cards.listCollectionCards({ collectionId, callerId, page, maxGroupBytes: GRPC_PART_BYTES }, { idempotent: true });
    if (!result.collection) throw notFound('Collection not found');
    const groups = await withRestOfCardGroups(clients, result.bookmarks, { cardIds: result.groupCardIds, callerId, pageToken: result.groupsPageToken });
    // The collection's version (not the page's cards), for an update's If-Match (PUT /api/card_collection).
    res.setHeader('etag', versionEtag(result.collection.updatedAt!));
    res.json({ bookmarks: await presentCardGroups(clients, groups, callerId), collection: presentCollection(result.collection), total_pages: result.totalPages });
  });

  router.post('/card_collection/:collection_id', async (req, res) => {
    const user = requireUser(req);
    const collectionId = uuidParam(req, 'collection_id');
    const body = parseBody(bookmarkBody, req);
    await clients.cards.addBookmark({ callerId: user.id, collectionId, cardId: body.card_metadata_id });
    res.status(204).end();
  });

  router.delete('/card_collection/:collection_id', async (req, res) => {
    const user = requireUser(req);
    const collectionId = uuidParam(req, 'collection_id');
    const body = parseBody(bookmarkBody, req);
    await clients.cards.removeBookmark({ callerId: user.id, collectionId, cardId: body.card_metadata_id });
    res.status(204).end();
  });
}
