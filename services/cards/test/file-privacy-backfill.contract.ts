import { randomUUID } from 'node:crypto';
import { createLogger, UnavailableError } from '@cards/platform';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { CardService } from '../src/application/card-service';
import { backfillFilePrivacy, FILE_PRIVACY_BACKFILL } from '../src/application/file-privacy-backfill';
import type { Card } from '../src/domain/model';
import type { VisibleFile } from '../src/domain/ports';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection } from './builders';
import type { CardsStoreFactory, CardsStoreFixture } from './fixture';

/**
 * The one-time backfill of file privacy on a store: cards and collections stored before each card kept its file's
 * privacy, and file collections published by hand while their file was private. Run it against every adapter.
 */
export function describeFilePrivacyBackfillContract(name: string, factory: CardsStoreFactory): void {
  describe(`file privacy backfill: ${name}`, () => {
    let store: CardsStoreFixture;
    beforeEach(async () => {
      store = await factory();
    });
    afterEach(async () => {
      await store.close();
    });

    /** The files service: each file's owner and privacy; `calls` counts GetFile; `down` makes it unavailable. */
    const filesService = () => {
      const files = new Map<string, { ownerId: string; private: boolean }>();
      const state = { calls: 0, down: false, onCall: (_fileId: string) => undefined as void };
      const visibleFile = async (fileId: string, callerId: string): Promise<VisibleFile | null> => {
        state.calls++;
        if (state.down) throw new UnavailableError('The files service cannot check file_uuid right now, try again');
        const file = files.get(fileId);
        const answer = file && (!file.private || file.ownerId === callerId) ? { name: 'plan.docx', private: file.private } : null;
        state.onCall(fileId);
        return answer;
      };
      return { files, state, directory: { visibleFile } };
    };
    const run = (directory: ReturnType<typeof filesService>['directory']) =>
      backfillFilePrivacy({ cards: store.cards, collections: store.collections, files: directory, tasks: store.oneTimeTasks, now: () => new Date() });
    const stored = async (card: Card) => {
      await store.cards.insert(card, fingerprintOf(card.content), []);
      return card;
    };
    const cardService = () =>
      new CardService({
        cards: store.cards,
        votes: store.votes,
        collections: store.collections,
        contentLock: new InProcessContentLock(),
        nearDuplicates: { find: async () => [] },
        files: { visibleFile: async () => null },
        users: { joinDates: async () => new Map() },
        eventsWritten: () => undefined,
        logger: createLogger('cards-test', 'silent'),
      });

    it("records each file's privacy as the files service has it on its cards and hides a private file's collection published by hand; card privacy stays the owner's", async () => {
      const { files, state, directory } = filesService();
      const alice = randomUUID();
      const [uncollected, published, hiddenByOwner, deleted] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
      files.set(uncollected, { ownerId: alice, private: true });
      files.set(published, { ownerId: alice, private: true });
      files.set(hiddenByOwner, { ownerId: alice, private: false });
      // As the migration of cards stored before left them: a private file with no collection, a private file whose
      // collection its owner published by hand, a public file whose collection its owner made private.
      const publicOfUncollected = await stored(aCard().by(alice).fromFile(uncollected, 'plan.docx', false).build());
      const publicOfPublished = await stored(aCard().by(alice).fromFile(published, 'plan.docx', false).build());
      const ofHiddenByOwner = await stored(aCard().by(alice).fromFile(hiddenByOwner, 'plan.docx', true).build());
      const ofDeleted = await stored(aCard().by(alice).fromFile(deleted, 'gone.docx', false).build());
      const publishedCollection = aCollection().by(alice).forFile(published).build();
      const hiddenCollection = aCollection().by(alice).forFile(hiddenByOwner).private().build();
      // A collection whose cards were all deleted still names its file.
      const emptyFile = randomUUID();
      files.set(emptyFile, { ownerId: alice, private: true });
      const emptyCollection = aCollection().by(alice).forFile(emptyFile).build();
      for (const c of [publishedCollection, hiddenCollection, emptyCollection]) await store.collections.insert(c, []);

      const service = cardService();
      expect(await service.getCard(publicOfUncollected.id, 'bob')).toMatchObject({ fileId: uncollected, fileName: 'plan.docx' });
      expect(await run(directory)).toBe(5);

      const read = async (card: Card, viewer: string) => service.getCard(card.id, viewer);
      for (const [card, fileId] of [[publicOfUncollected, uncollected], [publicOfPublished, published]] as const) {
        expect(await read(card, 'bob')).toMatchObject({ private: false, fileId: null, fileName: null });
        expect(await read(card, alice)).toMatchObject({ private: false, fileId, fileName: 'plan.docx' });
      }
      expect(await read(ofHiddenByOwner, 'bob')).toMatchObject({ fileId: hiddenByOwner, fileName: 'plan.docx' });
      expect(await read(ofDeleted, 'bob')).toMatchObject({ fileId: deleted, fileName: 'gone.docx' });
      expect((await store.collections.findById(publishedCollection.id))!.isPublic).toBe(false);
      expect((await store.collections.findById(emptyCollection.id))!.isPublic).toBe(false);
      expect((await store.collections.findById(hiddenCollection.id))!.isPublic).toBe(false);

      // Done once: the next start asks nothing.
      expect(await store.oneTimeTasks.isDone(FILE_PRIVACY_BACKFILL)).toBe(true);
      const calls = state.calls;
      expect(await run(directory)).toBe(0);
      expect(state.calls).toBe(calls);
    });

    it("dates a collection it hides after its version, also when that version is ahead of this replica's clock", async () => {
      const { files, directory } = filesService();
      const alice = randomUUID();
      const fileId = randomUUID();
      files.set(fileId, { ownerId: alice, private: true });
      await stored(aCard().by(alice).fromFile(fileId, 'plan.docx', false).build());
      // Last changed by a replica whose clock runs an hour ahead: a client holds this version as its ETag.
      const ahead = new Date(Date.now() + 60 * 60 * 1000);
      const published = { ...aCollection().by(alice).forFile(fileId).build(), updatedAt: ahead };
      await store.collections.insert(published, []);
      await run(directory);
      const after = (await store.collections.findById(published.id))!;
      expect(after.isPublic).toBe(false);
      // Before, dated by this clock: an hour earlier than the version it replaced, so versions went backwards.
      expect(after.updatedAt.getTime()).toBeGreaterThan(ahead.getTime());
    });

    it('writes a collection it hides on the version it read: a rename landing between, dated right after that version too, keeps its own', async () => {
      const { files, directory } = filesService();
      const alice = randomUUID();
      const fileId = randomUUID();
      files.set(fileId, { ownerId: alice, private: true });
      const ahead = new Date(Date.now() + 60 * 60 * 1000);
      const published = { ...aCollection().by(alice).forFile(fileId).build(), updatedAt: ahead };
      await store.collections.insert(published, []);
      // A rename by a replica whose clock is behind, on the version the backfill read, between its read and its write:
      // dated right after that version, as the backfill's write is.
      const renamed = new Date(ahead.getTime() + 1);
      const write = store.collections.update.bind(store.collections);
      let landed = false;
      jest.spyOn(store.collections, 'update').mockImplementation(async (...args) => {
        if (!landed) {
          landed = true;
          expect(await write(published.id, { name: 'Renamed meanwhile', updatedAt: renamed, ifUpdatedAt: ahead }, [])).toBe(true);
        }
        return write(...args);
      });
      await run(directory);
      const after = (await store.collections.findById(published.id))!;
      expect(after).toMatchObject({ name: 'Renamed meanwhile', isPublic: false });
      // Before, written over the rename whatever its version, under the rename's own: two states, one ETag.
      expect(after.updatedAt.getTime()).toBeGreaterThan(renamed.getTime());
    });

    it('is not recorded as done while the files service cannot answer, and runs whole once it can', async () => {
      const { files, state, directory } = filesService();
      const alice = randomUUID();
      const fileId = randomUUID();
      files.set(fileId, { ownerId: alice, private: true });
      const card = await stored(aCard().by(alice).fromFile(fileId, 'plan.docx', false).build());
      state.down = true;
      await expect(run(directory)).rejects.toBeInstanceOf(UnavailableError);
      expect(await store.oneTimeTasks.isDone(FILE_PRIVACY_BACKFILL)).toBe(false);
      state.down = false;
      expect(await run(directory)).toBe(1);
      expect((await store.cards.findById(card.id))!.filePrivate).toBe(true);
      await store.oneTimeTasks.markDone(FILE_PRIVACY_BACKFILL, new Date());
      expect(await store.oneTimeTasks.isDone(FILE_PRIVACY_BACKFILL)).toBe(true);
    });

    it("records the newer privacy of a file made public while it ran, its collection public again", async () => {
      const { files, state, directory } = filesService();
      const alice = randomUUID();
      const fileId = randomUUID();
      files.set(fileId, { ownerId: alice, private: true });
      const card = await stored(aCard().by(alice).fromFile(fileId, 'plan.docx', false).build());
      const collection = aCollection().by(alice).forFile(fileId).build();
      await store.collections.insert(collection, []);
      // Made public (and its change applied) right after the backfill read it private.
      state.onCall = () => {
        state.onCall = () => undefined;
        files.set(fileId, { ownerId: alice, private: false });
      };
      await run(directory);
      expect((await store.cards.findById(card.id))!.filePrivate).toBe(false);
      expect((await store.collections.findById(collection.id))!.isPublic).toBe(true);
    });
  });
}
