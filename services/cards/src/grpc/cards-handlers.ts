import type { cards } from '@cards/proto';
import type { CardService, ViewedCard, ViewedGroup } from '../application/card-service';
import type { CollectionService } from '../application/collection-service';
import type { Collection, Vote } from '../domain/model';

function cardToProto(c: ViewedCard): cards.Card {
  return {
    id: c.id,
    authorId: c.authorId,
    content: c.content,
    cardHtml: c.cardHtml,
    link: c.link,
    vectorPointId: c.vectorPointId ?? undefined,
    totalUpvotes: c.totalUpvotes,
    totalDownvotes: c.totalDownvotes,
    voteByCurrentUser: c.viewerVote ?? undefined,
    createdAt: c.createdAt,
    updatedAt: c.updatedAt,
    tags: c.tags,
    fileId: c.fileId ?? undefined,
    fileName: c.fileName ?? undefined,
    private: c.private,
    verificationScore: c.verificationScore ?? undefined,
    ocFilePath: c.ocFilePath ?? undefined,
    collisionOf: c.collisionOf ?? undefined,
  };
}

const groupToProto = (g: ViewedGroup): cards.CardGroup => ({ root: cardToProto(g.root), collisions: g.collisions.map(cardToProto) });

const voteToProto = (v: Vote): cards.Vote => ({ id: v.id, votedUserId: v.userId, cardMetadataId: v.cardId, vote: v.value, createdAt: v.createdAt, updatedAt: v.updatedAt, deleted: false });

const collectionToProto = (c: Collection): cards.Collection => ({
  id: c.id,
  authorId: c.authorId,
  name: c.name,
  description: c.description,
  isPublic: c.isPublic,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
  fileId: c.fileId ?? undefined,
});

/** UpdateCollection and UpdateCollectionVersioned carry the same request: the arguments of CollectionService.update. */
const updateCollectionArgs = (req: cards.UpdateCollectionRequest) =>
  [req.callerId, req.collectionId, { name: req.name, description: req.description, isPublic: req.isPublic }, req.ifUpdatedAt] as const;

/** UpdateCard and UpdateCardVersioned carry the same request. */
const updateCardInput = (req: cards.UpdateCardRequest) => ({ callerId: req.callerId, cardId: req.cardId, link: req.link, cardHtml: req.cardHtml, private: req.private, ifUpdatedAt: req.ifUpdatedAt });

/** gRPC face of the cards use cases; no rules here. */
export function cardsHandlers(cardService: CardService, collectionService: CollectionService): cards.CardServiceImplementation {
  return {
    async createCard(req) {
      const { card, duplicate } = await cardService.createCard({
        callerId: req.callerId,
        cardHtml: req.cardHtml,
        link: req.link,
        private: req.private,
        tags: req.tags,
        fileId: req.fileId || undefined,
        ocFilePath: req.ocFilePath,
        idempotencyKey: req.idempotencyKey || undefined,
        requestFingerprint: req.requestFingerprint || undefined,
        hiddenByFile: req.hiddenByFile,
        privacyFromFile: req.privacyFromFile,
      });
      return { card: cardToProto(card), duplicate };
    },
    async getCard(req) {
      return cardToProto(await cardService.getCard(req.cardId, req.callerId || undefined));
    },
    async getCardGroups(req) {
      const part = await cardService.getCardGroupsPart(req.cardIds, req.callerId || undefined, req.maxBytes, req.pageToken);
      return { groups: part.groups.map(groupToProto), nextPageToken: part.next ?? '' };
    },
    async updateCard(req) {
      await cardService.updateCard(updateCardInput(req));
      return {};
    },
    async updateCardVersioned(req) {
      return { updatedAt: await cardService.updateCard(updateCardInput(req)) };
    },
    async deleteCard(req) {
      await cardService.deleteCard(req.callerId, req.cardId);
      return {};
    },
    async countCards() {
      return { totalCount: await cardService.countCards() };
    },
    async castVote(req) {
      return voteToProto(await cardService.castVote(req.callerId, req.cardId, req.vote));
    },
    async deleteVote(req) {
      await cardService.deleteVote(req.callerId, req.cardId);
      return {};
    },
    async listUserCards(req) {
      const page = await cardService.listUserCards(req.userId, req.callerId || undefined, req.page, req.maxBytes);
      return {
        cards: page.cards.map(cardToProto),
        restCardIds: page.restCardIds,
        totalCardsCreated: page.totalCardsCreated,
        totalPages: page.totalPages,
        totalUpvotesReceived: page.upvotesReceived,
        totalDownvotesReceived: page.downvotesReceived,
        totalVotesCast: page.votesCast,
      };
    },
    async topUsers(req) {
      const { users, totalPages } = await cardService.topUsers(req.page);
      return { users: users.map((u) => ({ userId: u.userId, score: u.score })), totalPages };
    },
    async clearFileReferences(req) {
      await cardService.clearFileReferences(req.fileId);
      return {};
    },
    async applyFilePrivacy(req) {
      await cardService.applyFilePrivacy(req.fileId, req.ownerId, req.private);
      return {};
    },
    async createCollection(req) {
      return collectionToProto(await collectionService.create(req.callerId, req.name, req.description, req.isPublic, { key: req.idempotencyKey, requestFingerprint: req.requestFingerprint }));
    },
    async updateCollection(req) {
      await collectionService.update(...updateCollectionArgs(req));
      return {};
    },
    async updateCollectionVersioned(req) {
      return { updatedAt: await collectionService.update(...updateCollectionArgs(req)) };
    },
    async deleteCollection(req) {
      await collectionService.delete(req.callerId, req.collectionId);
      return {};
    },
    async getCollection(req) {
      return collectionToProto(await collectionService.get(req.collectionId, req.callerId || undefined));
    },
    async addBookmark(req) {
      await collectionService.addBookmark(req.callerId, req.collectionId, req.cardId);
      return {};
    },
    async removeBookmark(req) {
      await collectionService.removeBookmark(req.callerId, req.collectionId, req.cardId);
      return {};
    },
    async listCollectionCards(req) {
      const page = await collectionService.listCards(req.collectionId, req.callerId || undefined, req.page, req.maxGroupBytes);
      const rest = page.more ? { groupsPageToken: page.more.pageToken, groupCardIds: page.more.rootIds } : {};
      return { collection: collectionToProto(page.collection), bookmarks: page.bookmarks.map(groupToProto), totalPages: page.totalPages, ...rest };
    },
    async listUserCollections(req) {
      const page = await collectionService.listUserCollections(req.userId, req.callerId || undefined, req.pageSize, req.pageToken);
      return { collections: page.items.map(collectionToProto), nextPageToken: page.next ?? '' };
    },
    async findCardCollections(req) {
      const page = await collectionService.findCardCollections(req.callerId, req.cardIds, req.pageSize, req.pageToken);
      return { entries: page.items, nextPageToken: page.next ?? '' };
    },
    async createFileCollection(req) {
      return collectionToProto(await collectionService.createFileCollection(req.ownerId, req.fileId, req.fileName, req.isPublic, req.cardIds));
    },
  };
}
