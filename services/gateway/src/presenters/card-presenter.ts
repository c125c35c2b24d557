import { toApiTimestamp } from '@cards/platform';
import type { cards } from '@cards/proto';
import type { GatewayClients } from '../clients';
import { presentUser, type PresentedUser } from './user-presenter';

export interface PresentCardOptions {
  /** null for cards listed under a user (the interface's rule), else the author's User object. */
  author: PresentedUser | null;
}

/** A Card as the interface shows it. */
export function presentCard(card: cards.Card, { author }: PresentCardOptions) {
  return {
    id: card.id,
    author,
    content: card.content,
    card_html: card.cardHtml,
    link: card.link,
    vector_point_id: card.vectorPointId ?? null,
    total_upvotes: card.totalUpvotes,
    total_downvotes: card.totalDownvotes,
    vote_by_current_user: card.voteByCurrentUser ?? null,
    created_at: toApiTimestamp(card.createdAt),
    updated_at: toApiTimestamp(card.updatedAt),
    tag_set: card.tags.length > 0 ? card.tags.join(',') : null,
    file_id: card.fileId ?? null,
    file_name: card.fileName ?? null,
    private: card.private,
    verification_score: card.verificationScore ?? null,
    oc_file_path: card.ocFilePath ?? null,
  };
}

export type PresentedCard = ReturnType<typeof presentCard>;

/** Authors of many cards in ONE identity call, keyed by user id. */
export async function loadAuthors(clients: Pick<GatewayClients, 'identity'>, cardList: readonly cards.Card[], viewerId: string | undefined): Promise<Map<string, PresentedUser>> {
  const ids = [...new Set(cardList.map((c) => c.authorId))];
  if (ids.length === 0) return new Map();
  const { users } = await clients.identity.getUsers({ ids }, { idempotent: true });
  return new Map(users.map((u) => [u.id, presentUser(u, viewerId)]));
}

/** Cards with their authors, one identity call for the whole list. */
export async function presentCards(clients: Pick<GatewayClients, 'identity'>, cardList: readonly cards.Card[], viewerId: string | undefined): Promise<PresentedCard[]> {
  const authors = await loadAuthors(clients, cardList, viewerId);
  return cardList.map((c) => presentCard(c, { author: authors.get(c.authorId) ?? null }));
}

/** Search and collection entries: {metadata: [root, ...collisions]}, authors loaded once for all groups. */
export async function presentCardGroups(clients: Pick<GatewayClients, 'identity'>, groups: readonly cards.CardGroup[], viewerId: string | undefined): Promise<{ metadata: PresentedCard[] }[]> {
  const all = groups.flatMap((g) => (g.root ? [g.root, ...g.collisions] : g.collisions));
  const authors = await loadAuthors(clients, all, viewerId);
  const present = (c: cards.Card) => presentCard(c, { author: authors.get(c.authorId) ?? null });
  return groups.filter((g) => g.root).map((g) => ({ metadata: [present(g.root!), ...g.collisions.map(present)] }));
}
