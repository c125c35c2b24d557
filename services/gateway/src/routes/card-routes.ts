import type { Router } from 'express';
import { z } from 'zod';
import type { RouteDeps } from '../app';
import { CARD, ifMatchVersion, versionAfterUpdate, versionEtag } from '../http/version-tag';
import { idempotencyOf } from '../http/idempotency-key';
import { requireUser } from '../http/session';
import { looseBoolean, parseBody, refuseUnreadableBody, tagList, uuidParam, uuidString } from '../http/validation';
import { presentCard, presentCards } from '../presenters/card-presenter';
import { presentUser } from '../presenters/user-presenter';

const requiredString = (max: number) =>
  z.string({ required_error: 'is required', invalid_type_error: 'must be a string' }).max(max, `must be at most ${max} characters`);

export const createCardBody = z.object({
  card_html: requiredString(500_000),
  link: requiredString(2048),
  private: looseBoolean,
  tag_set: tagList.nullish(),
  file_uuid: uuidString.nullish(),
  oc_file_path: z.string({ invalid_type_error: 'must be a string' }).max(1024, 'must be at most 1024 characters').nullish(),
});

export const updateCardBody = z.object({
  card_uuid: uuidString,
  // null is the empty link, "" (decisions.md "null is a field's empty value"), as a collection's description takes it.
  link: requiredString(2048).nullish(),
  card_html: requiredString(500_000).optional(),
  private: looseBoolean.optional(),
});

/** Cards: create (with duplicate detection), read, update, delete, count. */
export function registerCardRoutes(router: Router, { clients }: RouteDeps): void {
  router.post('/card', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(createCardBody, req);
    const request = {
      cardHtml: body.card_html,
      link: body.link,
      private: body.private,
      tags: body.tag_set ?? [],
      fileId: body.file_uuid ?? undefined,
      ocFilePath: body.oc_file_path ?? undefined,
    };
    const { card, duplicate } = await clients.cards.createCard({ callerId: user.id, ...request, ...idempotencyOf(req, () => request) });
    // The card is stored: its author is the caller, whom the session already resolved, so no second identity call
    // (identity gone between the two would answer 503 for a stored card, and a retry without Idempotency-Key would
    // store it twice). Another author (not expected) is looked up as before.
    const [presented] = card!.authorId === user.id ? [presentCard(card!, { author: presentUser(user, user.id) })] : await presentCards(clients, [card!], user.id);
    res.json({ card_metadata: { ...presented!, vector_point_id: null, author_id: card!.authorId }, duplicate });
  });

  router.get('/card/count', async (_req, res) => {
    const { totalCount } = await clients.cards.countCards({}, { idempotent: true });
    res.json({ total_count: totalCount });
  });

  router.put('/card/update', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(updateCardBody, req);
    // Optional If-Match (the card's ETag as read): checked and written in one step by the cards service, 412 when the card changed since.
    const ifUpdatedAt = ifMatchVersion(req, CARD);
    const request = { callerId: user.id, cardId: body.card_uuid, link: body.link === null ? '' : body.link, cardHtml: body.card_html, private: body.private, ifUpdatedAt };
    // The card's version as this update left it, from the update's own write (not read again, so never a later
    // writer's): the ETag of the next If-Match, so a client saving twice need not read the card between.
    const updatedAt = await versionAfterUpdate(
      () => clients.cards.updateCardVersioned(request),
      () => clients.cards.updateCard(request),
    );
    if (updatedAt) res.setHeader('etag', versionEtag(updatedAt));
    res.status(204).end();
  });

  router.get('/card/:card_id', async (req, res) => {
    const cardId = uuidParam(req, 'card_id');
    const card = await clients.cards.getCard({ cardId, callerId: req.user?.id }, { idempotent: true });
    const [presented] = await presentCards(clients, [card], req.user?.id);
    // The card's version, for an update's If-Match (PUT /api/card/update).
    res.setHeader('etag', versionEtag(card.updatedAt!));
    res.json(presented);
  });

  router.delete('/card/:card_id', async (req, res) => {
    const user = requireUser(req);
    const cardId = uuidParam(req, 'card_id');
    refuseUnreadableBody(req);
    await clients.cards.deleteCard({ callerId: user.id, cardId });
    res.status(204).end();
  });
}
