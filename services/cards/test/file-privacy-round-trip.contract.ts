import { randomUUID } from 'node:crypto';
import { createLogger, InvalidArgumentError, NotFoundError, Topics } from '@cards/platform';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { CardService } from '../src/application/card-service';
import { aCollection, someContent } from './builders';
import type { CardsStoreFactory, CardsStoreFixture } from './fixture';

/**
 * A file made private and public again gives back every card it hid, duplicates (collisions) included, each in its
 * place among its copies: the card service on a store. Run it against every adapter.
 */
export function describeFilePrivacyRoundTripContract(name: string, factory: CardsStoreFactory): void {
  describe(`a file's privacy round trip gives back its duplicate cards: ${name}`, () => {
    let store: CardsStoreFixture;
    beforeEach(async () => {
      store = await factory();
    });
    afterEach(async () => {
      await store.close();
    });

    const files = new Map<string, string>();
    const cardService = () =>
      new CardService({
        cards: store.cards,
        votes: store.votes,
        collections: store.collections,
        contentLock: new InProcessContentLock(),
        nearDuplicates: { find: async () => [] },
        files: { visibleFile: async (id) => (files.has(id) ? { name: files.get(id)!, private: false } : null) },
        users: { joinDates: async () => new Map() },
        eventsWritten: () => undefined,
        logger: createLogger('cards-test', 'silent'),
      });
    const create = (service: CardService, callerId: string, content: string, extra: object = {}) =>
      service.createCard({ callerId, cardHtml: `<p>${content}</p>`, link: '', private: false, tags: [], ...extra });
    /** Two files of the same text, as one document uploaded twice: the second's cards are collisions of the first's. */
    async function uploadedTwice(service: CardService, owner: string) {
      const [first, second] = [randomUUID(), randomUUID()];
      files.set(first, 'energy.docx');
      files.set(second, 'energy-again.docx');
      const texts = [someContent(), someContent()];
      const roots = [];
      for (const text of texts) roots.push((await create(service, owner, text, { fileId: first })).card);
      const copies = [];
      for (const text of texts) copies.push((await create(service, owner, text, { fileId: second })).card);
      const collection = aCollection().by(owner).forFile(second).build();
      await store.collections.insertFileCollection(collection, copies.map((c) => c.id), () => []);
      return { first, second, roots, copies, collection };
    }
    const stored = async (id: string) => (await store.cards.findById(id))!;

    it('the collisions come back public under their roots: seen by others, in their roots\' groups, in the file\'s collection, their votes counted again', async () => {
      const service = cardService();
      const alice = randomUUID();
      const { second, roots, copies, collection } = await uploadedTwice(service, alice);
      expect(copies.map((c) => c.collisionOf)).toEqual(roots.map((r) => r.id));
      await service.castVote('carol', copies[0]!.id, true);
      expect(await store.votes.received(alice, false)).toEqual({ upvotes: 1, downvotes: 0 });

      await service.applyFilePrivacy(second, alice, true);
      for (const c of copies) expect(await stored(c.id)).toMatchObject({ private: true, hiddenByFile: true });
      expect(await store.votes.received(alice, false)).toEqual({ upvotes: 0, downvotes: 0 });
      const topicsBefore = (await store.pendingEventTopics()).length;

      await service.applyFilePrivacy(second, alice, false);
      for (const [i, c] of copies.entries()) expect(await stored(c.id)).toMatchObject({ private: false, hiddenByFile: false, collisionOf: roots[i]!.id });
      for (const viewer of ['bob', undefined]) {
        for (const c of copies) await expect(service.getCard(c.id, viewer)).resolves.toMatchObject({ id: c.id, private: false });
        const groups = await service.getCardGroups(roots.map((r) => r.id), viewer);
        expect(groups.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual(roots.map((r, i) => [r.id, [copies[i]!.id]]));
        expect((await service.listUserCards(alice, viewer, 1)).cards.map((c) => c.id).sort()).toEqual([...roots, ...copies].map((c) => c.id).sort());
      }
      expect(await store.votes.received(alice, false)).toEqual({ upvotes: 1, downvotes: 0 });
      expect(await store.collections.findById(collection.id)).toMatchObject({ isPublic: true });
      expect(await store.collections.listVisibleBookmarkedRoots(collection.id, null, 0, 10)).toEqual(roots.map((r) => r.id));
      // Search is told of each card given back (one card event each).
      expect((await store.pendingEventTopics()).slice(topicsBefore)).toEqual(copies.map(() => Topics.card));
      // A duplicate she then makes private by hand is hers to keep private: her own request to publish it is refused.
      await service.updateCard({ callerId: alice, cardId: copies[0]!.id, private: true });
      await expect(service.updateCard({ callerId: alice, cardId: copies[0]!.id, private: false })).rejects.toThrow('private: a private duplicate cannot be made public');
    });

    it('a collision whose root was made private meanwhile comes back as a root of its own; one whose root was deleted, under the collision that took its place', async () => {
      const service = cardService();
      const alice = randomUUID();
      const { second, roots, copies } = await uploadedTwice(service, alice);
      const carols = (await create(service, 'carol', roots[1]!.content)).card;
      expect(carols.collisionOf).toBe(roots[1]!.id);
      await service.applyFilePrivacy(second, alice, true);
      // Her own root, made private by hand, still holds her private copy; the other root is deleted: carol's public copy takes its place.
      await service.updateCard({ callerId: alice, cardId: roots[0]!.id, private: true });
      expect((await stored(copies[0]!.id)).collisionOf).toBe(roots[0]!.id);
      await service.deleteCard(alice, roots[1]!.id);
      expect((await stored(copies[1]!.id)).collisionOf).toBe(carols.id);

      await service.applyFilePrivacy(second, alice, false);
      expect(await stored(copies[0]!.id)).toMatchObject({ private: false, collisionOf: null, vectorPointId: null });
      expect(await stored(copies[1]!.id)).toMatchObject({ private: false, collisionOf: carols.id });
      expect(await stored(roots[0]!.id)).toMatchObject({ private: true });
      for (const viewer of ['bob', undefined]) {
        const groups = await service.getCardGroups([copies[0]!.id, carols.id], viewer);
        expect(groups.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([[copies[0]!.id, []], [carols.id, [copies[1]!.id]]]);
      }
    });

    it('a collision given back while its root is made private leaves the root after the write', async () => {
      const service = cardService();
      const alice = randomUUID();
      const { second, roots, copies } = await uploadedTwice(service, alice);
      await service.applyFilePrivacy(second, alice, true);
      // The root is made private right after the file's change read it (public), before the card is written.
      const update = store.cards.update.bind(store.cards);
      let raced = false;
      store.cards.update = async (card, ...rest) => {
        if (!raced && card.id === copies[0]!.id && !card.private) {
          raced = true;
          await update({ ...(await stored(roots[0]!.id)), private: true, updatedAt: new Date() }, null, []);
        }
        return update(card, ...rest);
      };
      await service.applyFilePrivacy(second, alice, false);
      expect(raced).toBe(true);
      expect(await stored(copies[0]!.id)).toMatchObject({ private: false, collisionOf: null });
      await expect(service.getCard(copies[0]!.id, 'bob')).resolves.toMatchObject({ id: copies[0]!.id });
      expect(await stored(copies[1]!.id)).toMatchObject({ private: false, collisionOf: roots[1]!.id });
    });

    it('a duplicate its owner made private stays private through the round trip, and her own request to publish it is refused', async () => {
      const service = cardService();
      const alice = randomUUID();
      const { second, copies } = await uploadedTwice(service, alice);
      await service.updateCard({ callerId: alice, cardId: copies[0]!.id, private: true });
      await service.applyFilePrivacy(second, alice, true);
      await service.applyFilePrivacy(second, alice, false);
      expect(await stored(copies[0]!.id)).toMatchObject({ private: true, hiddenByFile: false });
      expect(await stored(copies[1]!.id)).toMatchObject({ private: false });
      await expect(service.getCard(copies[0]!.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
      await expect(service.updateCard({ callerId: alice, cardId: copies[0]!.id, private: false })).rejects.toBeInstanceOf(InvalidArgumentError);
      // Hidden by the file (not by her), the owner's own request is still refused while the file is private.
      await service.applyFilePrivacy(second, alice, true);
      await expect(service.updateCard({ callerId: alice, cardId: copies[1]!.id, private: false })).rejects.toThrow('private: a private duplicate cannot be made public');
    });
  });
}
