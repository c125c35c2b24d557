import { randomUUID } from 'node:crypto';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, nextTime } from './builders';
import type { CardsStoreFactory, CardsStoreFixture } from './fixture';

/** The VoteRepository contract; run it against every adapter. */
export function describeVoteRepositoryContract(name: string, factory: CardsStoreFactory): void {
  describe(`VoteRepository contract: ${name}`, () => {
    let store: CardsStoreFixture;
    beforeEach(async () => {
      store = await factory();
    });
    afterEach(async () => {
      await store.close();
    });

    async function storedCard(authorId: string = randomUUID()) {
      const card = aCard().by(authorId).build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      return card;
    }

    it('keeps one vote per user per card; a flip moves the card totals and author counters', async () => {
      const card = await storedCard();
      const user = randomUUID();
      const first = await store.votes.upsert(user, card.id, true, nextTime(), randomUUID());
      expect(first).toMatchObject({ userId: user, cardId: card.id, value: true });
      expect((await store.votes.upsert(user, card.id, true, nextTime(), randomUUID()))?.id).toBe(first!.id);
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 1, totalDownvotes: 0 });
      const flipped = await store.votes.upsert(user, card.id, false, nextTime(), randomUUID());
      expect(flipped).toMatchObject({ id: first!.id, value: false, createdAt: first!.createdAt });
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 0, totalDownvotes: 1 });
      expect(await store.votes.received(card.authorId)).toEqual({ upvotes: 0, downvotes: 1 });
      expect(await store.votes.votesOf(user, [card.id, randomUUID()])).toEqual(new Map([[card.id, false]]));
      expect(await store.votes.countCastBy(user)).toBe(1);
    });

    it('answers null for a vote on a missing card', async () => {
      expect(await store.votes.upsert(randomUUID(), randomUUID(), true, nextTime(), randomUUID())).toBeNull();
    });

    it('removes a vote and its effect; removing again answers false', async () => {
      const card = await storedCard();
      const user = randomUUID();
      await store.votes.upsert(user, card.id, true, nextTime(), randomUUID());
      expect(await store.votes.remove(user, card.id)).toBe(true);
      expect(await store.votes.remove(user, card.id)).toBe(false);
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 0, totalDownvotes: 0 });
      expect(await store.votes.received(card.authorId)).toEqual({ upvotes: 0, downvotes: 0 });
    });

    it('stays exact under many concurrent votes', async () => {
      const card = await storedCard();
      await Promise.all(Array.from({ length: 200 }, (_, i) => store.votes.upsert(`user-${i}`, card.id, i % 4 !== 0, nextTime(), randomUUID())));
      await Promise.all(Array.from({ length: 50 }, (_, i) => store.votes.remove(`user-${i}`, card.id)));
      // users 0..49 removed: 13 of them were downvotes (i % 4 === 0), 37 upvotes.
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 150 - 37, totalDownvotes: 50 - 13 });
      expect(await store.votes.received(card.authorId)).toEqual({ upvotes: 113, downvotes: 37 });
    });

    it('ranks authors with received votes by score, then join date, then id, paged', async () => {
      const [a, b, c, d] = ['a-user', 'b-user', 'c-user', 'd-user'];
      const cards = { a: await storedCard(a), b: await storedCard(b), c: await storedCard(c), d: await storedCard(d) };
      await store.votes.upsert('v1', cards.a.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v1', cards.b.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v2', cards.b.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v1', cards.c.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v1', cards.d.id, true, nextTime(), randomUUID());
      await store.votes.remove('v1', cards.d.id);
      expect(await store.votes.countRankedAuthors()).toBe(3);
      expect((await store.votes.authorsWithoutJoinDate(10)).sort()).toEqual([a, b, c]);
      await store.votes.recordJoinDates(new Map([[c, new Date('2025-01-01T00:00:00Z')], [a, new Date('2025-06-01T00:00:00Z')]]));
      expect(await store.votes.authorsWithoutJoinDate(10)).toEqual([b]);
      expect(await store.votes.topAuthors(0, 10)).toEqual([
        { userId: b, score: 2 },
        { userId: c, score: 1 },
        { userId: a, score: 1 },
      ]);
      expect(await store.votes.topAuthors(1, 1)).toEqual([{ userId: c, score: 1 }]);
    });
  });
}
