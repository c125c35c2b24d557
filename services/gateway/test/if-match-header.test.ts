import { randomUUID } from 'node:crypto';
import { changedSinceReadMessage } from '@cards/card-rules';
import type { cards } from '@cards/proto';
import { describeBehindGateway, stubPeersForSuite, tokenIsUser } from './fake-peer';

/**
 * If-Match on the card and collection updates as the gateway reads it, before any call to the cards service: a header
 * naming no version of ours is 412 {"message"} (the cards service is not asked), one of ours is passed on as is.
 */
const cardUpdates: cards.UpdateCardRequest[] = [];
const collectionUpdates: cards.UpdateCollectionRequest[] = [];
const WRITTEN = new Date('2026-11-25T03:00:00.000Z');
const peers = stubPeersForSuite(
  {
    identity: tokenIsUser,
    cards: {
      async updateCardVersioned(req: cards.UpdateCardRequest) {
        cardUpdates.push(req);
        return { updatedAt: WRITTEN };
      },
      async updateCollectionVersioned(req: cards.UpdateCollectionRequest) {
        collectionUpdates.push(req);
        return { updatedAt: WRITTEN };
      },
    },
  },
  'cards-versioned',
);

describeBehindGateway('If-Match on PUT /api/card/update and PUT /api/card_collection', () => peers.address, (gateway) => {
  const put = (path: string, body: object, ifMatch: string) =>
    fetch(`${gateway.base}${path}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', cookie: `ai-editor=${randomUUID()}`, 'if-match': ifMatch },
      body: JSON.stringify(body),
    });
  const updates = [
    ['card', '/api/card/update', () => ({ card_uuid: randomUUID(), link: 'https://example.com/edited' }), cardUpdates],
    ['collection', '/api/card_collection', () => ({ collection_id: randomUUID(), name: 'Renamed' }), collectionUpdates],
  ] as const;

  it.each(updates)('of a %s: a 16-digit tag past the last instant a date holds is 412 {"message"}, as any tag naming no version (it was a 500)', async (name, path, body, reached) => {
    reached.length = 0;
    for (const tag of ['"9000000000000000"', '"9999999999999999"', 'W/"8640000000000001"']) {
      const answer = await put(path, body(), tag);
      expect(answer.status).toBe(412);
      expect(((await answer.json()) as { message: string }).message).toBe(changedSinceReadMessage(name));
    }
    expect(reached).toHaveLength(0);
    // The last instant a date holds is still a version (the cards service compares it).
    const last = await put(path, body(), '"8640000000000000"');
    expect(last.status).toBe(204);
    expect(reached.map((r) => r.ifUpdatedAt?.getTime())).toEqual([8.64e15]);
  });

  it.each(updates)('of a %s: a tag of another format holding a comma is a tag all the same (412 alone, ours beside it is compared), not a malformed header', async (name, path, body, reached) => {
    reached.length = 0;
    const foreign = await put(path, body(), '"v1,2"');
    expect(foreign.status).toBe(412);
    expect(((await foreign.json()) as { message: string }).message).toBe(changedSinceReadMessage(name));
    const beside = await put(path, body(), 'W/"a,b", "1764030000000"');
    expect(beside.status).toBe(204);
    expect(beside.headers.get('etag')).toBe(`"${WRITTEN.getTime()}"`);
    expect(reached.map((r) => r.ifUpdatedAt?.getTime())).toEqual([1764030000000]);
    // Still malformed: a tag without its quotes, text after a tag.
    for (const header of ['1764030000000', '"1764030000000" x', ',']) expect((await put(path, body(), header)).status).toBe(400);
  });

  it.each(updates)('of a %s: empty list elements before, between and after the tags are ignored (RFC 9110 §5.6.1.2); a header of none names no tag (400)', async (_name, path, body, reached) => {
    reached.length = 0;
    // A trailing comma, a leading one and doubled ones, as senders merging values write them: the one tag is compared
    // (before, all but the first were refused 400 as malformed).
    for (const header of ['"1764030000000",', ', "1764030000000"', ' ,, "1764030000000" , ,', 'W/"x", ,"1764030000000"']) {
      const answer = await put(path, body(), header);
      expect([header, answer.status]).toEqual([header, 204]);
    }
    expect(reached.map((r) => r.ifUpdatedAt?.getTime())).toEqual(Array(4).fill(1764030000000));
    // Only empty elements: no tag to compare, said how to send one.
    for (const header of [',', ' , ,']) {
      const answer = await put(path, body(), header);
      expect(answer.status).toBe(400);
      expect(((await answer.json()) as { message: string }).message).toMatch(/^If-Match: must be \* or the ETag that GET /);
    }
    expect(reached).toHaveLength(4);
  });
});
