import { createGrpcClient, type GrpcClient } from '@cards/platform';
import { cards, files, identity, notifications, search } from '@cards/proto';
import type { Channel } from 'nice-grpc';

/** One gRPC client per peer service, built once at start-up. */
export interface GatewayClients {
  identity: GrpcClient<typeof identity.IdentityServiceDefinition>;
  cards: GrpcClient<typeof cards.CardServiceDefinition>;
  search: GrpcClient<typeof search.SearchServiceDefinition>;
  files: GrpcClient<typeof files.FileServiceDefinition>;
  notifications: GrpcClient<typeof notifications.NotificationServiceDefinition>;
}

export interface PeerAddresses {
  identity: string;
  cards: string;
  search: string;
  files: string;
  notifications: string;
}

/** `channels` by peer name: the calls' own channels, which /healthz asks too and stop() closes. */
export function createGatewayClients(addresses: PeerAddresses, deadlineMs: number): { clients: GatewayClients; channels: Record<keyof PeerAddresses, Channel> } {
  const made = {
    identity: createGrpcClient(identity.IdentityServiceDefinition, addresses.identity, { deadlineMs }),
    cards: createGrpcClient(cards.CardServiceDefinition, addresses.cards, { deadlineMs }),
    search: createGrpcClient(search.SearchServiceDefinition, addresses.search, { deadlineMs }),
    files: createGrpcClient(files.FileServiceDefinition, addresses.files, { deadlineMs }),
    notifications: createGrpcClient(notifications.NotificationServiceDefinition, addresses.notifications, { deadlineMs }),
  };
  return {
    clients: {
      identity: made.identity.client,
      cards: made.cards.client,
      search: made.search.client,
      files: made.files.client,
      notifications: made.notifications.client,
    },
    channels: {
      identity: made.identity.channel,
      cards: made.cards.channel,
      search: made.search.channel,
      files: made.files.channel,
      notifications: made.notifications.channel,
    },
  };
}
