import { randomUUID } from 'node:crypto';
import { AlreadyExistsError, keptKeyExpiry, Topics } from '@cards/platform';
import type { Card, Collection } from '../src/domain/model';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection, nextTime } from './builders';
import type { CardsStoreFactory, CardsStoreFixture } from './fixture';

const event = (topic: string) => ({ topic, key: 'k', payload: new Uint8Array([1]) });

/** The CollectionRepository contract; run it against every adapter. */
export function describeCollectionRepositoryContract(name: string, factory: CardsStoreFactory): void {
  describe(`CollectionRepository contract: ${name}`, () => {
    let store: CardsStoreFixture;
    beforeEach(async () => {
      store = await factory();
    });
    afterEach(async () => {
      await store.close();
    });

    async function storedCard(build = aCard()) {
      const card = build.build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      return card;
    }

    it('stores, updates and removes a collection (bookmarks go, cards stay)', async () => {
      const c = aCollection().private().build();
      await store.collections.insert(c, [event(Topics.collection)]);
      expect(await store.collections.findById(c.id)).toEqual(c);
      const next = { ...c, name: 'Renamed', description: '', isPublic: true, updatedAt: nextTime() };
      await store.collections.update(c.id, { name: next.name, description: next.description, isPublic: next.isPublic, updatedAt: next.updatedAt }, []);
      expect(await store.collections.findById(c.id)).toEqual(next);
      const card = await storedCard();
      await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      await store.collections.remove(c.id, [event(Topics.collection)]);
      expect(await store.collections.findById(c.id)).toBeNull();
      expect(await store.collections.collectionIdsHolding(card.id)).toEqual([]);
      expect(await store.cards.findById(card.id)).not.toBeNull();
      expect(await store.pendingEventTopics()).toEqual([Topics.collection, Topics.collection]);
    });

    it('a removal stopped between the collection and its bookmarks is finished at the next start: no card stays in the deleted collection', async () => {
      const owner = randomUUID();
      const [gone, kept] = [aCollection().by(owner).build(), aCollection().by(owner).build()];
      await store.collections.insert(gone, []);
      await store.collections.insert(kept, []);
      const [card, other] = [await storedCard(aCard().by(owner)), await storedCard(aCard().by(owner))];
      for (const c of [card, other]) await store.collections.addBookmark(gone.id, c.id, nextTime(), []);
      await store.collections.addBookmark(kept.id, card.id, nextTime(), []);
      store.refuseBookmarkDeletes!();
      // SQLite answers (it sweeps later); MongoDB without transactions fails here, its collection already gone.
      await store.collections.remove(gone.id, [event(Topics.collection)]).catch(() => undefined);
      expect(await store.collections.findById(gone.id)).toBeNull();
      const started = await store.reopen!();
      try {
        // Before, on MongoDB, the bookmarks stayed for good: the card was still held by the deleted collection (its
        // later events named it) and the collection's bookmarks were still listed under its id.
        for (let turns = 0; turns < 1000 && (await started.collections.bookmarkedCardIds(gone.id)).length > 0; turns++) await new Promise((resolve) => setImmediate(resolve));
        expect(await started.collections.bookmarkedCardIds(gone.id)).toEqual([]);
        expect(await started.collections.collectionIdsHolding(card.id)).toEqual([kept.id]);
        expect(await started.collections.collectionIdsHolding(other.id)).toEqual([]);
        expect(await started.collections.bookmarkedCardIds(kept.id)).toEqual([card.id]);
        expect(await started.collections.remove(gone.id, [])).toBe(false);
      } finally {
        await started.close();
      }
    });

    it('updates only the fields it is given, so updates of different fields made at once all stick', async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const [first, second, third] = [nextTime(), nextTime(), nextTime()];
      await Promise.all([
        store.collections.update(c.id, { name: 'Renamed', updatedAt: first }, []),
        store.collections.update(c.id, { isPublic: !c.isPublic, updatedAt: second }, []),
        store.collections.update(c.id, { description: 'New words', updatedAt: third }, []),
      ]);
      const stored = await store.collections.findById(c.id);
      expect(stored).toEqual({ ...c, name: 'Renamed', isPublic: !c.isPublic, description: 'New words', updatedAt: expect.any(Date) });
      await store.collections.update(c.id, { description: '', updatedAt: nextTime() }, []);
      expect((await store.collections.findById(c.id))!.description).toBe('');
    });

    it('with ifUpdatedAt, updates only the collection at that version (to the millisecond): else writes nothing, stores no event and answers false', async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const read = (await store.collections.findById(c.id))!.updatedAt;
      expect(read.getTime()).toBe(c.updatedAt.getTime());
      const renamed = nextTime();
      expect(await store.collections.update(c.id, { name: 'Renamed', updatedAt: renamed, ifUpdatedAt: read }, [event(Topics.collection)])).toBe(true);
      // The version read before that write, and one 1 ms either side of the stored one, are not it.
      for (const stale of [read, new Date(renamed.getTime() - 1), new Date(renamed.getTime() + 1)]) {
        expect(await store.collections.update(c.id, { description: 'Late words', isPublic: !c.isPublic, updatedAt: nextTime(), ifUpdatedAt: stale }, [event(Topics.collection)])).toBe(false);
      }
      expect(await store.collections.findById(c.id)).toEqual({ ...c, name: 'Renamed', updatedAt: renamed });
      expect(await store.pendingEventTopics()).toEqual([Topics.collection]);
      const described = nextTime();
      expect(await store.collections.update(c.id, { description: 'New words', updatedAt: described, ifUpdatedAt: new Date(renamed.getTime()) }, [])).toBe(true);
      expect(await store.collections.findById(c.id)).toEqual({ ...c, name: 'Renamed', description: 'New words', updatedAt: described });
      expect(await store.collections.update(randomUUID(), { name: 'Nobody', updatedAt: nextTime(), ifUpdatedAt: described }, [])).toBe(false);
    });

    it('without ifUpdatedAt, stores a version after the stored one even when the write is dated no later: two states never share one version (ETag)', async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const read = (await store.collections.findById(c.id))!.updatedAt;
      // A rename on the version read lands first, dated right after it; the privacy write read that same version
      // (from a clock behind it) and, written without it, is dated the same.
      const renamed = new Date(read.getTime() + 1);
      expect(await store.collections.update(c.id, { name: 'Renamed', updatedAt: renamed, ifUpdatedAt: read }, [])).toBe(true);
      expect(await store.collections.update(c.id, { isPublic: !c.isPublic, updatedAt: new Date(read.getTime() + 1) }, [])).toBe(true);
      const after = (await store.collections.findById(c.id))!;
      expect(after).toMatchObject({ name: 'Renamed', isPublic: !c.isPublic });
      expect(after.updatedAt.getTime()).toBe(renamed.getTime() + 1);
      // So the rename's version no longer matches: an If-Match naming it is refused.
      expect(await store.collections.update(c.id, { description: 'On the rename', updatedAt: nextTime(), ifUpdatedAt: renamed }, [])).toBe(false);
      // Dated later than the stored version, the write keeps its own date.
      const later = new Date(after.updatedAt.getTime() + 60_000);
      expect(await store.collections.update(c.id, { isPublic: c.isPublic, updatedAt: later }, [])).toBe(true);
      expect((await store.collections.findById(c.id))!.updatedAt.getTime()).toBe(later.getTime());
      expect(await store.collections.update(randomUUID(), { isPublic: true, updatedAt: nextTime() }, [])).toBe(false);
    });

    it('removes a collection once when two removals race: one answers true, the other false, with one set of events', async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const card = await storedCard();
      await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      const results = await Promise.all([store.collections.remove(c.id, [event(Topics.collection)]), store.collections.remove(c.id, [event(Topics.collection)])]);
      expect([...results].sort()).toEqual([false, true]);
      expect(await store.collections.findById(c.id)).toBeNull();
      expect(await store.collections.collectionIdsHolding(card.id)).toEqual([]);
      expect(await store.pendingEventTopics()).toEqual([Topics.collection]);
      expect(await store.collections.remove(c.id, [event(Topics.collection)])).toBe(false);
      expect(await store.pendingEventTopics()).toEqual([Topics.collection]);
    });

    it('refuses a second collection with the same author and idempotency key; keys are per author and apart from cards', async () => {
      const author = randomUUID();
      const first = aCollection().by(author).withIdempotencyKey('http:k1').build();
      await store.collections.insert(first, [event(Topics.collection)]);
      expect(await store.collections.findById(first.id)).toEqual(first);
      const second = aCollection().by(author).withIdempotencyKey('http:k1').build();
      await expect(store.collections.insert(second, [event(Topics.collection)])).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await store.collections.findById(second.id)).toBeNull();
      expect(await store.pendingEventTopics()).toEqual([Topics.collection]);
      expect(await store.collections.findByIdempotencyKey(author, 'http:k1')).toEqual(first);
      expect(await store.collections.findByIdempotencyKey(randomUUID(), 'http:k1')).toBeNull();
      // Another author's key, and the same author's card with the same key, are other intents.
      await store.collections.insert(aCollection().withIdempotencyKey('http:k1').build(), []);
      await storedCard(aCard().by(author).withIdempotencyKey('http:k1'));
      // Collections without a key never meet (the file collections, those stored before keys).
      await store.collections.insert(aCollection().by(author).build(), []);
      await store.collections.insert(aCollection().by(author).build(), []);
    });

    it('makes one collection of two inserts with one key at the same moment', async () => {
      const author = randomUUID();
      const both = [aCollection().by(author).withIdempotencyKey('http:same').build(), aCollection().by(author).withIdempotencyKey('http:same').build()];
      const results = await Promise.allSettled(both.map((c) => store.collections.insert(c, [event(Topics.collection)])));
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(AlreadyExistsError);
      expect(await store.collections.listByAuthor(author, true)).toHaveLength(1);
      expect(await store.pendingEventTopics()).toEqual([Topics.collection]);
    });

    it('keeps the idempotency key of a removed collection, for its author and kind only', async () => {
      const author = randomUUID();
      const keyed = aCollection().by(author).withIdempotencyKey('http:gone').build();
      await store.collections.insert(keyed, []);
      expect(await store.collections.findDeletedIdempotencyKey(author, 'http:gone')).toBeNull();
      const before = Date.now();
      expect(await store.collections.remove(keyed.id, [])).toBe(true);
      expect(await store.collections.findByIdempotencyKey(author, 'http:gone')).toBeNull();
      const kept = await store.collections.findDeletedIdempotencyKey(author, 'http:gone');
      expect(kept).toEqual({ requestFingerprint: null, deletedAt: expect.any(Date) });
      expect(kept!.deletedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(await store.collections.findDeletedIdempotencyKey(randomUUID(), 'http:gone')).toBeNull();
      // A removed card's key is no collection's.
      const card = await storedCard(aCard().by(author).withIdempotencyKey('http:card-gone'));
      await store.cards.remove(card.id, [], []);
      expect(await store.collections.findDeletedIdempotencyKey(author, 'http:card-gone')).toBeNull();
      // The fingerprint of the request that carried the key is stored with the collection and kept with its key.
      const printed = aCollection().by(author).withIdempotencyKey('http:printed', 'fp-1').build();
      await store.collections.insert(printed, []);
      expect(await store.collections.findByIdempotencyKey(author, 'http:printed')).toEqual(printed);
      await store.collections.remove(printed.id, []);
      expect((await store.collections.findDeletedIdempotencyKey(author, 'http:printed'))?.requestFingerprint).toBe('fp-1');
    });

    it("forgets a removed collection's key once IDEMPOTENCY_KEY_TTL_HOURS have passed, and a later removal takes it out", async () => {
      const hour = 3_600_000;
      const start = Date.parse('2026-03-01T00:00:00.000Z');
      let now = start;
      const clocked = await factory({ keyExpiry: keptKeyExpiry(2, () => new Date(now)) });
      try {
        const author = randomUUID();
        const removeKeyed = async (key: string) => {
          const keyed = aCollection().by(author).withIdempotencyKey(key, 'fp-1').build();
          await clocked.collections.insert(keyed, []);
          await clocked.collections.remove(keyed.id, []);
        };
        await removeKeyed('http:gone');
        now = start + 2 * hour - 1;
        expect(await clocked.collections.findDeletedIdempotencyKey(author, 'http:gone')).toEqual({ requestFingerprint: 'fp-1', deletedAt: new Date(start) });
        now = start + 2 * hour;
        expect(await clocked.collections.findDeletedIdempotencyKey(author, 'http:gone')).toBeNull();
        await removeKeyed('http:later');
        now = start;
        expect(await clocked.collections.findDeletedIdempotencyKey(author, 'http:gone')).toBeNull();
        expect(await clocked.collections.findDeletedIdempotencyKey(author, 'http:later')).not.toBeNull();
      } finally {
        await clocked.close();
      }
    });

    it('adds a bookmark once (events only when something changed) and removes it', async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const card = await storedCard();
      expect(await store.collections.addBookmark(c.id, card.id, nextTime(), [event(Topics.bookmark)])).toBe('added');
      expect(await store.collections.addBookmark(c.id, card.id, nextTime(), [event(Topics.bookmark)])).toBe('already-there');
      expect(await store.pendingEventTopics()).toEqual([Topics.bookmark]);
      expect(await store.collections.removeEntry(c.id, card.id, () => [event(Topics.bookmark)])).toEqual([card.id]);
      expect(await store.collections.removeEntry(c.id, card.id, () => [event(Topics.bookmark)])).toEqual([]);
      expect(await store.pendingEventTopics()).toEqual([Topics.bookmark, Topics.bookmark]);
    });

    it("removes a root's entry (its bookmark and its collisions', hidden ones too) and a collision's own bookmark, each with its events", async () => {
      const [c, other] = [aCollection().build(), aCollection().build()];
      for (const collection of [c, other]) await store.collections.insert(collection, []);
      const root = await storedCard();
      const copy = await storedCard(aCard().collisionOf(root.id));
      const hiddenCopy = await storedCard(aCard().private().collisionOf(root.id));
      const unrelated = await storedCard();
      const addedAt = new Map<string, Date>();
      for (const card of [copy, unrelated, hiddenCopy, root]) {
        addedAt.set(`${c.id} ${card.id}`, nextTime());
        await store.collections.addBookmark(c.id, card.id, addedAt.get(`${c.id} ${card.id}`)!, []);
      }
      addedAt.set(`${other.id} ${copy.id}`, nextTime());
      await store.collections.addBookmark(other.id, copy.id, addedAt.get(`${other.id} ${copy.id}`)!, []);
      const removals: string[] = [];
      // Each removal is told when its bookmark was added, as stored (so its event can be dated after the addition).
      const told: [string, Date][] = [];
      const expected: [string, Date][] = [];
      const eventsOf = (collectionId: string) => (cardId: string, added: Date) => {
        removals.push(cardId);
        told.push([cardId, added]);
        expected.push([cardId, addedAt.get(`${collectionId} ${cardId}`)!]);
        return [event(Topics.bookmark)];
      };

      expect(await store.collections.removeEntry(c.id, copy.id, eventsOf(c.id))).toEqual([copy.id]);
      expect(await store.collections.removeEntry(c.id, root.id, eventsOf(c.id))).toEqual([hiddenCopy.id, root.id]);
      expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([unrelated.id]);
      expect(await store.collections.removeEntry(c.id, root.id, eventsOf(c.id))).toEqual([]);
      expect(await store.collections.removeEntry(other.id, root.id, eventsOf(other.id))).toEqual([copy.id]);
      expect(removals).toEqual([copy.id, hiddenCopy.id, root.id, copy.id]);
      expect(told).toEqual(expected);
      expect(await store.pendingEventTopics()).toEqual(removals.map(() => Topics.bookmark));
    });

    it("removes each bookmark of an entry once, with its events once, when removals of the entry race", async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const root = await storedCard();
      const copies = await Promise.all(Array.from({ length: 6 }, () => storedCard(aCard().collisionOf(root.id))));
      for (const card of [root, ...copies]) await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      const results = await Promise.all([
        store.collections.removeEntry(c.id, root.id, () => [event(Topics.bookmark)]),
        store.collections.removeEntry(c.id, copies[3]!.id, () => [event(Topics.bookmark)]),
        store.collections.removeEntry(c.id, root.id, () => [event(Topics.bookmark)]),
      ]);
      expect(results.flat().sort()).toEqual([root, ...copies].map((card) => card.id).sort());
      expect(await store.pendingEventTopics()).toHaveLength(copies.length + 1);
      expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([]);
    });

    it('stores no bookmark of a card, or in a collection, removed after the caller checked them (and no events)', async () => {
      const c = aCollection().build();
      await store.collections.insert(c, []);
      const gone = await storedCard();
      await store.cards.remove(gone.id, [], []);
      expect(await store.collections.addBookmark(c.id, gone.id, nextTime(), [event(Topics.bookmark)])).toBe('card-gone');
      const removed = aCollection().build();
      await store.collections.insert(removed, []);
      const card = await storedCard();
      await store.collections.remove(removed.id, []);
      expect(await store.collections.addBookmark(removed.id, card.id, nextTime(), [event(Topics.bookmark)])).toBe('collection-gone');
      // Both gone: every adapter names the collection.
      expect(await store.collections.addBookmark(removed.id, gone.id, nextTime(), [event(Topics.bookmark)])).toBe('collection-gone');
      expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([]);
      expect(await store.collections.bookmarkedCardIds(removed.id)).toEqual([]);
      expect(await store.collections.collectionIdsHolding(gone.id)).toEqual([]);
      expect(await store.collections.collectionIdsHolding(card.id)).toEqual([]);
      expect(await store.pendingEventTopics()).toEqual([]);
    });

    it("with visibleToOwner, stores no bookmark of someone else's card made private after the caller checked it (and no events); the owner's own private card is bookmarked", async () => {
      const owner = randomUUID();
      const c = aCollection().by(owner).build();
      await store.collections.insert(c, []);
      const others = await storedCard(aCard().private());
      const own = await storedCard(aCard().by(owner).private());
      const visible = { visibleToOwner: true, takenBackEvents: [event(Topics.bookmark)] };
      expect(await store.collections.addBookmark(c.id, others.id, nextTime(), [event(Topics.bookmark)], visible)).toBe('card-gone');
      expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([]);
      expect(await store.pendingEventTopics()).toEqual([]);
      expect(await store.collections.addBookmark(c.id, own.id, nextTime(), [event(Topics.bookmark)], visible)).toBe('added');
      expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([own.id]);
    });

    it('with visibleToOwner, adds racing their cards made private: each added before the change (then hidden by it) or refused and stored nowhere', async () => {
      const owner = randomUUID();
      const c = aCollection().by(owner).build();
      await store.collections.insert(c, []);
      const cards = await Promise.all(Array.from({ length: 30 }, () => storedCard()));
      const after = async <T>(reads: number, work: () => Promise<T>) => {
        for (let i = 0; i < reads; i++) await store.collections.findById(c.id);
        return work();
      };
      const visible = { visibleToOwner: true, takenBackEvents: [event(Topics.bookmark)] };
      const answers = await Promise.all(
        cards.map((card, i) => {
          const add = store.collections.addBookmark(c.id, card.id, nextTime(), [event(Topics.bookmark)], visible);
          return Promise.all([add, after(i % 6, () => store.cards.update({ ...card, private: true, updatedAt: nextTime() }, null, []))]).then(([a]) => a);
        }),
      );
      const held = new Set(await store.collections.bookmarkedCardIds(c.id));
      expect(cards.map((card, i) => ({ i, answer: answers[i], held: held.has(card.id) }))).toEqual(cards.map((_, i) => ({ i, answer: answers[i], held: answers[i] === 'added' })));
      for (const a of answers) expect(['added', 'card-gone']).toContain(a);
    });

    it('leaves no bookmark behind when adds race the removal of their cards and of their collections', async () => {
      const kept = aCollection().build();
      await store.collections.insert(kept, []);
      const doomedCards = await Promise.all(Array.from({ length: 30 }, () => storedCard()));
      const keptCard = await storedCard();
      const doomedCollections = Array.from({ length: 30 }, () => aCollection().build());
      for (const c of doomedCollections) await store.collections.insert(c, []);
      // Each removal starts a few store reads after its add, so across the pairs it lands between every two steps of the add.
      const after = async <T>(reads: number, work: () => Promise<T>) => {
        for (let i = 0; i < reads; i++) await store.collections.findById(kept.id);
        return work();
      };
      await Promise.all([
        ...doomedCards.flatMap((card, i) => [store.collections.addBookmark(kept.id, card.id, nextTime(), []), after(i % 6, () => store.cards.remove(card.id, [], []))]),
        ...doomedCollections.flatMap((c, i) => [store.collections.addBookmark(c.id, keptCard.id, nextTime(), []), after(i % 6, () => store.collections.remove(c.id, []))]),
      ]);
      expect(await store.collections.bookmarkedCardIds(kept.id)).toEqual([]);
      for (const card of doomedCards) expect(await store.collections.collectionIdsHolding(card.id)).toEqual([]);
      expect(await store.collections.collectionIdsHolding(keptCard.id)).toEqual([]);
      for (const c of doomedCollections) expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([]);
    });

    it("pages the collections made for a file, every one once, and no other", async () => {
      const made: Collection[] = [];
      for (let i = 0; i < 5; i++) {
        const c = aCollection().forFile(randomUUID()).build();
        await store.collections.insert(c, []);
        made.push(c);
      }
      await store.collections.insert(aCollection().build(), []);
      const seen: Collection[] = [];
      let after: string | undefined;
      do {
        const page = await store.collections.pageFileCollections(2, after);
        expect(page.items.length).toBeLessThanOrEqual(2);
        seen.push(...page.items);
        after = page.next;
      } while (after !== undefined);
      expect(seen.map((c) => c.id)).toEqual(made.map((c) => c.id).sort());
      expect(seen.find((c) => c.id === made[0]!.id)).toEqual(made[0]);
    });

    it('pages the bookmarked cards a viewer may see by root, in bookmark order: a bookmarked collision stands for its root, once', async () => {
      const owner = randomUUID();
      const c = aCollection().by(owner).build();
      await store.collections.insert(c, []);
      const mine = await storedCard(aCard().by(owner).private());
      const others = [await storedCard(), await storedCard(), await storedCard(aCard().private())];
      for (const card of [others[0]!, mine, others[1]!, others[2]!]) await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      expect(await store.collections.listVisibleBookmarkedRoots(c.id, null, 0, 10)).toEqual([others[0]!.id, others[1]!.id]);
      expect(await store.collections.listVisibleBookmarkedRoots(c.id, owner, 0, 10)).toEqual([others[0]!.id, mine.id, others[1]!.id]);
      expect(await store.collections.listVisibleBookmarkedRoots(c.id, owner, 1, 1)).toEqual([mine.id]);
      expect(await store.collections.countVisibleBookmarkedRoots(c.id, owner)).toBe(3);
      expect(await store.collections.countVisibleBookmarkedRoots(c.id, null)).toBe(2);
      expect(await store.collections.bookmarkedCardIds(c.id)).toEqual([others[0]!.id, mine.id, others[1]!.id, others[2]!.id]);

      const root = await storedCard();
      const copy = await storedCard(aCard().collisionOf(root.id));
      const ownersCopy = await storedCard(aCard().by(owner).private().collisionOf(others[1]!.id));
      const hiddenCopy = await storedCard(aCard().private().collisionOf(others[0]!.id));
      for (const card of [hiddenCopy, copy, ownersCopy, root]) await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      expect(await store.collections.listVisibleBookmarkedRoots(c.id, null, 0, 10)).toEqual([others[0]!.id, others[1]!.id, root.id]);
      expect(await store.collections.listVisibleBookmarkedRoots(c.id, owner, 0, 10)).toEqual([others[0]!.id, mine.id, others[1]!.id, root.id]);
      expect(await store.collections.listVisibleBookmarkedRoots(c.id, owner, 3, 1)).toEqual([root.id]);
      expect(await store.collections.countVisibleBookmarkedRoots(c.id, null)).toBe(3);
      expect(await store.collections.countVisibleBookmarkedRoots(c.id, owner)).toBe(4);

      const onlyCopy = aCollection().by(owner).build();
      await store.collections.insert(onlyCopy, []);
      for (const card of [ownersCopy, hiddenCopy]) await store.collections.addBookmark(onlyCopy.id, card.id, nextTime(), []);
      expect(await store.collections.listVisibleBookmarkedRoots(onlyCopy.id, owner, 0, 10)).toEqual([others[1]!.id]);
      expect(await store.collections.listVisibleBookmarkedRoots(onlyCopy.id, null, 0, 10)).toEqual([]);
      expect(await store.collections.countVisibleBookmarkedRoots(onlyCopy.id, null)).toBe(0);
    });

    it('pages many bookmarks by root with groups spread over pages, and counts stay right through every change of a bookmarked card', async () => {
      const owner = randomUUID();
      const c = aCollection().by(owner).build();
      await store.collections.insert(c, []);
      const roots: Card[] = [];
      const marked: Card[] = [];
      for (let i = 0; i < 60; i++) {
        const root = await storedCard(i % 7 === 3 ? aCard().private() : i % 5 === 1 ? aCard().by(owner).private() : aCard());
        roots.push(root);
        marked.push(root);
        // A collision bookmarked before its root, and one after it, some pages apart.
        if (i % 4 === 0) marked.splice(Math.max(0, marked.length - 9), 0, await storedCard(aCard().collisionOf(root.id)));
        if (i % 6 === 0) marked.push(await storedCard(aCard().by(owner).private().collisionOf(root.id)));
      }
      for (const card of marked) await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      /** The roots in the order of their group's first bookmark the viewer may see, as the contract defines them. */
      const expected = (viewer: string | null, cards: Card[]) => [...new Set(cards.filter((k) => !k.private || k.authorId === viewer).map((k) => k.collisionOf ?? k.id))];
      const allPages = async (viewer: string | null, size: number) => {
        const seen: string[] = [];
        for (let offset = 0; ; offset += size) {
          const page = await store.collections.listVisibleBookmarkedRoots(c.id, viewer, offset, size);
          seen.push(...page);
          if (page.length < size) return seen;
        }
      };
      const check = async (cards: Card[]) => {
        for (const viewer of [null, owner, randomUUID()]) {
          const want = expected(viewer, cards);
          expect(await allPages(viewer, 7)).toEqual(want);
          expect(await store.collections.listVisibleBookmarkedRoots(c.id, viewer, want.length, 5)).toEqual([]);
          expect(await store.collections.countVisibleBookmarkedRoots(c.id, viewer)).toBe(want.length);
          // Asked again, as a page's count is, with nothing changed.
          expect(await store.collections.countVisibleBookmarkedRoots(c.id, viewer)).toBe(want.length);
        }
      };
      await check(marked);

      // A bookmarked root made private by its author, one made public.
      const hidden = { ...roots[2]!, private: true, updatedAt: nextTime() };
      await store.cards.update(hidden, null, []);
      const shown = { ...roots[3]!, private: false, updatedAt: nextTime() };
      await store.cards.update(shown, null, []);
      let now = marked.map((k) => (k.id === hidden.id ? hidden : k.id === shown.id ? shown : k));
      await check(now);

      // A collision leaves its root (a root of its own), one joins another root.
      const leaving = marked.find((k) => k.collisionOf !== null && !k.private)!;
      expect(await store.cards.detachCollision(leaving.id, leaving.collisionOf!, [])).toBe(true);
      now = now.map((k) => (k.id === leaving.id ? { ...k, collisionOf: null } : k));
      const joining = roots[11]!;
      const stored = (await store.cards.findById(joining.id))!;
      expect(await store.cards.joinRoot(joining.id, roots[50]!.id, stored.updatedAt, nextTime(), () => [])).toBe(true);
      now = now.map((k) => (k.id === joining.id ? { ...k, collisionOf: roots[50]!.id } : k));
      await check(now);

      // A bookmarked card deleted, an entry removed, a bookmark added.
      expect(await store.cards.remove(roots[21]!.id, [], [])).toBe(true);
      now = now.filter((k) => k.id !== roots[21]!.id);
      await store.collections.removeEntry(c.id, roots[0]!.id, () => []);
      now = now.filter((k) => k.id !== roots[0]!.id && k.collisionOf !== roots[0]!.id);
      const late = await storedCard();
      await store.collections.addBookmark(c.id, late.id, nextTime(), []);
      now.push(late);
      await check(now);
    });

    it('keeps pages and counts right across many blocks of bookmarks, read before and after each change, for every viewer', async () => {
      const owner = randomUUID();
      const stranger = randomUUID();
      const c = aCollection().by(owner).build();
      await store.collections.insert(c, []);
      const roots: Card[] = [];
      const marked: Card[] = [];
      for (let i = 0; i < 200; i++) {
        const root = await storedCard(i % 9 === 4 ? aCard().private() : i % 6 === 1 ? aCard().by(owner).private() : aCard());
        roots.push(root);
        marked.push(root);
        // Collisions bookmarked a block or more before their root, and after it.
        if (i % 5 === 0) marked.splice(Math.max(0, marked.length - 70), 0, await storedCard(i % 10 === 0 ? aCard().collisionOf(root.id) : aCard().by(owner).private().collisionOf(root.id)));
        if (i % 8 === 0) marked.push(await storedCard(aCard().collisionOf(root.id)));
      }
      for (const card of marked) await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      const expected = (viewer: string | null, cards: Card[]) => [...new Set(cards.filter((k) => !k.private || k.authorId === viewer).map((k) => k.collisionOf ?? k.id))];
      let now = marked;
      const check = async () => {
        for (const viewer of [null, owner, stranger]) {
          const want = expected(viewer, now);
          expect(await store.collections.countVisibleBookmarkedRoots(c.id, viewer)).toBe(want.length);
          const seen: string[] = [];
          for (let offset = 0; offset < want.length + 25; offset += 25) seen.push(...(await store.collections.listVisibleBookmarkedRoots(c.id, viewer, offset, 25)));
          expect(seen).toEqual(want);
          for (const offset of [49, 50, 51, 99, 100, want.length - 1]) expect(await store.collections.listVisibleBookmarkedRoots(c.id, viewer, offset, 3)).toEqual(want.slice(offset, offset + 3));
        }
      };
      const swap = (card: Card) => (now = now.map((k) => (k.id === card.id ? card : k)));
      await check();

      // A root whose collision comes a block earlier made private, and back: its group's first bookmark moves.
      const spread = roots[150]!;
      const hide = { ...spread, private: true, updatedAt: nextTime() };
      await store.cards.update(hide, null, []);
      swap(hide);
      await check();
      const show = { ...hide, private: false, updatedAt: nextTime() };
      await store.cards.update(show, null, []);
      swap(show);
      await check();
      // A collision's own bookmark removed (its group stays by its root), then its root's entry with every collision.
      const collision = now.find((k) => k.collisionOf === roots[100]!.id)!;
      await store.collections.removeEntry(c.id, collision.id, () => []);
      now = now.filter((k) => k.id !== collision.id);
      await check();
      await store.collections.removeEntry(c.id, roots[40]!.id, () => []);
      now = now.filter((k) => k.id !== roots[40]!.id && k.collisionOf !== roots[40]!.id);
      await check();
      // A root deleted, one of its collisions promoted to its place, the other moved under it.
      const [first, second] = now.filter((k) => k.collisionOf === roots[120]!.id);
      expect(second).toBeDefined();
      expect(await store.cards.remove(roots[120]!.id, [{ cardId: first!.id, collisionOf: null }, { cardId: second!.id, collisionOf: first!.id }], [])).toBe(true);
      now = now.filter((k) => k.id !== roots[120]!.id).map((k) => (k.id === first!.id ? { ...k, collisionOf: null } : k.id === second!.id ? { ...k, collisionOf: first!.id } : k));
      await check();
      // A root joining another root far away in the order; a bookmark added at the end, one of a collision of an early root.
      const stored = (await store.cards.findById(roots[10]!.id))!;
      expect(await store.cards.joinRoot(roots[10]!.id, roots[190]!.id, stored.updatedAt, nextTime(), () => [])).toBe(true);
      now = now.map((k) => (k.id === roots[10]!.id || k.collisionOf === roots[10]!.id ? { ...k, collisionOf: roots[190]!.id } : k));
      await check();
      const late = await storedCard(aCard().collisionOf(roots[3]!.id));
      await store.collections.addBookmark(c.id, late.id, nextTime(), []);
      now.push(late);
      await check();
    });

    /** Every page of an author's collections from the newest on, following `next` until there is none. */
    async function allPages(authorId: string, includePrivate: boolean, limit: number) {
      const pages: Collection[][] = [];
      let after: string | undefined;
      do {
        const page = await store.collections.listPageByAuthor(authorId, includePrivate, limit, after);
        pages.push(page.items);
        after = page.next;
      } while (after !== undefined);
      return pages;
    }

    it("lists an author's collections in pages of the given size, in listByAuthor's order, each once, private ones only on request", async () => {
      const owner = randomUUID();
      const made = Array.from({ length: 5 }, (_, i) => (i % 2 ? aCollection().by(owner).private() : aCollection().by(owner)).build());
      // Equal creation times list by id, across a page boundary too.
      const sameMoment = nextTime();
      for (let i = 0; i < 3; i++) made.push({ ...aCollection().by(owner).build(), createdAt: sameMoment, updatedAt: sameMoment });
      for (const c of [...made, aCollection().build()]) await store.collections.insert(c, []);

      const all = await store.collections.listByAuthor(owner, true);
      expect(all.map((c) => c.id)).toEqual([...made.slice(5).sort((a, b) => (a.id < b.id ? -1 : 1)), ...made.slice(0, 5).reverse()].map((c) => c.id));
      const pages = await allPages(owner, true, 3);
      expect(pages.map((p) => p.length)).toEqual([3, 3, 2]);
      expect(pages.flat()).toEqual(all);
      const publicPages = await allPages(owner, false, 2);
      expect(publicPages.flat()).toEqual(await store.collections.listByAuthor(owner, false));
      expect(publicPages.flat().every((c) => c.isPublic)).toBe(true);
      expect((await allPages(owner, true, 8)).map((p) => p.length)).toEqual([8]);
      expect(await store.collections.listPageByAuthor(randomUUID(), true, 5)).toEqual({ items: [] });
    });

    it('keeps its place while collections are created, changed and deleted between pages, and applies privacy on every page', async () => {
      const owner = randomUUID();
      const made = Array.from({ length: 6 }, () => aCollection().by(owner).build());
      for (const c of made) await store.collections.insert(c, []);
      const newestFirst = [...made].reverse();

      const first = await store.collections.listPageByAuthor(owner, false, 2);
      await store.collections.insert(aCollection().by(owner).build(), []);
      const renamedAt = nextTime();
      await store.collections.update(newestFirst[2]!.id, { name: 'Renamed', updatedAt: renamedAt }, []);
      await store.collections.update(newestFirst[3]!.id, { isPublic: false, updatedAt: renamedAt }, []);
      await store.collections.remove(newestFirst[4]!.id, []);
      const rest = await store.collections.listPageByAuthor(owner, false, 10, first.next);

      expect(first.items.map((c) => c.id)).toEqual(newestFirst.slice(0, 2).map((c) => c.id));
      expect(rest.items.map((c) => c.id)).toEqual([newestFirst[2]!.id, newestFirst[5]!.id]);
      expect(rest.items[0]).toMatchObject({ name: 'Renamed', updatedAt: renamedAt });
      expect(rest.next).toBeUndefined();
    });

    it('refuses a page cursor it did not give, naming page_token', async () => {
      const owner = randomUUID();
      await store.collections.insert(aCollection().by(owner).build(), []);
      for (const cursor of ['', 'garbage', '2026-01-01T00:00:00.000Z', `1_${randomUUID().toUpperCase()}`, `${'9'.repeat(16)}_${randomUUID()}`]) {
        await expect(store.collections.listPageByAuthor(owner, true, 5, cursor)).rejects.toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('page_token') }));
      }
    });

    it("lists an author's collections (private only on request) and finds the owner's collections holding cards", async () => {
      const owner = randomUUID();
      const pub = aCollection().by(owner).build();
      const priv = aCollection().by(owner).private().build();
      const foreign = aCollection().build();
      for (const c of [pub, priv, foreign]) await store.collections.insert(c, []);
      expect((await store.collections.listByAuthor(owner, true)).map((c) => c.id)).toEqual([priv.id, pub.id]);
      expect((await store.collections.listByAuthor(owner, false)).map((c) => c.id)).toEqual([pub.id]);
      const card = await storedCard();
      const lonely = await storedCard();
      for (const c of [pub, priv, foreign]) await store.collections.addBookmark(c.id, card.id, nextTime(), []);
      const held = await store.collections.collectionsOfOwnerHolding(owner, [card.id, lonely.id]);
      expect(held).toEqual([pub, priv].map((c) => ({ cardId: card.id, collectionId: c.id })));
      expect((await store.collections.collectionIdsHolding(card.id)).sort()).toEqual([pub.id, priv.id, foreign.id].sort());
    });

    it("lists the owner's bookmarks of several cards oldest collection first (equal creation times by id), others' left out", async () => {
      const owner = randomUUID();
      const [oldest, middle] = [aCollection().by(owner).build(), aCollection().by(owner).private().build()];
      const sameTime = nextTime();
      const tied: Collection[] = [randomUUID(), randomUUID()].sort().map((id) => ({ ...aCollection().by(owner).build(), id, createdAt: sameTime, updatedAt: sameTime }));
      const foreign = aCollection().build();
      // Inserted newest first, so no order of insertion can pass for the order asked.
      for (const c of [...tied].reverse().concat(middle, oldest, foreign)) await store.collections.insert(c, []);
      const [a, b, unheld] = [await storedCard(), await storedCard(), await storedCard()];
      for (const [collection, card] of [[tied[1]!, a], [foreign, a], [middle, b], [oldest, a], [tied[0]!, b], [foreign, unheld]] as const) {
        await store.collections.addBookmark(collection.id, card.id, nextTime(), []);
      }
      expect(await store.collections.collectionsOfOwnerHolding(owner, [b.id, unheld.id, a.id, a.id])).toEqual([
        { cardId: a.id, collectionId: oldest.id },
        { cardId: b.id, collectionId: middle.id },
        { cardId: b.id, collectionId: tied[0]!.id },
        { cardId: a.id, collectionId: tied[1]!.id },
      ]);
      expect(await store.collections.collectionsOfOwnerHolding(owner, [unheld.id, randomUUID()])).toEqual([]);
      expect(await store.collections.collectionsOfOwnerHolding(owner, [])).toEqual([]);
    });

    it("finds the owner's bookmarks of a card group among many users' bookmarks of it, whichever way each was added", async () => {
      const owner = randomUUID();
      const root = await storedCard();
      const copy = await storedCard(aCard().collisionOf(root.id));
      const own = aCollection().by(owner).build();
      await store.collections.insert(own, []);
      for (let i = 0; i < 5; i++) {
        const others = aCollection().build();
        await store.collections.insert(others, []);
        for (const card of [root, copy]) await store.collections.addBookmark(others.id, card.id, nextTime(), []);
      }
      await store.collections.addBookmark(own.id, copy.id, nextTime(), []);
      // Bookmarked when the owner's file collection was created, and a stranger's file collection of the same cards.
      const { collection: fromFile } = await store.collections.insertFileCollection(aCollection().by(owner).forFile(randomUUID()).build(), [root.id, copy.id], () => []);
      await store.collections.insertFileCollection(aCollection().forFile(randomUUID()).build(), [root.id, copy.id], () => []);
      const held = await store.collections.collectionsOfOwnerHolding(owner, [root.id, copy.id]);
      // Oldest collection first; the order of cards within one collection is not promised.
      expect(held[0]).toEqual({ cardId: copy.id, collectionId: own.id });
      const byCard = (a: { cardId: string }, b: { cardId: string }) => (a.cardId < b.cardId ? -1 : 1);
      expect(held.slice(1).sort(byCard)).toEqual([root, copy].map((c) => ({ cardId: c.id, collectionId: fromFile.id })).sort(byCard));
      await store.collections.removeEntry(fromFile.id, root.id, () => []);
      expect(await store.collections.collectionsOfOwnerHolding(owner, [root.id, copy.id])).toEqual([{ cardId: copy.id, collectionId: own.id }]);
      expect(await store.collections.collectionsOfOwnerHolding(randomUUID(), [root.id, copy.id])).toEqual([]);
    });

    it('creates a file collection with its bookmarks once per file', async () => {
      const fileId = randomUUID();
      const cards = [await storedCard(), await storedCard()];
      const first = await store.collections.insertFileCollection(aCollection().forFile(fileId).build(), [cards[0]!.id, randomUUID(), cards[1]!.id], () => [event(Topics.collection)]);
      expect(first.created).toBe(true);
      expect(await store.collections.bookmarkedCardIds(first.collection.id)).toEqual([cards[0]!.id, cards[1]!.id]);
      const again = await store.collections.insertFileCollection(aCollection().forFile(fileId).build(), [cards[0]!.id], () => [event(Topics.collection)]);
      expect(again).toEqual({ collection: first.collection, created: false });
      expect(await store.pendingEventTopics()).toEqual([Topics.collection]);
    });

    it("finds a file's collection by the file id, and none for a file without one", async () => {
      const fileId = randomUUID();
      await store.collections.insert(aCollection().build(), []);
      const { collection } = await store.collections.insertFileCollection(aCollection().forFile(fileId).build(), [], () => []);
      await store.collections.insertFileCollection(aCollection().forFile(randomUUID()).build(), [], () => []);
      expect(await store.collections.findByFileId(fileId)).toEqual(collection);
      expect(await store.collections.findByFileId(randomUUID())).toBeNull();
    });
  });
}
