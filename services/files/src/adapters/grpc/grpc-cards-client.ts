import { ClientError, Status } from 'nice-grpc';
import { createGrpcClient, type GrpcClient } from '@cards/platform';
import { cards } from '@cards/proto';
import type { Channel } from 'nice-grpc';
import { CardRejectedError, type CardsPort, type NewCard } from '../../domain/ports';

/** The cards service over gRPC. Content refusals become CardRejectedError; everything else is retryable. */
export class GrpcCardsClient implements CardsPort {
  private readonly client: GrpcClient<typeof cards.CardServiceDefinition>;
  private readonly channel: Channel;

  constructor(address: string, deadlineMs = 30_000) {
    const made = createGrpcClient(cards.CardServiceDefinition, address, { deadlineMs });
    this.client = made.client;
    this.channel = made.channel;
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
      throw err;
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
      throw err;
    }
  }

  async clearFileReferences(fileId: string): Promise<void> {
    await this.client.clearFileReferences({ fileId }, { idempotent: true });
  }

  async applyFilePrivacy(input: { fileId: string; ownerId: string; private: boolean }): Promise<void> {
    await this.client.applyFilePrivacy({ fileId: input.fileId, ownerId: input.ownerId, private: input.private }, { idempotent: true });
  }

  close(): void {
    this.channel.close();
  }
}
