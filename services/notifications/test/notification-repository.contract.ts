import { randomUUID } from 'node:crypto';
import type { CollectionCreatedNotification, Notification, VerificationNotification } from '../src/domain/model';
import type { NotificationRepository } from '../src/domain/ports';
import { contractTests, describeOnEngine } from '../../../test/engines/suite';

let clock = Date.parse('2026-01-01T00:00:00.000Z');
const tick = () => new Date((clock += 1000));

/** Test data builder: aVerification().of(user).scored(80).build() */
export function aVerification() {
  const at = tick();
  const n: VerificationNotification = {
    kind: 'verification',
    id: randomUUID(),
    userId: randomUUID(),
    cardId: randomUUID(),
    verificationId: randomUUID(),
    similarityScore: 50,
    read: false,
    createdAt: at,
    updatedAt: at,
    sourceEventId: randomUUID(),
  };
  const builder = {
    of: (userId: string) => ((n.userId = userId), builder),
    scored: (score: number) => ((n.similarityScore = score), builder),
    fromEvent: (eventId: string) => ((n.sourceEventId = eventId), builder),
    forVerification: (verificationId: string) => ((n.verificationId = verificationId), builder),
    forCard: (cardId: string) => ((n.cardId = cardId), builder),
    build: () => ({ ...n }),
  };
  return builder;
}

export function aCollectionCreated() {
  const at = tick();
  const n: CollectionCreatedNotification = {
    kind: 'collection_created',
    id: randomUUID(),
    userId: randomUUID(),
    collectionId: randomUUID(),
    read: false,
    createdAt: at,
    updatedAt: at,
    sourceEventId: randomUUID(),
  };
  const builder = {
    of: (userId: string) => ((n.userId = userId), builder),
    forCollection: (collectionId: string) => ((n.collectionId = collectionId), builder),
    build: () => ({ ...n }),
  };
  return builder;
}

export interface NotificationRepositoryHarness {
  repository: NotificationRepository;
  /** Closes the repository and removes everything the test stored. */
  close(): Promise<void>;
}

/**
 * The behaviour every NotificationRepository adapter must have; call it from one test file per adapter.
 * `skipReason` set means the adapter cannot run here and the suite is reported skipped with it.
 */
