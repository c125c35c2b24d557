import type { Router } from 'express';
import { GRPC_PART_BYTES } from '@cards/platform';
import type { RouteDeps } from '../app';
import { pageParam, uuidParam } from '../http/validation';
import { presentCard } from '../presenters/card-presenter';
import { presentUser } from '../presenters/user-presenter';
import { cardsOneByOne } from './card-groups';
import { forKnownUser } from './known-user';

/** A user's page of cards, and the top users by score. */
export function registerUserRoutes(router: Router, { clients }: RouteDeps): void {
  router.get('/user/:user_id/:page', async (req, res) => {
    const userId = uuidParam(req, 'user_id');
    const page = pageParam(req);
    const viewerId = req.user?.id;
    const [user, list] = await forKnownUser(clients, userId, clients.cards.listUserCards({ userId, callerId: viewerId, page, maxBytes: GRPC_PART_BYTES }, { idempotent: true }));
    const rest = await cardsOneByOne(clients, list.restCardIds, viewerId);
    res.json({
      ...presentUser(user, viewerId),
      total_cards_created: list.totalCardsCreated,
      total_pages: list.totalPages,
      total_upvotes_received: list.totalUpvotesReceived,
      total_downvotes_received: list.totalDownvotesReceived,
      total_votes_cast: list.totalVotesCast,
      cards: [...list.cards, ...rest].map((c) => presentCard(c, { author: null })),
    });
  });

  router.get('/top_users/:page', async (req, res) => {
    const page = pageParam(req);
    const top = await clients.cards.topUsers({ page }, { idempotent: true });
    const ids = top.users.map((u) => u.userId);
    const { users } = ids.length > 0 ? await clients.identity.getUsers({ ids }, { idempotent: true }) : { users: [] };
    const byId = new Map(users.map((u) => [u.id, u]));
    res.json({
      users: top.users.flatMap((s) => {
        const u = byId.get(s.userId);
        return u ? [{ ...presentUser(u, req.user?.id), score: s.score }] : [];
      }),
      total_user_pages: top.totalPages,
    });
  });
}
