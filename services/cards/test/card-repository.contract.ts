import { randomUUID } from 'node:crypto';
import { AlreadyExistsError, EventTooLargeError, EXPIRED_KEYS_PER_SWEEP, keptKeyExpiry, MAX_EVENT_BYTES, Topics } from '@cards/platform';
import { StaleCardError } from '../src/domain/ports';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection, nextTime, someContent } from './builders';
import type { CardsStoreFactory, CardsStoreFixture } from './fixture';

const event = (topic: string = Topics.card) => ({ topic, key: 'k', payload: new Uint8Array([1]) });

/** The CardRepository contract; run it against every adapter. */
export function describeCardRepositoryContract(name: string, factory: CardsStoreFactory): void {
  describe(`CardRepository contract: ${name}`, () => {
    let store: CardsStoreFixture;
    beforeEach(async () => {
      store = await factory();
    });
    afterEach(async () => {
      await store.close();
    });

    it('stores a card with its event and reads it back unchanged', async () => {
      const card = aCard().private().fromFile(randomUUID(), 'a.docx').build();
      await store.cards.insert(card, fingerprintOf(card.content), [event()]);
      expect(await store.cards.findById(card.id)).toEqual(card);
      expect(await store.cards.findById(randomUUID())).toBeNull();
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
      expect((await store.cards.findByIds([card.id, randomUUID(), card.id])).map((c) => c.id)).toEqual([card.id]);
    });

    it('refuses a second card with the same author and idempotency key', async () => {
      const author = randomUUID();
      const first = aCard().by(author).withIdempotencyKey('doc-1#3').build();
      await store.cards.insert(first, fingerprintOf(first.content), [event()]);
      const second = aCard().by(author).withIdempotencyKey('doc-1#3').build();
      await expect(store.cards.insert(second, fingerprintOf(second.content), [event()])).rejects.toBeInstanceOf(AlreadyExistsError);
      expect(await store.cards.findById(second.id)).toBeNull();
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
      expect((await store.cards.findByIdempotencyKey(author, 'doc-1#3'))?.id).toBe(first.id);
      const otherAuthor = aCard().withIdempotencyKey('doc-1#3').build();
      await store.cards.insert(otherAuthor, fingerprintOf(otherAuthor.content), []);
    });

    it("stores a key's request fingerprint with the card, and keeps both when the card is removed", async () => {
      const author = randomUUID();
      const card = aCard().by(author).withIdempotencyKey('http:k', 'fp-1').build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      expect(await store.cards.findByIdempotencyKey(author, 'http:k')).toEqual(card);
      expect(await store.cards.findDeletedIdempotencyKey(author, 'http:k')).toBeNull();
      const before = Date.now();
      expect(await store.cards.remove(card.id, [], [])).toBe(true);
      const kept = await store.cards.findDeletedIdempotencyKey(author, 'http:k');
      expect(kept).toEqual({ requestFingerprint: 'fp-1', deletedAt: expect.any(Date) });
      expect(kept!.deletedAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
      expect(await store.cards.findDeletedIdempotencyKey(randomUUID(), 'http:k')).toBeNull();
      expect(await store.collections.findDeletedIdempotencyKey(author, 'http:k')).toBeNull();
      // A key without a fingerprint (ingestion's) is kept too; a card without a key leaves nothing.
      const ingested = aCard().by(author).withIdempotencyKey('file:0').build();
      await store.cards.insert(ingested, fingerprintOf(ingested.content), []);
      await store.cards.remove(ingested.id, [], []);
      expect((await store.cards.findDeletedIdempotencyKey(author, 'file:0'))?.requestFingerprint).toBeNull();
      // Made again with the same key after its removal (a retried ingestion), then removed again.
      const again = aCard().by(author).withIdempotencyKey('file:0').build();
      await store.cards.insert(again, fingerprintOf(again.content), []);
      expect(await store.cards.remove(again.id, [], [])).toBe(true);
      expect(await store.cards.findDeletedIdempotencyKey(author, 'file:0')).not.toBeNull();
    });

    it("forgets a removed card's key once IDEMPOTENCY_KEY_TTL_HOURS have passed; a later removal takes the expired key out, a live card's key lasts", async () => {
      const hour = 3_600_000;
      const start = Date.parse('2026-03-01T00:00:00.000Z');
      let now = start;
      const clocked = await factory({ keyExpiry: keptKeyExpiry(24, () => new Date(now)) });
      try {
        const author = randomUUID();
        const keyed = async (key: string) => {
          const card = aCard().by(author).withIdempotencyKey(key, `fp-${key}`).build();
          await clocked.cards.insert(card, fingerprintOf(card.content), []);
          return card;
        };
        const gone = await keyed('http:gone');
        const live = await keyed('http:live');
        expect(await clocked.cards.remove(gone.id, [], [])).toBe(true);
        now = start + 24 * hour - 1;
        expect(await clocked.cards.findDeletedIdempotencyKey(author, 'http:gone')).toEqual({ requestFingerprint: 'fp-http:gone', deletedAt: new Date(start) });
        now = start + 24 * hour;
        expect(await clocked.cards.findDeletedIdempotencyKey(author, 'http:gone')).toBeNull();
        // A key kept later (a collection's) outlasts the removal below, which takes out the expired one.
        now = start + 23 * hour;
        const collection = aCollection().by(author).withIdempotencyKey('http:gone').build();
        await clocked.collections.insert(collection, []);
        await clocked.collections.remove(collection.id, []);
        now = start + 24 * hour;
        await clocked.cards.remove((await keyed('http:later')).id, [], []);
        now = start + hour;
        expect(await clocked.cards.findDeletedIdempotencyKey(author, 'http:gone')).toBeNull();
        expect(await clocked.collections.findDeletedIdempotencyKey(author, 'http:gone')).not.toBeNull();
        expect(await clocked.cards.findDeletedIdempotencyKey(author, 'http:later')).not.toBeNull();
        // The expired key is free: a card made with it is found by it, and its removal keeps it again.
        now = start + 48 * hour;
        const again = await keyed('http:gone');
        expect((await clocked.cards.findByIdempotencyKey(author, 'http:gone'))?.id).toBe(again.id);
        await clocked.cards.remove(again.id, [], []);
        expect((await clocked.cards.findDeletedIdempotencyKey(author, 'http:gone'))?.deletedAt).toEqual(new Date(now));
        // A live card keeps its key however long it lives.
        now = start + 1000 * hour;
        expect((await clocked.cards.findByIdempotencyKey(author, 'http:live'))?.id).toBe(live.id);
      } finally {
        await clocked.close();
      }
    });

    it('takes out at most EXPIRED_KEYS_PER_SWEEP expired keys per removal, the oldest first', async () => {
      const hour = 3_600_000;
      const start = Date.parse('2026-03-01T00:00:00.000Z');
      let now = start;
      const clocked = await factory({ keyExpiry: keptKeyExpiry(1, () => new Date(now)) });
      try {
        const author = randomUUID();
        const removeKeyed = async (key: string) => {
          const card = aCard().by(author).withIdempotencyKey(key).build();
          await clocked.cards.insert(card, fingerprintOf(card.content), []);
          await clocked.cards.remove(card.id, [], []);
        };
        for (let i = 0; i <= EXPIRED_KEYS_PER_SWEEP; i++) {
          now = start + i;
          await removeKeyed(`http:${i}`);
        }
        now = start + 2 * hour;
        await removeKeyed('http:sweeper');
        // Read back as of a time when none had expired: only the newest of the expired ones is left.
        now = start + EXPIRED_KEYS_PER_SWEEP;
        const left = [];
        for (let i = 0; i <= EXPIRED_KEYS_PER_SWEEP; i++) if (await clocked.cards.findDeletedIdempotencyKey(author, `http:${i}`)) left.push(i);
        expect(left).toEqual([EXPIRED_KEYS_PER_SWEEP]);
      } finally {
        await clocked.close();
      }
    });

    it('keeps nothing of a card or an edit whose event is larger than the event bus carries', async () => {
      const tooLarge = { topic: Topics.card, key: 'k', payload: new Uint8Array(MAX_EVENT_BYTES) };
      const refused = aCard().build();
      await expect(store.cards.insert(refused, fingerprintOf(refused.content), [tooLarge])).rejects.toBeInstanceOf(EventTooLargeError);
      expect(await store.cards.findById(refused.id)).toBeNull();
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const content = someContent();
      const edit = { ...card, content, cardHtml: `<p>${content}</p>`, updatedAt: nextTime() };
      await expect(store.cards.update(edit, fingerprintOf(content), [event(), tooLarge])).rejects.toBeInstanceOf(EventTooLargeError);
      expect(await store.cards.findById(card.id)).toEqual(card);
      expect(await store.pendingEventTopics()).toEqual([]);
    });

    it('finds cards by normalized-content hash, oldest first, and by shared sketch values', async () => {
      const text = someContent(120);
      const a = aCard().withContent(text).build();
      const b = aCard().withContent(text.toUpperCase()).build();
      const other = aCard().build();
      for (const c of [a, b, other]) await store.cards.insert(c, fingerprintOf(c.content), []);
      expect((await store.cards.findByContentHash(fingerprintOf(text).contentHash, 10)).map((c) => c.id)).toEqual([a.id, b.id]);
      const sketch = fingerprintOf(text).sketch;
      const bySketch = (await store.cards.findBySketch(sketch, 4, 10)).map((c) => c.id);
      expect(bySketch).toEqual(expect.arrayContaining([a.id, b.id]));
      expect(bySketch).not.toContain(other.id);
      expect(await store.cards.findBySketch([], 1, 10)).toEqual([]);
    });

    it('finds the roots not indexed yet that a viewer may see, changed since a time, most recent change first', async () => {
      const viewer = randomUUID();
      const tooOld = aCard().build();
      const since = nextTime();
      const indexed = aCard().build();
      const publicRoot = aCard().build();
      const othersPrivate = aCard().private().build();
      const ownPrivate = aCard().by(viewer).private().build();
      const collision = aCard().collisionOf(publicRoot.id).build();
      const newest = aCard().build();
      for (const c of [tooOld, indexed, publicRoot, othersPrivate, ownPrivate, collision, newest]) await store.cards.insert(c, fingerprintOf(c.content), []);
      await store.cards.setVectorPointId(indexed.id, 'vp-indexed');
      expect((await store.cards.findUnindexedRoots(viewer, since, 10)).map((c) => c.id)).toEqual([newest.id, ownPrivate.id, publicRoot.id]);
      expect((await store.cards.findUnindexedRoots(viewer, since, 2)).map((c) => c.id)).toEqual([newest.id, ownPrivate.id]);
      expect((await store.cards.findUnindexedRoots(othersPrivate.authorId, since, 10)).map((c) => c.id)).toEqual([newest.id, othersPrivate.id, publicRoot.id]);
      expect((await store.cards.findUnindexedRoots(viewer, since, 10))[0]).toEqual(newest);
    });

    it('finds the roots created since a time that a viewer may see (every author\'s without a viewer), indexed or not, newest first', async () => {
      const viewer = randomUUID();
      const tooOld = aCard().build();
      const since = nextTime();
      const indexed = aCard().build();
      const othersPrivate = aCard().private().build();
      const ownPrivate = aCard().by(viewer).private().build();
      const collision = aCard().collisionOf(indexed.id).build();
      const newest = aCard().build();
      for (const c of [tooOld, indexed, othersPrivate, ownPrivate, collision, newest]) await store.cards.insert(c, fingerprintOf(c.content), []);
      await store.cards.setVectorPointId(indexed.id, 'vp-indexed');
      expect((await store.cards.findRootsCreatedSince(viewer, since, 10)).map((c) => c.id)).toEqual([newest.id, ownPrivate.id, indexed.id]);
      expect((await store.cards.findRootsCreatedSince(null, since, 10)).map((c) => c.id)).toEqual([newest.id, ownPrivate.id, othersPrivate.id, indexed.id]);
      expect((await store.cards.findRootsCreatedSince(null, since, 2)).map((c) => c.id)).toEqual([newest.id, ownPrivate.id]);
      expect((await store.cards.findRootsCreatedSince(viewer, since, 10))[0]).toEqual(newest);
    });

    it('finds the roots created within a time span when given its end', async () => {
      const before = aCard().build();
      const since = nextTime();
      const inside = aCard().build();
      const until = nextTime();
      const after = aCard().build();
      for (const c of [before, inside, after]) await store.cards.insert(c, fingerprintOf(c.content), []);
      expect((await store.cards.findRootsCreatedSince(null, since, 10, until)).map((c) => c.id)).toEqual([inside.id]);
      expect((await store.cards.findRootsCreatedSince(null, since, 10, inside.createdAt)).map((c) => c.id)).toEqual([inside.id]);
      expect((await store.cards.findRootsCreatedSince(null, since, 10)).map((c) => c.id)).toEqual([after.id, inside.id]);
    });

    it('stores a new card as owing its look-again until that is cleared, which changes nothing else and stores no event', async () => {
      const card = aCard().withIdempotencyKey('doc-2#1').build();
      await store.cards.insert(card, fingerprintOf(card.content), [event()]);
      expect(await store.cards.findWithLookAgainOwed(card.id)).toEqual(card);
      expect(await store.cards.findById(card.id)).toEqual(card);
      await store.cards.clearLookAgainOwed(card.id);
      expect(await store.cards.findWithLookAgainOwed(card.id)).toBeNull();
      expect(await store.cards.findById(card.id)).toEqual(card);
      expect(await store.cards.findByIdempotencyKey(card.authorId, 'doc-2#1')).toEqual(card);
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
      await store.cards.clearLookAgainOwed(card.id);
      await store.cards.clearLookAgainOwed(randomUUID());
      expect(await store.cards.findWithLookAgainOwed(randomUUID())).toBeNull();
      expect(await store.cards.findWithLookAgainOwed(card.id)).toBeNull();
    });

    it('keeps the look-again owed through other changes of the card, and lists the collisions owing it oldest first', async () => {
      const root = aCard().build();
      const settled = aCard().collisionOf(root.id).withContent(root.content).build();
      const owing = [aCard().collisionOf(root.id).withContent(root.content).build(), aCard().collisionOf(root.id).withContent(root.content).build()];
      for (const c of [root, settled, ...owing]) await store.cards.insert(c, fingerprintOf(c.content), []);
      await store.cards.clearLookAgainOwed(settled.id);
      expect((await store.cards.findCollisionsWithLookAgainOwed(10)).map((c) => c.id)).toEqual(owing.map((c) => c.id));
      expect((await store.cards.findCollisionsWithLookAgainOwed(1)).map((c) => c.id)).toEqual([owing[0]!.id]);
      expect(await store.cards.setVectorPointId(root.id, 'vp-root')).toBe(true);
      const edited = { ...root, link: 'https://example.org/', updatedAt: nextTime() };
      await store.cards.update(edited, null, [], { ifUpdatedAt: root.updatedAt });
      expect(await store.cards.findWithLookAgainOwed(root.id)).toEqual({ ...edited, vectorPointId: 'vp-root' });
      expect(await store.cards.detachCollision(owing[1]!.id, root.id, [])).toBe(true);
      expect((await store.cards.findCollisionsWithLookAgainOwed(10)).map((c) => c.id)).toEqual([owing[0]!.id]);
      expect((await store.cards.findWithLookAgainOwed(owing[1]!.id))?.collisionOf).toBeNull();
    });

    it('updates content, privacy and fingerprint together', async () => {
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const content = someContent();
      const next = { ...card, content, cardHtml: `<p>${content}</p>`, private: true, link: '', updatedAt: nextTime() };
      await store.cards.update(next, fingerprintOf(content), [event()]);
      expect(await store.cards.findById(card.id)).toEqual(next);
      expect(await store.cards.findByContentHash(fingerprintOf(card.content).contentHash, 10)).toEqual([]);
      expect((await store.cards.findByContentHash(fingerprintOf(content).contentHash, 10)).map((c) => c.id)).toEqual([card.id]);
    });

    it('updates only the card it was read as when asked to (ifUpdatedAt), changing nothing otherwise', async () => {
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const first = { ...card, link: 'https://example.com/first', updatedAt: nextTime() };
      await store.cards.update(first, null, [event()], { ifUpdatedAt: card.updatedAt });
      const stale = { ...card, private: true, updatedAt: nextTime() };
      await expect(store.cards.update(stale, null, [event()], { ifUpdatedAt: card.updatedAt })).rejects.toBeInstanceOf(StaleCardError);
      expect(await store.cards.findById(card.id)).toEqual(first);
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
      await expect(store.cards.update({ ...stale, id: randomUUID() }, null, [], { ifUpdatedAt: card.updatedAt })).rejects.toBeInstanceOf(StaleCardError);
    });

    // The gateway's If-Match names a card's version by its updatedAt in milliseconds (the ETag of GET /api/card/:id):
    // the stored instant reads back to the millisecond, and one a millisecond off is another version.
    it('tells versions apart to the millisecond: the updatedAt read back is the one that matches, one 1 ms off does not', async () => {
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const read = (await store.cards.findById(card.id))!.updatedAt;
      const edit = { ...card, link: 'https://example.com/edited', updatedAt: nextTime() };
      await expect(store.cards.update(edit, null, [], { ifUpdatedAt: new Date(read.getTime() + 1) })).rejects.toBeInstanceOf(StaleCardError);
      await expect(store.cards.update(edit, null, [], { ifUpdatedAt: new Date(read.getTime() - 1) })).rejects.toBeInstanceOf(StaleCardError);
      expect((await store.cards.findById(card.id))!.link).toBe(card.link);
      await store.cards.update(edit, null, [], { ifUpdatedAt: new Date(read.getTime()) });
      expect((await store.cards.findById(card.id))!.link).toBe('https://example.com/edited');
    });

    it('re-homes collisions with a privacy update: a new root loses its index id, moves of cards no longer under it are skipped', async () => {
      const root = aCard().build();
      const a = aCard().collisionOf(root.id).withContent(root.content).build();
      const b = aCard().collisionOf(root.id).withContent(root.content).build();
      const elsewhere = aCard().collisionOf(randomUUID()).build();
      for (const c of [root, a, b, elsewhere]) await store.cards.insert(c, fingerprintOf(c.content), []);
      const next = { ...root, private: true, updatedAt: nextTime() };
      await store.cards.update(next, null, [event(), event()], {
        moves: [
          { cardId: a.id, collisionOf: null },
          { cardId: b.id, collisionOf: a.id },
          { cardId: elsewhere.id, collisionOf: a.id },
        ],
      });
      expect((await store.cards.findById(root.id))?.private).toBe(true);
      expect((await store.cards.findById(a.id))?.collisionOf).toBeNull();
      expect((await store.cards.findById(b.id))?.collisionOf).toBe(a.id);
      expect((await store.cards.findById(elsewhere.id))?.collisionOf).toBe(elsewhere.collisionOf);
      expect(await store.cards.findCollisions([root.id])).toEqual([]);
      expect(await store.cards.setVectorPointId(a.id, 'vp-a')).toBe(true);
      expect(await store.pendingEventTopics()).toEqual([Topics.card, Topics.card]);
    });

    it('makes the updated card a root of its own when asked to (becomesRoot), without its index id', async () => {
      const root = aCard().build();
      const copy = aCard().collisionOf(root.id).withContent(root.content).build();
      for (const c of [root, copy]) await store.cards.insert(c, fingerprintOf(c.content), []);
      const content = someContent();
      const next = { ...copy, content, collisionOf: null, updatedAt: nextTime() };
      await store.cards.update(next, fingerprintOf(content), [event()], { ifUpdatedAt: copy.updatedAt, becomesRoot: true });
      expect(await store.cards.findById(copy.id)).toEqual(next);
      expect(await store.cards.findCollisions([root.id])).toEqual([]);
      expect(await store.cards.setVectorPointId(copy.id, 'vp-copy')).toBe(true);
    });

    it('detaches a collision from its root only while it is still a collision of that root', async () => {
      const root = aCard().build();
      const copy = aCard().collisionOf(root.id).withContent(root.content).build();
      for (const c of [root, copy]) await store.cards.insert(c, fingerprintOf(c.content), []);
      expect(await store.cards.detachCollision(copy.id, randomUUID(), [event()])).toBe(false);
      expect(await store.pendingEventTopics()).toEqual([]);
      expect(await store.cards.detachCollision(copy.id, root.id, [event()])).toBe(true);
      expect((await store.cards.findById(copy.id))?.collisionOf).toBeNull();
      expect(await store.cards.detachCollision(copy.id, root.id, [event()])).toBe(false);
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
    });

    it('joins a root under another root with its collisions, once, only while both are roots and the card is unchanged', async () => {
      const earlier = aCard().build();
      const later = aCard().withContent(earlier.content).build();
      const copy = aCard().collisionOf(later.id).withContent(earlier.content).build();
      for (const c of [earlier, later, copy]) await store.cards.insert(c, fingerprintOf(c.content), []);
      const collection = aCollection().build();
      await store.collections.insert(collection, []);
      await store.collections.addBookmark(collection.id, copy.id, nextTime(), []);
      const seen: [string, string | null, string[]][] = [];
      const eventsOf = (moved: { id: string; collisionOf: string | null }, collectionIds: string[]) => (seen.push([moved.id, moved.collisionOf, collectionIds]), [event()]);
      const at = nextTime();
      expect(await store.cards.joinRoot(later.id, earlier.id, nextTime(), at, eventsOf)).toBe(false); // changed since read
      expect(await store.cards.joinRoot(later.id, copy.id, later.updatedAt, at, eventsOf)).toBe(false); // not a root
      expect(await store.pendingEventTopics()).toEqual([]);
      expect(await store.cards.joinRoot(later.id, earlier.id, later.updatedAt, at, eventsOf)).toBe(true);
      expect(await store.cards.findById(later.id)).toEqual({ ...later, collisionOf: earlier.id, updatedAt: at });
      expect((await store.cards.findCollisions([earlier.id])).map((c) => c.id).sort()).toEqual([later.id, copy.id].sort());
      expect(seen).toEqual([
        [later.id, earlier.id, []],
        [copy.id, earlier.id, [collection.id]],
      ]);
      expect(await store.cards.joinRoot(later.id, earlier.id, at, nextTime(), eventsOf)).toBe(false);
      expect(await store.cards.setVectorPointId(later.id, 'vp')).toBe(false);
      expect(await store.pendingEventTopics()).toEqual([Topics.card, Topics.card]);

      const straggler = aCard().collisionOf(later.id).withContent(earlier.content).build();
      await store.cards.insert(straggler, fingerprintOf(straggler.content), []);
      expect(await store.cards.moveCollisions(later.id, earlier.id, eventsOf)).toBe(1);
      expect((await store.cards.findById(straggler.id))?.collisionOf).toBe(earlier.id);
      expect(await store.cards.moveCollisions(later.id, earlier.id, eventsOf)).toBe(0);
      expect(await store.pendingEventTopics()).toEqual([Topics.card, Topics.card, Topics.card]);
    });

    it('removes a card with its votes (off the author totals) and bookmarks, promoting a collision', async () => {
      const author = randomUUID();
      const root = aCard().by(author).build();
      const c1 = aCard().collisionOf(root.id).withContent(root.content).build();
      const c2 = aCard().collisionOf(root.id).withContent(root.content).build();
      for (const c of [root, c1, c2]) await store.cards.insert(c, fingerprintOf(c.content), []);
      await store.votes.upsert(randomUUID(), root.id, true, nextTime(), randomUUID());
      await store.votes.upsert(randomUUID(), root.id, false, nextTime(), randomUUID());
      const collection = aCollection().build();
      await store.collections.insert(collection, []);
      await store.collections.addBookmark(collection.id, root.id, nextTime(), []);
      expect(await store.votes.received(author)).toEqual({ upvotes: 1, downvotes: 1 });

      await store.cards.remove(root.id, [{ cardId: c1.id, collisionOf: null }, { cardId: c2.id, collisionOf: c1.id }], [event()]);
      expect(await store.cards.findById(root.id)).toBeNull();
      expect(await store.votes.received(author)).toEqual({ upvotes: 0, downvotes: 0 });
      expect(await store.collections.bookmarkedCardIds(collection.id)).toEqual([]);
      expect((await store.cards.findById(c1.id))?.collisionOf).toBeNull();
      expect((await store.cards.findById(c2.id))?.collisionOf).toBe(c1.id);
      expect((await store.cards.findCollisions([c1.id])).map((c) => c.id)).toEqual([c2.id]);
      expect(await store.cards.count()).toBe(2);
    });

    it('counts every card, private ones and collisions included, through inserts, refusals, edits, detaching and removals', async () => {
      expect(await store.cards.count()).toBe(0);
      const author = randomUUID();
      const root = aCard().by(author).withIdempotencyKey('doc-1#1').build();
      const hidden = aCard().by(author).private().build();
      const c1 = aCard().collisionOf(root.id).withContent(root.content).build();
      const c2 = aCard().private().collisionOf(root.id).withContent(root.content).build();
      for (const c of [root, hidden, c1, c2]) await store.cards.insert(c, fingerprintOf(c.content), [event()]);
      expect(await store.cards.count()).toBe(4);
      // Refused inserts (a taken idempotency key, an event too large) leave nothing to count.
      const again = aCard().by(author).withIdempotencyKey('doc-1#1').build();
      await expect(store.cards.insert(again, fingerprintOf(again.content), [event()])).rejects.toBeInstanceOf(AlreadyExistsError);
      const refused = aCard().build();
      await expect(store.cards.insert(refused, fingerprintOf(refused.content), [{ topic: Topics.card, key: 'k', payload: new Uint8Array(MAX_EVENT_BYTES) }])).rejects.toBeInstanceOf(
        EventTooLargeError,
      );
      expect(await store.cards.count()).toBe(4);
      // An edit and a collision made a root change what cards are, not how many.
      const content = someContent();
      await store.cards.update({ ...hidden, content, cardHtml: `<p>${content}</p>`, private: false, updatedAt: nextTime() }, fingerprintOf(content), [event()]);
      expect(await store.cards.detachCollision(c1.id, root.id, [event()])).toBe(true);
      expect(await store.cards.count()).toBe(4);
      // The root removed (its remaining collision promoted), then again: one card fewer, once.
      expect(await store.cards.remove(root.id, [{ cardId: c2.id, collisionOf: null }], [event()])).toBe(true);
      expect(await store.cards.remove(root.id, [], [event()])).toBe(false);
      expect(await store.cards.count()).toBe(3);
      for (const c of [hidden, c1, c2]) await store.cards.remove(c.id, [], []);
      expect(await store.cards.count()).toBe(0);
      const later = aCard().build();
      await store.cards.insert(later, fingerprintOf(later.content), []);
      expect(await store.cards.count()).toBe(1);
    });

    it('removes a card once when two removals race: one answers true, the other false, with one set of effects', async () => {
      const author = randomUUID();
      const card = aCard().by(author).build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      await store.votes.upsert(randomUUID(), card.id, true, nextTime(), randomUUID());
      await store.votes.upsert(randomUUID(), card.id, false, nextTime(), randomUUID());
      const collection = aCollection().build();
      await store.collections.insert(collection, []);
      await store.collections.addBookmark(collection.id, card.id, nextTime(), []);

      const results = await Promise.all([store.cards.remove(card.id, [], [event()]), store.cards.remove(card.id, [], [event()])]);
      expect([...results].sort()).toEqual([false, true]);
      expect(await store.cards.findById(card.id)).toBeNull();
      expect(await store.votes.received(author, true)).toEqual({ upvotes: 0, downvotes: 0 });
      expect(await store.votes.received(author)).toEqual({ upvotes: 0, downvotes: 0 });
      expect(await store.collections.bookmarkedCardIds(collection.id)).toEqual([]);
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
      expect(await store.cards.remove(card.id, [], [event()])).toBe(false);
      expect(await store.pendingEventTopics()).toEqual([Topics.card]);
    });

    it("pages the collisions of roots oldest first (equal creation times by id), as findCollisions lists them, each once", async () => {
      const [root, other, unrelated] = [aCard().build(), aCard().build(), aCard().build()];
      for (const c of [root, other, unrelated]) await store.cards.insert(c, fingerprintOf(c.content), []);
      const oldest = aCard().collisionOf(root.id).build();
      const sameTime = nextTime();
      const copies = [
        oldest,
        ...[randomUUID(), randomUUID(), randomUUID()].sort().map((id) => ({ ...aCard().collisionOf(other.id).private().build(), id, createdAt: sameTime, updatedAt: sameTime })),
        aCard().collisionOf(root.id).build(),
      ];
      // Inserted newest first, so no order of insertion can pass for the order asked.
      for (const c of [...copies].reverse().concat(aCard().collisionOf(unrelated.id).build())) await store.cards.insert(c, fingerprintOf(c.content), []);
      const ids = (cards: readonly { id: string }[]) => cards.map((c) => c.id);
      expect(ids(await store.cards.findCollisions([other.id, root.id]))).toEqual(ids(copies));

      const first = await store.cards.findCollisionsPage([other.id, root.id], 2);
      expect(first.items).toEqual(copies.slice(0, 2));
      const second = await store.cards.findCollisionsPage([root.id, other.id], 2, first.next);
      expect(ids(second.items)).toEqual(ids(copies.slice(2, 4)));
      const last = await store.cards.findCollisionsPage([root.id, other.id], 2, second.next);
      expect(ids(last.items)).toEqual(ids(copies.slice(4)));
      expect(last.next).toBeUndefined();
      expect(ids((await store.cards.findCollisionsPage([root.id], 1, first.next)).items)).toEqual([copies[4]!.id]);
      expect(await store.cards.findCollisionsPage([root.id, other.id], 10)).toEqual({ items: copies });
      expect(await store.cards.findCollisionsPage([randomUUID()], 10)).toEqual({ items: [] });
    });

    it('keeps its place in the collisions while collisions are added and removed between pages', async () => {
      const root = aCard().build();
      await store.cards.insert(root, fingerprintOf(root.content), []);
      const copies = [aCard().collisionOf(root.id).build(), aCard().collisionOf(root.id).build(), aCard().collisionOf(root.id).build()];
      for (const c of copies) await store.cards.insert(c, fingerprintOf(c.content), []);
      const first = await store.cards.findCollisionsPage([root.id], 1);
      await store.cards.remove(copies[0]!.id, [], []);
      await store.cards.remove(copies[1]!.id, [], []);
      const added = aCard().collisionOf(root.id).build();
      await store.cards.insert(added, fingerprintOf(added.content), []);
      const rest = await store.cards.findCollisionsPage([root.id], 10, first.next);
      expect(rest.items.map((c) => c.id)).toEqual([copies[2]!.id, added.id]);
    });

    it('refuses a collision cursor it did not give, naming page_token', async () => {
      for (const cursor of ['', 'garbage', `1_${randomUUID().toUpperCase()}`]) {
        await expect(store.cards.findCollisionsPage([randomUUID()], 5, cursor)).rejects.toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('page_token') }));
      }
    });

    it('lists an author\'s cards newest update first, paged, private ones only on request', async () => {
      const author = randomUUID();
      const cards = [aCard().by(author).build(), aCard().by(author).private().build(), aCard().by(author).build(), aCard().build()];
      for (const c of cards) await store.cards.insert(c, fingerprintOf(c.content), []);
      expect((await store.cards.listByAuthor(author, true, 0, 10)).map((c) => c.id)).toEqual([cards[2]!.id, cards[1]!.id, cards[0]!.id]);
      expect((await store.cards.listByAuthor(author, false, 0, 10)).map((c) => c.id)).toEqual([cards[2]!.id, cards[0]!.id]);
      expect((await store.cards.listByAuthor(author, true, 1, 1)).map((c) => c.id)).toEqual([cards[1]!.id]);
      expect(await store.cards.countByAuthor(author, true)).toBe(3);
      expect(await store.cards.countByAuthor(author, false)).toBe(2);
      expect(await store.cards.count()).toBe(4);
    });

    it("pages and counts an author's cards at depth, for the owner and for anyone, through privacy changes, removals and other authors' cards", async () => {
      const author = randomUUID();
      const cards = Array.from({ length: 60 }, (_, i) => (i % 4 === 3 ? aCard().by(author).private().build() : aCard().by(author).build()));
      for (const c of cards) {
        await store.cards.insert(c, fingerprintOf(c.content), []);
        const other = aCard().build();
        await store.cards.insert(other, fingerprintOf(other.content), []);
      }
      // Made public, made private (with a newer update time), removed (a public one and a private one).
      await store.cards.update({ ...cards[3]!, private: false, updatedAt: nextTime() }, null, []);
      await store.cards.update({ ...cards[10]!, private: true, updatedAt: nextTime() }, null, []);
      await store.cards.remove(cards[20]!.id, [], []);
      await store.cards.remove(cards[23]!.id, [], []);
      const current = new Map(cards.map((c) => [c.id, c]));
      current.set(cards[3]!.id, { ...cards[3]!, private: false });
      current.set(cards[10]!.id, { ...cards[10]!, private: true });
      current.delete(cards[20]!.id);
      current.delete(cards[23]!.id);
      // The two updated cards are the newest changes (10 after 3); the rest newest created first.
      const order = (includePrivate: boolean) => {
        const rest = [...current.values()].filter((c) => (includePrivate || !c.private) && c.id !== cards[3]!.id && c.id !== cards[10]!.id).reverse().map((c) => c.id);
        return [...(includePrivate ? [cards[10]!.id] : []), cards[3]!.id, ...rest];
      };
      expect(order(true).length).toBe(58);
      for (const includePrivate of [true, false]) {
        const all = order(includePrivate);
        expect(await store.cards.countByAuthor(author, includePrivate)).toBe(all.length);
        const paged: string[] = [];
        for (let offset = 0; offset < all.length + 7; offset += 7) paged.push(...(await store.cards.listByAuthor(author, includePrivate, offset, 7)).map((c) => c.id));
        expect(paged).toEqual(all);
        // The last page and a page past the end.
        expect((await store.cards.listByAuthor(author, includePrivate, all.length - 2, 7)).map((c) => c.id)).toEqual(all.slice(-2));
        expect(await store.cards.listByAuthor(author, includePrivate, all.length, 7)).toEqual([]);
      }
      expect(await store.cards.countByAuthor(author, false)).toBe(44);
      expect(await store.cards.countByAuthor(randomUUID(), true)).toBe(0);
      for (const c of current.values()) await store.cards.remove(c.id, [], []);
      expect(await store.cards.countByAuthor(author, true)).toBe(0);
      expect(await store.cards.countByAuthor(author, false)).toBe(0);
    });

    it('sets the index id on roots only and keeps the newest verification', async () => {
      const root = aCard().build();
      const collision = aCard().collisionOf(root.id).build();
      for (const c of [root, collision]) await store.cards.insert(c, fingerprintOf(c.content), []);
      expect(await store.cards.setVectorPointId(root.id, 'vp-1')).toBe(true);
      expect(await store.cards.setVectorPointId(root.id, 'vp-1')).toBe(false);
      expect(await store.cards.setVectorPointId(collision.id, 'vp-2')).toBe(false);
      expect((await store.cards.findById(root.id))?.vectorPointId).toBe('vp-1');
      expect((await store.cards.findById(collision.id))?.vectorPointId).toBeNull();

      const newer = nextTime();
      expect(await store.cards.setVerification(root.id, 87, newer, root.link)).toBe(true);
      expect(await store.cards.setVerification(root.id, 12, new Date(newer.getTime() - 5000), root.link)).toBe(false);
      expect((await store.cards.findById(root.id))?.verificationScore).toBe(87);
    });

    it('keeps a verification only for the link the card has, and clears it when the link is removed', async () => {
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      expect(await store.cards.setVerification(card.id, 40, nextTime(), 'https://example.com/elsewhere')).toBe(false);
      expect(await store.cards.setVerification(card.id, 55, nextTime(), card.link)).toBe(true);
      expect(await store.cards.setVerification(card.id, 56, nextTime(), '')).toBe(true);
      const unlinked = { ...card, link: '', verificationScore: null, verifiedAt: null, updatedAt: nextTime() };
      await store.cards.update(unlinked, null, [], { ifUpdatedAt: card.updatedAt, clearVerification: true });
      expect(await store.cards.findById(card.id)).toMatchObject({ link: '', verificationScore: null, verifiedAt: null });
      // A result for the old link arriving after the edit is not stored.
      expect(await store.cards.setVerification(card.id, 70, nextTime(), card.link)).toBe(false);
      expect((await store.cards.findById(card.id))?.verificationScore).toBeNull();
    });

    it('stores the events of a verification with it, and none for one it does not keep', async () => {
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const at = nextTime();
      expect(await store.cards.setVerification(card.id, 40, at, 'https://example.com/elsewhere', [event(Topics.keptVerification)])).toBe(false);
      expect(await store.cards.setVerification(card.id, 12, new Date(at.getTime() - 5000), card.link, [event(Topics.keptVerification)])).toBe(true);
      expect(await store.cards.setVerification(card.id, 55, at, card.link, [event(Topics.keptVerification)])).toBe(true);
      expect(await store.cards.setVerification(card.id, 30, new Date(at.getTime() - 1000), card.link, [event(Topics.keptVerification)])).toBe(false);
      expect(await store.cards.setVerification(randomUUID(), 55, nextTime(), card.link, [event(Topics.keptVerification)])).toBe(false);
      expect(await store.pendingEventTopics()).toEqual([Topics.keptVerification, Topics.keptVerification]);
      expect((await store.cards.findById(card.id))?.verificationScore).toBe(55);
    });

    it('keeps a verification naming the content compared only while the card holds that content', async () => {
      const card = aCard().build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      expect(await store.cards.setVerification(card.id, 40, nextTime(), card.link, [event(Topics.keptVerification)], `${card.content} before the edit`)).toBe(false);
      expect((await store.cards.findById(card.id))?.verificationScore).toBeNull();
      expect(await store.pendingEventTopics()).toEqual([]);
      expect(await store.cards.setVerification(card.id, 55, nextTime(), card.link, [event(Topics.keptVerification)], card.content)).toBe(true);
      expect((await store.cards.findById(card.id))?.verificationScore).toBe(55);
      expect(await store.pendingEventTopics()).toEqual([Topics.keptVerification]);
    });

    it('clears file references from cards and collections', async () => {
      const fileId = randomUUID();
      const card = aCard().fromFile(fileId, 'report.pdf').build();
      await store.cards.insert(card, fingerprintOf(card.content), []);
      const collection = aCollection().forFile(fileId).build();
      await store.collections.insert(collection, []);
      await store.cards.clearFileReferences(fileId);
      expect(await store.cards.findById(card.id)).toMatchObject({ fileId: null, fileName: null });
      expect((await store.collections.findById(collection.id))?.fileId).toBeNull();
    });

    it("clears one card's reference to a file, only while the card carries that file", async () => {
      const fileId = randomUUID();
      const card = aCard().fromFile(fileId, 'report.pdf').build();
      const sibling = aCard().fromFile(fileId, 'report.pdf').build();
      const other = aCard().fromFile(randomUUID(), 'other.pdf').build();
      for (const c of [card, sibling, other]) await store.cards.insert(c, fingerprintOf(c.content), []);
      await store.cards.clearFileReferenceOf(card.id, fileId);
      await store.cards.clearFileReferenceOf(other.id, fileId);
      expect(await store.cards.findById(card.id)).toEqual({ ...card, fileId: null, fileName: null });
      expect(await store.cards.findById(sibling.id)).toEqual(sibling);
      expect(await store.cards.findById(other.id)).toEqual(other);
    });

    it('finds the cards of a file, every author, oldest first; clears only other authors\' references when asked', async () => {
      const fileId = randomUUID();
      const owner = randomUUID();
      const first = aCard().by(owner).fromFile(fileId, 'report.pdf').build();
      const citing = aCard().fromFile(fileId, 'report.pdf').build();
      const second = aCard().by(owner).fromFile(fileId, 'report.pdf').private().build();
      const elsewhere = aCard().by(owner).fromFile(randomUUID(), 'other.pdf').build();
      for (const card of [first, citing, second, elsewhere]) await store.cards.insert(card, fingerprintOf(card.content), []);
      const collection = aCollection().by(owner).forFile(fileId).build();
      await store.collections.insert(collection, []);
      expect((await store.cards.findByFile(fileId)).map((c) => c.id)).toEqual([first.id, citing.id, second.id]);

      await store.cards.clearFileReferences(fileId, owner);
      expect((await store.cards.findByFile(fileId)).map((c) => c.id)).toEqual([first.id, second.id]);
      expect(await store.cards.findById(citing.id)).toMatchObject({ fileId: null, fileName: null });
      expect((await store.collections.findById(collection.id))?.fileId).toBe(fileId);
    });

    it("records its file's privacy on every card carrying the file, changing nothing else; a card's own update leaves it as recorded", async () => {
      const fileId = randomUUID();
      const owner = randomUUID();
      const made = aCard().by(owner).fromFile(fileId, 'secret.docx', true).build();
      const citing = aCard().fromFile(fileId, 'secret.docx').build();
      const elsewhere = aCard().by(owner).fromFile(randomUUID(), 'other.docx', true).build();
      for (const card of [made, citing, elsewhere]) await store.cards.insert(card, fingerprintOf(card.content), []);
      expect(await store.cards.findById(made.id)).toEqual(made);

      await store.cards.setFilePrivacy(fileId, false);
      expect(await store.cards.findById(made.id)).toEqual({ ...made, filePrivate: false });
      expect(await store.cards.findById(elsewhere.id)).toEqual(elsewhere);
      await store.cards.setFilePrivacy(fileId, true);
      expect((await store.cards.findByFile(fileId)).map((c) => [c.id, c.filePrivate, c.updatedAt])).toEqual([
        [made.id, true, made.updatedAt],
        [citing.id, true, citing.updatedAt],
      ]);
      expect((await store.cards.listByAuthor(owner, true, 0, 10)).map((c) => c.filePrivate)).toEqual([true, true]);

      // An update written from a copy read before the file's privacy changed does not write that privacy back.
      await store.cards.setFilePrivacy(fileId, false);
      await store.cards.update({ ...made, private: true, updatedAt: nextTime() }, null, [], { ifUpdatedAt: made.updatedAt });
      expect(await store.cards.findById(made.id)).toMatchObject({ private: true, filePrivate: false });
    });

    it('keeps whether a card was hidden by its file: stored with the card, read back by every finder, changed with its privacy', async () => {
      const fileId = randomUUID();
      const owner = randomUUID();
      const hidden = aCard().by(owner).fromFile(fileId, 'report.pdf').hiddenByFile().build();
      const chosen = aCard().by(owner).fromFile(fileId, 'report.pdf').private().build();
      for (const card of [hidden, chosen]) await store.cards.insert(card, fingerprintOf(card.content), []);
      expect(await store.cards.findById(hidden.id)).toEqual(hidden);
      expect((await store.cards.findByFile(fileId)).map((c) => [c.id, c.private, c.hiddenByFile])).toEqual([
        [hidden.id, true, true],
        [chosen.id, true, false],
      ]);
      expect((await store.cards.listByAuthor(owner, true, 0, 10)).find((c) => c.id === hidden.id)?.hiddenByFile).toBe(true);

      // The file made public again: the card it hid comes back and loses the mark in the same write.
      const shown = { ...hidden, private: false, hiddenByFile: false, updatedAt: nextTime() };
      await store.cards.update(shown, null, [], { ifUpdatedAt: hidden.updatedAt });
      expect(await store.cards.findById(hidden.id)).toMatchObject({ private: false, hiddenByFile: false });
      // Only the mark changes (the owner kept a hidden card private by choice): written like any other change.
      const marked = { ...chosen, hiddenByFile: true, updatedAt: nextTime() };
      await store.cards.update(marked, null, [], { ifUpdatedAt: chosen.updatedAt });
      expect(await store.cards.findById(chosen.id)).toMatchObject({ private: true, hiddenByFile: true });
      await store.cards.update({ ...marked, hiddenByFile: false, updatedAt: nextTime() }, null, [], { ifUpdatedAt: marked.updatedAt });
      expect((await store.cards.findById(chosen.id))?.hiddenByFile).toBe(false);
    });

    it('notes the changes of files applied to their cards: the latest since a time, a deletion kept whatever is noted after it', async () => {
      const [fileId, deletedId] = [randomUUID(), randomUUID()];
      const t0 = nextTime();
      const t1 = nextTime();
      await store.cards.noteFileChange(fileId, { deleted: false, private: true, ownerId: 'alice', at: t1 });
      expect(await store.cards.fileChangeSince(fileId, t0)).toEqual({ deleted: false, private: true, ownerId: 'alice', at: t1 });
      expect(await store.cards.fileChangeSince(fileId, nextTime())).toBeNull();
      expect(await store.cards.fileChangeSince(randomUUID(), t0)).toBeNull();
      const t2 = nextTime();
      await store.cards.noteFileChange(fileId, { deleted: false, private: false, ownerId: 'alice', at: t2 });
      expect(await store.cards.fileChangeSince(fileId, t0)).toEqual({ deleted: false, private: false, ownerId: 'alice', at: t2 });
      await store.cards.noteFileChange(deletedId, { deleted: true, private: false, ownerId: '', at: nextTime() });
      const late = nextTime();
      await store.cards.noteFileChange(deletedId, { deleted: false, private: true, ownerId: 'alice', at: late });
      expect(await store.cards.fileChangeSince(deletedId, t0)).toEqual({ deleted: true, private: true, ownerId: 'alice', at: late });
    });
  });
}