export function describeNotificationRepositoryContract(
  name: string,
  factory: () => Promise<NotificationRepositoryHarness>,
  skipReason?: string,
): void {
  describeOnEngine(`NotificationRepository contract: ${name}`, skipReason, () => {
    const it = contractTests(`notification-repository on ${name}`);
    let harness: NotificationRepositoryHarness;
    let repository: NotificationRepository;

    beforeEach(async () => {
      harness = await factory();
      repository = harness.repository;
    });
    afterEach(async () => {
      await harness.close();
    });

    it('stores both kinds and lists them for their owner only, newest first, with every field intact', async () => {
      const owner = randomUUID();
      const older = aVerification().of(owner).scored(87).build();
      const newer = aCollectionCreated().of(owner).build();
      const someoneElses = aVerification().build();
      for (const n of [older, newer, someoneElses]) expect(await repository.add(n)).toBe(true);

      const listed = await repository.listForUser(owner);
      expect(listed).toEqual([newer, older]);
      expect(await repository.listForUser(randomUUID())).toEqual([]);
    });

    it('adds nothing for a replayed source event or a second notification of the same verification or collection', async () => {
      const owner = randomUUID();
      const first = aVerification().of(owner).build();
      expect(await repository.add(first)).toBe(true);
      expect(await repository.add({ ...first, id: randomUUID() })).toBe(false);
      expect(await repository.add(aVerification().of(owner).forVerification(first.verificationId).build())).toBe(false);
      const collection = aCollectionCreated().of(owner).build();
      expect(await repository.add(collection)).toBe(true);
      expect(await repository.add(aCollectionCreated().of(owner).forCollection(collection.collectionId).build())).toBe(false);
      expect(await repository.listForUser(owner)).toHaveLength(2);
    });

    it('marks one read for its owner only and moves updated_at', async () => {
      const owner = randomUUID();
      const n = aVerification().of(owner).build();
      await repository.add(n);
      expect(await repository.markRead(randomUUID(), n.id, new Date())).toBe(false);
      expect((await repository.listForUser(owner))[0]!.read).toBe(false);
      expect(await repository.markRead(owner, randomUUID(), new Date())).toBe(false);

      const at = new Date(n.createdAt.getTime() + 60_000);
      expect(await repository.markRead(owner, n.id, at)).toBe(true);
      const [read] = await repository.listForUser(owner);
      expect(read).toMatchObject({ id: n.id, read: true, createdAt: n.createdAt, updatedAt: at });
      // Marking again is fine and changes nothing.
      expect(await repository.markRead(owner, n.id, new Date(at.getTime() + 60_000))).toBe(true);
      expect((await repository.listForUser(owner))[0]!.updatedAt).toEqual(at);
    });

    /** Every page from the newest on, following `next` until there is none. */
    async function allPages(userId: string, limit: number) {
      const pages: Notification[][] = [];
      let after: string | undefined;
      do {
        const page = await repository.listPageForUser(userId, limit, after);
        pages.push(page.notifications);
        after = page.next;
      } while (after !== undefined);
      return pages;
    }

    it('lists a user in pages of the given size, newest first, each notification once, with no next after the last', async () => {
      const owner = randomUUID();
      const added: Notification[] = [];
      for (let i = 0; i < 7; i++) added.push(i % 2 ? aCollectionCreated().of(owner).build() : aVerification().of(owner).build());
      // Equal creation times list in insertion order, across a page boundary too.
      const sameMoment = added[6]!.createdAt;
      for (let i = 0; i < 2; i++) added.push({ ...aVerification().of(owner).build(), createdAt: sameMoment, updatedAt: sameMoment });
      await repository.add(aVerification().build());
      for (const n of added) await repository.add(n);
      const newestFirst = await repository.listForUser(owner);
      expect(newestFirst.map((n) => n.id)).toEqual([added[8], added[7], added[6], ...added.slice(0, 6).reverse()].map((n) => n!.id));

      const pages = await allPages(owner, 2);
      expect(pages.map((p) => p.length)).toEqual([2, 2, 2, 2, 1]);
      expect(pages.flat()).toEqual(newestFirst);
      expect((await allPages(owner, 9)).map((p) => p.length)).toEqual([9]);
      expect(await repository.listPageForUser(randomUUID(), 5)).toEqual({ notifications: [] });
    });

    it('keeps its place while notifications are added and marked read between pages', async () => {
      const owner = randomUUID();
      const before: Notification[] = [];
      for (let i = 0; i < 6; i++) before.push(aVerification().of(owner).build());
      for (const n of before) await repository.add(n);

      const first = await repository.listPageForUser(owner, 2);
      await repository.add(aCollectionCreated().of(owner).build());
      await repository.add(aVerification().of(owner).build());
      expect(await repository.markAllRead(owner, new Date())).toBe(8);
      const second = await repository.listPageForUser(owner, 2, first.next);
      const rest = await repository.listPageForUser(owner, 10, second.next);

      const listed = [...first.notifications, ...second.notifications, ...rest.notifications];
      expect(listed.map((n) => n.id)).toEqual(before.map((n) => n.id).reverse());
      expect(listed.map((n) => n.read)).toEqual([false, false, true, true, true, true]);
      expect(rest.next).toBeUndefined();
    });

    it('refuses a cursor it did not give, naming page_token', async () => {
      const owner = randomUUID();
      await repository.add(aVerification().of(owner).build());
      for (const cursor of ['', 'garbage', '2026-01-01T00:00:00.000Z', '1_2_3', `${'9'.repeat(40)}_1`]) {
        await expect(repository.listPageForUser(owner, 5, cursor)).rejects.toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('page_token') }));
      }
    });

    it('marks all of one user read and leaves other users alone', async () => {
      const owner = randomUUID();
      const other = randomUUID();
      await repository.add(aVerification().of(owner).build());
      await repository.add(aCollectionCreated().of(owner).build());
      const othersNotification = aVerification().of(other).build();
      await repository.add(othersNotification);
      expect(await repository.markAllRead(owner, new Date())).toBe(2);
      expect((await repository.listForUser(owner)).every((n) => n.read)).toBe(true);
      expect((await repository.listForUser(other))[0]!.read).toBe(false);
      expect(await repository.markAllRead(owner, new Date())).toBe(0);
    });

    it('gives a list version that changes whenever the list does, and only then', async () => {
      const owner = randomUUID();
      const versions = [await repository.listVersionForUser(owner)];
      const first = aVerification().of(owner).build();
      await repository.add(first);
      versions.push(await repository.listVersionForUser(owner));
      await repository.add(aCollectionCreated().of(owner).build());
      versions.push(await repository.listVersionForUser(owner));
      // Nothing changes: neither a replayed event, another user's notification nor a notification read again.
      await repository.add({ ...first, id: randomUUID() });
      await repository.add(aVerification().build());
      expect(await repository.listVersionForUser(owner)).toBe(versions[2]);
      await repository.markRead(owner, first.id, new Date());
      versions.push(await repository.listVersionForUser(owner));
      await repository.markRead(owner, first.id, new Date());
      expect(await repository.listVersionForUser(owner)).toBe(versions[3]);
      await repository.markAllRead(owner, new Date());
      versions.push(await repository.listVersionForUser(owner));
      await repository.markAllRead(owner, new Date());
      expect(await repository.listVersionForUser(owner)).toBe(versions[4]);
      expect(new Set(versions).size).toBe(versions.length);
    });

    it('removes the notifications about a deleted card or collection, and keeps none that arrives about it later', async () => {
      const owner = randomUUID();
      const card = randomUUID();
      const collection = randomUUID();
      const about = [aVerification().of(owner).forCard(card).build(), aVerification().of(owner).forCard(card).build(), aCollectionCreated().of(owner).forCollection(collection).build()];
      const kept = [aVerification().of(owner).build(), aCollectionCreated().of(owner).build()];
      for (const n of [...about, ...kept]) expect(await repository.add(n)).toBe(true);
      expect(await repository.removeAbout({ kind: 'card', cardId: card }, tick())).toBe(2);
      expect(await repository.removeAbout({ kind: 'collection', collectionId: collection }, tick())).toBe(1);
      expect(await repository.removeAbout({ kind: 'card', cardId: card }, tick())).toBe(0);
      expect((await repository.listForUser(owner)).map((n) => n.id).sort()).toEqual(kept.map((n) => n.id).sort());
      // Its announcement was behind the deletion (another topic): not kept.
      expect(await repository.add(aVerification().of(owner).forCard(card).build())).toBe(false);
      expect(await repository.add(aCollectionCreated().of(owner).forCollection(collection).build())).toBe(false);
      expect(await repository.listForUser(owner)).toHaveLength(2);
    });

    it('the list version changes when one is removed, also with another added in its place', async () => {
      const owner = randomUUID();
      const card = randomUUID();
      await repository.add(aVerification().of(owner).forCard(card).build());
      const before = await repository.listVersionForUser(owner);
      await repository.removeAbout({ kind: 'card', cardId: card }, tick());
      const removed = await repository.listVersionForUser(owner);
      await repository.add(aVerification().of(owner).build());
      const replaced = await repository.listVersionForUser(owner);
      expect(new Set([before, removed, replaced]).size).toBe(3);
    });

    it('removes notifications created before the cutoff, oldest first, at most the limit', async () => {
      const owner = randomUUID();
      const old = [aVerification().of(owner).build(), aCollectionCreated().of(owner).build(), aVerification().build()];
      const deletedCard = randomUUID();
      await repository.removeAbout({ kind: 'card', cardId: deletedCard }, tick());
      const cutoff = tick();
      const recent = aVerification().of(owner).build();
      for (const n of [...old, recent]) await repository.add(n);
      expect(await repository.removeOlderThan(cutoff, 2)).toBe(2);
      expect((await repository.listForUser(owner)).map((n) => n.id)).toEqual([recent.id]);
      expect(await repository.removeOlderThan(cutoff, 2)).toBe(1);
      expect(await repository.removeOlderThan(cutoff, 2)).toBe(0);
      expect(await repository.listForUser(old[2]!.userId)).toEqual([]);
      expect((await repository.listForUser(owner)).map((n) => n.id)).toEqual([recent.id]);
      // Deletions are forgotten apart.
      expect(await repository.add(aVerification().of(owner).forCard(deletedCard).build())).toBe(false);
    });

    it('forgets deletions recorded before the cutoff, at most the limit: a notification about them is taken again', async () => {
      const owner = randomUUID();
      const cards = [randomUUID(), randomUUID(), randomUUID()];
      for (const cardId of cards) await repository.removeAbout({ kind: 'card', cardId }, tick());
      const cutoff = tick();
      const later = randomUUID();
      await repository.removeAbout({ kind: 'card', cardId: later }, tick());
      expect(await repository.forgetDeletionsBefore(cutoff, 2)).toBe(2);
      expect(await repository.forgetDeletionsBefore(cutoff, 2)).toBe(1);
      expect(await repository.forgetDeletionsBefore(cutoff, 2)).toBe(0);
      // Past the retention, nothing about those cards can still be on its way; the later deletion is still remembered.
      for (const cardId of cards) expect(await repository.add(aVerification().of(owner).forCard(cardId).build())).toBe(true);
      expect(await repository.add(aVerification().of(owner).forCard(later).build())).toBe(false);
    });
  });
}
