import type { Request, Router } from 'express';
import { z } from 'zod';
import { fitsCharacters, MAX_LINK_CHARS } from '@cards/card-rules';
import type { search } from '@cards/proto';
import type { RouteDeps } from '../app';
import { presentCardGroups } from '../presenters/card-presenter';
import { readCardGroups } from './card-groups';
import { presentCollection } from '../presenters/collection-presenter';
import { nonBlankCharacterString, pageParam, parseBody, tagList, uuidString } from '../http/validation';

/** Every search page holds 25 cards (DESIGN.md "Paging"). */
export const SEARCH_PAGE_SIZE = 25;
export const MAX_SEARCH_CONTENT_LENGTH = 2000;

const content = nonBlankCharacterString(MAX_SEARCH_CONTENT_LENGTH);

const tooLong = `each link at most ${MAX_LINK_CHARS} characters`;
// Far longer than a link may be, so spaces around one still fit; an item beyond it is refused as too long too.
const linkItem = z.string().max(20_000, tooLong).openapi({ maxLength: MAX_LINK_CHARS });
/**
 * Links to include: an array of strings (one string is taken as a list of one), trimmed, empty ones dropped. Each is
 * bounded as a card's link is stored (trimmed, MAX_LINK_CHARS), so a whole stored link can be looked for.
 */
const linkList = z
  .union([z.array(linkItem).max(100, 'at most 100 links'), linkItem], {
    errorMap: () => ({ message: 'must be an array of strings' }),
  })
  .transform((v) => [...new Set((Array.isArray(v) ? v : [v]).map((l) => l.trim()).filter((l) => l.length > 0))])
  .refine((links) => links.every((l) => fitsCharacters(l, MAX_LINK_CHARS)), tooLong);

export const cardSearchBody = z.object({
  content,
  tag_set: tagList.nullish().transform((v) => v ?? []),
  link: linkList.nullish().transform((v) => v ?? []),
});

export const collectionSearchBody = cardSearchBody.extend({ collection_id: uuidString });

type Kind = 'semantic' | 'fulltext';

/**
 * Card and collection searches, semantic and full-text: the search service ranks root card ids, the cards service
 * turns them into [root, ...visible collisions] groups in hit order, and each entry carries its hit's score.
 */
export function registerSearchRoutes(router: Router, { clients }: RouteDeps): void {
  async function run(req: Request, kind: Kind, body: z.infer<typeof cardSearchBody>, collectionId?: string) {
    const callerId = req.user?.id;
    const request: search.SearchRequest = {
      query: body.content,
      tags: body.tag_set,
      links: body.link,
      callerId,
      collectionId,
      page: pageParam(req),
      pageSize: SEARCH_PAGE_SIZE,
    };
    const result = kind === 'semantic' ? await clients.search.semanticSearch(request, { idempotent: true }) : await clients.search.fullTextSearch(request, { idempotent: true });
    const scores = new Map(result.hits.map((h) => [h.cardId, h.score]));
    const groups = result.hits.length === 0 ? [] : await readCardGroups(clients, result.hits.map((h) => h.cardId), callerId);
    const entries = (await presentCardGroups(clients, groups, callerId)).map((entry) => ({ ...entry, score: scores.get(entry.metadata[0]!.id) ?? 0 }));
    return { entries, totalPages: result.totalPages };
  }

  for (const [path, kind] of [
    ['/card/search/:page', 'semantic'],
    ['/card/fulltextsearch/:page', 'fulltext'],
  ] as const) {
    router.post(path, async (req, res) => {
      pageParam(req);
      const body = parseBody(cardSearchBody, req);
      const { entries, totalPages } = await run(req, kind, body);
      res.json(kind === 'semantic' ? { score_cards: entries, total_pages: totalPages } : { score_cards: entries, total_pages: totalPages, total_card_pages: totalPages });
    });
  }

  for (const [path, kind] of [
    ['/card_collection/search/:page', 'semantic'],
    ['/card_collection/fulltextsearch/:page', 'fulltext'],
  ] as const) {
    router.post(path, async (req, res) => {
      pageParam(req);
      const body = parseBody(collectionSearchBody, req);
      // NOT_FOUND (404) when the collection is missing or private to someone else.
      const collection = await clients.cards.getCollection({ collectionId: body.collection_id, callerId: req.user?.id }, { idempotent: true });
      const { entries, totalPages } = await run(req, kind, body, collection.id);
      res.json({ bookmarks: entries, collection: presentCollection(collection), total_pages: totalPages });
    });
  }
}
