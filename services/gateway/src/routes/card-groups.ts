import { ClientError, Status } from 'nice-grpc';
import { GRPC_PART_BYTES } from '@cards/platform';
import type { cards } from '@cards/proto';
import type { GatewayClients } from '../clients';

/** Where card groups go on: the card ids asked and the token of the next part ('' when nothing follows). */
export interface CardGroupsRest {
  cardIds: readonly string[];
  callerId: string | undefined;
  pageToken: string;
}

/**
 * The groups of a first part followed by every further part, read one after the other: a page of roots each copied by
 * many users passes one gRPC message, and the interface shows every visible collision inside its root's entry. A
 * group cut between parts starts the next part with its root again; its collisions join the entry already there.
 */
export async function withRestOfCardGroups(clients: Pick<GatewayClients, 'cards'>, first: readonly cards.CardGroup[], rest: CardGroupsRest): Promise<cards.CardGroup[]> {
  const groups = first.map((g) => ({ ...g, collisions: [...g.collisions] }));
  for (let pageToken = rest.pageToken; pageToken !== ''; ) {
    const part = await clients.cards.getCardGroups({ cardIds: [...rest.cardIds], callerId: rest.callerId, maxBytes: GRPC_PART_BYTES, pageToken }, { idempotent: true });
    for (const group of part.groups) {
      const last = groups[groups.length - 1];
      if (last?.root && group.root && last.root.id === group.root.id) last.collisions.push(...group.collisions);
      else groups.push({ ...group, collisions: [...group.collisions] });
    }
    pageToken = part.nextPageToken;
  }
  return groups;
}

/** The groups of the card ids the caller may see, in their order: one call when they fit one message (the usual case). */
export async function readCardGroups(clients: Pick<GatewayClients, 'cards'>, cardIds: readonly string[], callerId: string | undefined): Promise<cards.CardGroup[]> {
  const first = await clients.cards.getCardGroups({ cardIds: [...cardIds], callerId, maxBytes: GRPC_PART_BYTES }, { idempotent: true });
  if (first.nextPageToken === '') return first.groups;
  return withRestOfCardGroups(clients, first.groups, { cardIds, callerId, pageToken: first.nextPageToken });
}

/**
 * Cards a list named instead of sending them (they would have passed one message), each read alone, in order; one
 * deleted or made private since is left out, as the list would leave it out now.
 */
export async function cardsOneByOne(clients: Pick<GatewayClients, 'cards'>, cardIds: readonly string[], callerId: string | undefined): Promise<cards.Card[]> {
  const read = await Promise.all(
    cardIds.map((cardId) =>
      clients.cards.getCard({ cardId, callerId }, { idempotent: true }).catch((err: unknown) => {
        if (err instanceof ClientError && err.code === Status.NOT_FOUND) return null;
        throw err;
      }),
    ),
  );
  return read.filter((c): c is cards.Card => c !== null);
}
