import { ClientError, Status } from 'nice-grpc';
import { createGrpcClient, type GrpcClient } from '@cards/platform';
import { cards } from '@cards/proto';
import type { Channel } from 'nice-grpc';
import { CardRejectedError, type CardsPort, type NewCard } from '../../domain/ports';

/** grpc-js connectivity states of a channel still trying to reach its peer (CONNECTING, TRANSIENT_FAILURE). */
const REACHING_FOR_PEER = new Set([1, 3]);

/**
 * The cards service over gRPC. Content refusals become CardRejectedError; everything else is retryable. A deadline that
 * ran out while the channel had no connection to cards (a peer gone without refusing connections: a host or pod that
 * drops them, a process that accepts and never answers) is an UNAVAILABLE, as a refused connection is, so the callers
 * wait for it as for an outage (IngestionWorker) instead of counting it; a deadline on a connected channel stays one.
 */
export class GrpcCardsClient implements CardsPort {
  private readonly client: GrpcClient<typeof cards.CardServiceDefinition>;
  private readonly channel: Channel;

  constructor(address: string, deadlineMs = 30_000) {
    const made = createGrpcClient(cards.CardServiceDefinition, address, { deadlineMs });
    this.client = made.client;
    this.channel = made.channel;
  }

  /** A DEADLINE_EXCEEDED while the channel reaches for its peer (never connected, or connection lost) as an UNAVAILABLE. */
  private unreachableAsUnavailable(err: unknown): unknown {
    if (!(err instanceof ClientError) || err.code !== Status.DEADLINE_EXCEEDED) return err;
    // IDLE is a channel never used: the all-in-one's calls in process, whose deadline is a slow cards, not an outage.
    if (!REACHING_FOR_PEER.has(this.channel.getConnectivityState(false) as number)) return err;
    const unavailable = new ClientError(err.path, Status.UNAVAILABLE, `no connection to the cards service within the deadline (${err.details})`);
    Object.defineProperty(unavailable, 'cause', { value: err, enumerable: false, writable: true, configurable: true });
    return unavailable;
  }

  async createCard(card: NewCard): Promise<string> {
    try {
      const response = await this.client.createCard(
        {
          callerId: card.ownerId,
          cardHtml: card.html,
          link: card.link,
          private: card.private,
          tags: card.tags,
          fileId: card.fileId,
          idempotencyKey: card.idempotencyKey,
          hiddenByFile: card.hiddenByFile,
          privacyFromFile: card.privacyFromFile,
        },
        { idempotent: true },
      );
      if (!response.card?.id) throw new Error('the cards service answered without a card id');
      return response.card.id;
    } catch (err) {
      if (err instanceof ClientError && err.code === Status.INVALID_ARGUMENT) throw new CardRejectedError(err.details);
      throw this.unreachableAsUnavailable(err);
    }
  }

  async createFileCollection(input: { ownerId: string; fileId: string; fileName: string; isPublic: boolean; cardIds: string[] }): Promise<string> {
    try {
      const collection = await this.client.createFileCollection(
        { ownerId: input.ownerId, fileId: input.fileId, fileName: input.fileName, isPublic: input.isPublic, cardIds: input.cardIds },
        { idempotent: true },
      );
      return collection.id;
    } catch (err) {
      // `file_id: no such file`: the file is gone (or not the owner's).
      if (err instanceof ClientError && err.code === Status.INVALID_ARGUMENT) throw new CardRejectedError(err.details);
      throw this.unreachableAsUnavailable(err);
    }
  }

  async clearFileReferences(fileId: string): Promise<void> {
    await this.client.clearFileReferences({ fileId }, { idempotent: true }).catch((err: unknown) => {
      throw this.unreachableAsUnavailable(err);
    });
  }

  async applyFilePrivacy(input: { fileId: string; ownerId: string; private: boolean }): Promise<void> {
    await this.client.applyFilePrivacy({ fileId: input.fileId, ownerId: input.ownerId, private: input.private }, { idempotent: true }).catch((err: unknown) => {
      throw this.unreachableAsUnavailable(err);
    });
  }

  close(): void {
    this.channel.close();
  }
}
