import { randomUUID } from 'node:crypto';
import { cards } from '@cards/proto';
import { describeBehindGateway, stub, stubPeersForSuite, tokenIsUser } from './fake-peer';

/**
 * A cards service released before UpdateCardVersioned and UpdateCollectionVersioned (the RPCs answering the version
 * after an update): the methods are not served at all, as on such a service (UNIMPLEMENTED). The gateway's card and
 * collection updates still work against it.
 */
const { updateCardVersioned: _card, updateCollectionVersioned: _collection, ...olderMethods } = cards.CardServiceDefinition.methods;
const olderCardsDefinition = { ...cards.CardServiceDefinition, methods: olderMethods };

const updates: cards.UpdateCardRequest[] = [];
const collectionUpdates: cards.UpdateCollectionRequest[] = [];
const peers = stubPeersForSuite(
  {
    identity: tokenIsUser,
    register(s) {
      s.add(
        olderCardsDefinition,
        stub<Omit<cards.CardServiceImplementation, 'updateCardVersioned' | 'updateCollectionVersioned'>>(olderCardsDefinition, {
          async updateCard(req: cards.UpdateCardRequest) {
            updates.push(req);
            return {};
          },
          async updateCollection(req: cards.UpdateCollectionRequest) {
            collectionUpdates.push(req);
            return {};
          },
        }),
      );
    },
  },
  'older-cards',
);

describeBehindGateway('an update whose cards service predates the Versioned RPCs', () => peers.address, (gateway) => {
  it('is made with UpdateCard (its If-Match passed on) and answered 204 without an ETag, as before', async () => {
    const user = randomUUID();
    const cardId = randomUUID();
    updates.length = 0;
    const answer = await fetch(`${gateway.base}/api/card/update`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', cookie: `ai-editor=${user}`, 'if-match': '"1764030000000"' },
      body: JSON.stringify({ card_uuid: cardId, link: 'https://example.com/edited' }),
    });
    expect(answer.status).toBe(204);
    expect(answer.headers.get('etag')).toBeNull();
    expect(updates).toHaveLength(1);
    expect(updates[0]).toMatchObject({ callerId: user, cardId, link: 'https://example.com/edited' });
    expect(updates[0]!.ifUpdatedAt?.getTime()).toBe(1764030000000);
  });

  it('of a collection is made with UpdateCollection (its If-Match passed on) and answered 204 without an ETag, as before', async () => {
    const user = randomUUID();
    const collectionId = randomUUID();
    collectionUpdates.length = 0;
    const answer = await fetch(`${gateway.base}/api/card_collection`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', cookie: `ai-editor=${user}`, 'if-match': 'W/"1764030000000"' },
      body: JSON.stringify({ collection_id: collectionId, name: 'Renamed' }),
    });
    expect(answer.status).toBe(204);
    expect(answer.headers.get('etag')).toBeNull();
    expect(collectionUpdates).toHaveLength(1);
    expect(collectionUpdates[0]).toMatchObject({ callerId: user, collectionId, name: 'Renamed' });
    expect(collectionUpdates[0]!.ifUpdatedAt?.getTime()).toBe(1764030000000);
  });
});
