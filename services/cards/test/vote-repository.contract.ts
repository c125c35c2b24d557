import { randomUUID } from 'node:crypto';
import { fingerprintOf } from '../src/domain/rules';
import type { Card } from '../src/domain/model';
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

    it('a repeated vote changes nothing, its updatedAt included; a flip moves updatedAt', async () => {
      const card = await storedCard();
      const user = randomUUID();
      const first = await store.votes.upsert(user, card.id, true, nextTime(), randomUUID());
      const repeated = await store.votes.upsert(user, card.id, true, nextTime(), randomUUID());
      expect(repeated).toEqual(first);
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 1, totalDownvotes: 0 });
      const flipAt = nextTime();
      expect(await store.votes.upsert(user, card.id, false, flipAt, randomUUID())).toEqual({ ...first, value: false, updatedAt: flipAt });
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

    it('removes a vote once when two removals race: one answers true, the other false, the totals lose it once', async () => {
      const card = await storedCard();
      const [user, keeper] = [randomUUID(), randomUUID()];
      await store.votes.upsert(user, card.id, true, nextTime(), randomUUID());
      await store.votes.upsert(keeper, card.id, true, nextTime(), randomUUID());
      const results = await Promise.all([store.votes.remove(user, card.id), store.votes.remove(user, card.id)]);
      expect([...results].sort()).toEqual([false, true]);
      expect(await store.votes.countCastBy(user)).toBe(0);
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 1, totalDownvotes: 0 });
      expect(await store.votes.received(card.authorId)).toEqual({ upvotes: 1, downvotes: 0 });
      expect(await store.votes.received(card.authorId, true)).toEqual({ upvotes: 1, downvotes: 0 });
    });

    it('stays exact under many concurrent votes', async () => {
      const card = await storedCard();
      await Promise.all(Array.from({ length: 200 }, (_, i) => store.votes.upsert(`user-${i}`, card.id, i % 4 !== 0, nextTime(), randomUUID())));
      await Promise.all(Array.from({ length: 50 }, (_, i) => store.votes.remove(`user-${i}`, card.id)));
      // users 0..49 removed: 13 of them were downvotes (i % 4 === 0), 37 upvotes.
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 150 - 37, totalDownvotes: 50 - 13 });
      expect(await store.votes.received(card.authorId)).toEqual({ upvotes: 113, downvotes: 37 });
    });

    const madePrivate = async (card: Card, isPrivate: boolean) => {
      const next = { ...card, private: isPrivate, updatedAt: nextTime() };
      await store.cards.update(next, null, []);
      return next;
    };

    it('counts votes on a private card in the author\'s own totals only; privacy flips move them back and forth', async () => {
      const author = randomUUID();
      const [open, hidden] = [await storedCard(author), await storedCard(author)];
      await store.votes.upsert('v1', open.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v1', hidden.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v2', hidden.id, false, nextTime(), randomUUID());
      expect(await store.votes.received(author)).toEqual({ upvotes: 2, downvotes: 1 });

      let hiddenNow = await madePrivate(hidden, true);
      expect(await store.votes.received(author)).toEqual({ upvotes: 1, downvotes: 0 });
      expect(await store.votes.received(author, true)).toEqual({ upvotes: 2, downvotes: 1 });
      expect(await store.votes.topAuthors(0, 10)).toEqual([{ userId: author, score: 1 }]);
      // A vote taken back from the private card changes the author's own totals only.
      expect(await store.votes.remove('v2', hidden.id)).toBe(true);
      expect(await store.votes.received(author)).toEqual({ upvotes: 1, downvotes: 0 });
      expect(await store.votes.received(author, true)).toEqual({ upvotes: 2, downvotes: 0 });
      // Setting the same privacy again moves nothing; public again restores the card's votes.
      hiddenNow = await madePrivate(hiddenNow, true);
      expect(await store.votes.received(author)).toEqual({ upvotes: 1, downvotes: 0 });
      hiddenNow = await madePrivate(hiddenNow, false);
      expect(await store.votes.received(author)).toEqual({ upvotes: 2, downvotes: 0 });
      expect(await store.votes.topAuthors(0, 10)).toEqual([{ userId: author, score: 2 }]);
      hiddenNow = await madePrivate(hiddenNow, true);
      expect(await store.votes.topAuthors(0, 10)).toEqual([{ userId: author, score: 1 }]);

      // Deleting a private card takes its votes off the author's own totals once; the public ones never had them.
      await store.cards.remove(hidden.id, [], []);
      expect(await store.votes.received(author)).toEqual({ upvotes: 1, downvotes: 0 });
      expect(await store.votes.received(author, true)).toEqual({ upvotes: 1, downvotes: 0 });
      await store.cards.remove(open.id, [], []);
      expect(await store.votes.received(author)).toEqual({ upvotes: 0, downvotes: 0 });
      expect(await store.votes.received(author, true)).toEqual({ upvotes: 0, downvotes: 0 });
    });

    it('counts the votes a user cast on the cards a viewer may see', async () => {
      const [alice, bob] = [randomUUID(), randomUUID()];
      const [open, hidden, bobs] = [await storedCard(alice), await storedCard(alice), await storedCard(bob)];
      for (const c of [open, hidden, bobs]) await store.votes.upsert(bob, c.id, true, nextTime(), randomUUID());
      await madePrivate(hidden, true);
      const bobsNow = await madePrivate(bobs, true);
      expect(await store.votes.countCastBy(bob)).toBe(3);
      expect(await store.votes.countCastOnVisible(bob, null)).toBe(1);
      expect(await store.votes.countCastOnVisible(bob, bob)).toBe(2);
      expect(await store.votes.countCastOnVisible(bob, alice)).toBe(2);
      await madePrivate(bobsNow, false);
      expect(await store.votes.countCastOnVisible(bob, null)).toBe(2);
      expect(await store.votes.countCastOnVisible(randomUUID(), null)).toBe(0);
    });

    it('does not rank an author whose only voted card is private', async () => {
      const author = randomUUID();
      const card = await storedCard(author);
      await store.votes.upsert('v1', card.id, true, nextTime(), randomUUID());
      await madePrivate(card, true);
      expect(await store.votes.topAuthors(0, 10)).toEqual([]);
      expect(await store.votes.countRankedAuthors()).toBe(0);
      expect(await store.votes.authorsWithoutJoinDate(10)).toEqual([]);
    });

    it('counts the ranked authors as they enter and leave the ranking: first votes, a flip, removals, privacy both ways, a card removed', async () => {
      const [alice, bob] = [randomUUID(), randomUUID()];
      const [a1, a2, b1] = [await storedCard(alice), await storedCard(alice), await storedCard(bob)];
      const ranked = async () => [await store.votes.countRankedAuthors(), (await store.votes.topAuthors(0, 10)).length];
      expect(await ranked()).toEqual([0, 0]);
      await store.votes.upsert('v1', a1.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v2', a1.id, false, nextTime(), randomUUID());
      await store.votes.upsert('v1', a2.id, true, nextTime(), randomUUID());
      expect(await ranked()).toEqual([1, 1]);
      await store.votes.upsert('v1', b1.id, false, nextTime(), randomUUID());
      expect(await ranked()).toEqual([2, 2]);
      // A flip and a repeat keep bob ranked (a score below 0 is still a score); his only vote taken back unranks him.
      await store.votes.upsert('v1', b1.id, true, nextTime(), randomUUID());
      await store.votes.upsert('v1', b1.id, true, nextTime(), randomUUID());
      expect(await ranked()).toEqual([2, 2]);
      expect(await store.votes.remove('v1', b1.id)).toBe(true);
      expect(await store.votes.remove('v1', b1.id)).toBe(false);
      expect(await ranked()).toEqual([1, 1]);
      // Bob's card voted on while private ranks him only once it is public.
      const b1Now = await madePrivate(b1, true);
      await store.votes.upsert('v3', b1.id, true, nextTime(), randomUUID());
      expect(await ranked()).toEqual([1, 1]);
      await madePrivate(b1Now, false);
      expect(await ranked()).toEqual([2, 2]);
      // Alice's cards made private one by one: ranked until the last public vote leaves.
      const a1Now = await madePrivate(a1, true);
      expect(await ranked()).toEqual([2, 2]);
      await madePrivate(a2, true);
      expect(await ranked()).toEqual([1, 1]);
      await madePrivate(a1Now, false);
      expect(await ranked()).toEqual([2, 2]);
      // Her voted public card removed takes its votes with it.
      await store.cards.remove(a1.id, [], []);
      expect(await ranked()).toEqual([1, 1]);
      await store.cards.remove(b1.id, [], []);
      expect(await ranked()).toEqual([0, 0]);
    });

    it('keeps public and own totals exact when votes, flips and removals race privacy changes', async () => {
      const author = randomUUID();
      const card = await storedCard(author);
      const other = await storedCard(author);
      await store.votes.upsert('keeper', other.id, true, nextTime(), randomUUID());
      let isPrivate = false;
      const flips = async () => {
        for (let i = 0; i < 15; i++) {
          isPrivate = !isPrivate;
          await store.cards.update({ ...card, private: isPrivate, updatedAt: nextTime() }, null, []);
          await new Promise((r) => setImmediate(r));
        }
      };
      await Promise.all([
        flips(),
        ...Array.from({ length: 120 }, async (_, i) => {
          await store.votes.upsert(`user-${i}`, card.id, i % 3 !== 0, nextTime(), randomUUID());
          if (i % 5 === 0) await store.votes.upsert(`user-${i}`, card.id, i % 3 === 0, nextTime(), randomUUID());
          if (i % 7 === 0) await store.votes.remove(`user-${i}`, card.id);
        }),
      ]);
      const stored = (await store.cards.findById(card.id))!;
      const counted = new Map<string, boolean>();
      for (let i = 0; i < 120; i++) for (const [, v] of await store.votes.votesOf(`user-${i}`, [card.id])) counted.set(`user-${i}`, v);
      const up = [...counted.values()].filter((v) => v).length;
      const down = counted.size - up;
      expect({ up: stored.totalUpvotes, down: stored.totalDownvotes }).toEqual({ up, down });
      expect(await store.votes.received(author, true)).toEqual({ upvotes: up + 1, downvotes: down });
      expect(stored.private).toBe(isPrivate);
      expect(await store.votes.received(author)).toEqual(isPrivate ? { upvotes: 1, downvotes: 0 } : { upvotes: up + 1, downvotes: down });
      // And back the other way once more: still exact.
      await store.cards.update({ ...stored, private: !isPrivate, updatedAt: nextTime() }, null, []);
      expect(await store.votes.received(author)).toEqual(!isPrivate ? { upvotes: 1, downvotes: 0 } : { upvotes: up + 1, downvotes: down });
    });

    it('refuses a public-only vote or flip on a card made private (or deleted) after the caller checked it, storing nothing', async () => {
      const author = randomUUID();
      const [card, gone] = [await storedCard(author), await storedCard(author)];
      await store.votes.upsert('early', card.id, true, nextTime(), randomUUID(), { publicOnly: true });
      const hidden = await madePrivate(card, true);
      await store.cards.remove(gone.id, [], []);
      expect(await store.votes.upsert('late', card.id, true, nextTime(), randomUUID(), { publicOnly: true })).toBeNull();
      expect(await store.votes.upsert('late', gone.id, true, nextTime(), randomUUID(), { publicOnly: true })).toBeNull();
      // The earlier voter's flip is refused too: the vote stays as it was cast while the card was public.
      expect(await store.votes.upsert('early', card.id, false, nextTime(), randomUUID(), { publicOnly: true })).toBeNull();
      expect(await store.votes.votesOf('late', [card.id, gone.id])).toEqual(new Map());
      expect(await store.votes.votesOf('early', [card.id])).toEqual(new Map([[card.id, true]]));
      expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: 1, totalDownvotes: 0 });
      expect(await store.votes.received(author, true)).toEqual({ upvotes: 1, downvotes: 0 });
      expect(await store.votes.received(author)).toEqual({ upvotes: 0, downvotes: 0 });
      // Public again, the card takes votes again (and shows the one it kept).
      await madePrivate(hidden, false);
      expect(await store.votes.upsert('late', card.id, false, nextTime(), randomUUID(), { publicOnly: true })).toMatchObject({ value: false });
      expect(await store.votes.received(author)).toEqual({ upvotes: 1, downvotes: 1 });
    });

    it('public-only votes and flips racing the card made private: each is counted before the change or refused and stored nowhere', async () => {
      const author = randomUUID();
      for (let round = 0; round < 3; round++) {
        const card = await storedCard(author);
        for (let i = 0; i < 10; i++) await store.votes.upsert(`flipper-${i}`, card.id, true, nextTime(), randomUUID());
        // The change starts a few store reads after the votes, so across them it lands between every two steps of a vote.
        const after = async <T>(reads: number, work: () => Promise<T>) => {
          for (let i = 0; i < reads; i++) await store.cards.findById(card.id);
          return work();
        };
        const votes = Array.from({ length: 30 }, (_, i) => after(i % 6, () => store.votes.upsert(`voter-${i}`, card.id, i % 3 !== 0, nextTime(), randomUUID(), { publicOnly: true })));
        const flips = Array.from({ length: 10 }, (_, i) => after(i % 6, () => store.votes.upsert(`flipper-${i}`, card.id, false, nextTime(), randomUUID(), { publicOnly: true })));
        const [answers, flipAnswers] = await Promise.all([Promise.all(votes), Promise.all(flips), after(2 + round, () => madePrivate(card, true))]);
        for (let i = 0; i < 30; i++) {
          const stored = await store.votes.votesOf(`voter-${i}`, [card.id]);
          expect({ voter: i, stored: stored.get(card.id) ?? null }).toEqual({ voter: i, stored: answers[i]?.value ?? null });
        }
        for (let i = 0; i < 10; i++) {
          const stored = await store.votes.votesOf(`flipper-${i}`, [card.id]);
          expect({ flipper: i, stored: stored.get(card.id) }).toEqual({ flipper: i, stored: flipAnswers[i] === null });
        }
        // The card's totals count exactly the votes stored, and none of them counts publicly once it is private.
        const up = answers.filter((a) => a?.value === true).length + flipAnswers.filter((a) => a === null).length;
        const down = answers.filter((a) => a?.value === false).length + flipAnswers.filter((a) => a !== null).length;
        expect(await store.cards.findById(card.id)).toMatchObject({ totalUpvotes: up, totalDownvotes: down });
        expect(await store.votes.received(author)).toEqual({ upvotes: 0, downvotes: 0 });
      }
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
