import type { Router } from 'express';
import { z } from 'zod';
import { toApiTimestamp } from '@cards/platform';
import type { cards } from '@cards/proto';
import type { RouteDeps } from '../app';
import { requireUser } from '../http/session';
import { looseBoolean, parseBody, refuseUnreadableBody, uuidParam, uuidString } from '../http/validation';

export const voteBody = z.object({ card_metadata_id: uuidString, vote: looseBoolean });

export function presentVote(v: cards.Vote) {
  return {
    id: v.id,
    voted_user_id: v.votedUserId,
    card_metadata_id: v.cardMetadataId,
    vote: v.vote,
    created_at: toApiTimestamp(v.createdAt),
    updated_at: toApiTimestamp(v.updatedAt),
    deleted: v.deleted,
  };
}

/** Votes: one per user per card; DELETE takes the card id. */
export function registerVoteRoutes(router: Router, { clients }: RouteDeps): void {
  router.post('/vote', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(voteBody, req);
    res.json(presentVote(await clients.cards.castVote({ callerId: user.id, cardId: body.card_metadata_id, vote: body.vote })));
  });

  router.delete('/vote/:card_id', async (req, res) => {
    const user = requireUser(req);
    const cardId = uuidParam(req, 'card_id');
    refuseUnreadableBody(req);
    await clients.cards.deleteVote({ callerId: user.id, cardId });
    res.status(204).end();
  });
}
