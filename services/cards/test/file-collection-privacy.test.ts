import { randomUUID } from 'node:crypto';
import { ChangedSinceReadError, InvalidArgumentError, NotFoundError, UnavailableError } from '@cards/platform';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { CardService } from '../src/application/card-service';
import { CollectionService, PRIVATE_FILE_COLLECTION } from '../src/application/collection-service';
import { VERSIONED_WRITE_ATTEMPTS } from '../src/application/events';
import type { VisibleFile } from '../src/domain/ports';
import { uninvolvedCardServiceDeps } from './uninvolved-deps';

/** The collection use cases on a real SQLite store, with a files service whose answers the test sets. */
function setup() {
  const db = openCardsDatabase(':memory:');
  const cards = new SqliteCardRepository(db);
  const collections = new SqliteCollectionRepository(db);
  const cardService = new CardService({ ...uninvolvedCardServiceDeps, cards, votes: new SqliteVoteRepository(db), collections, contentLock: new InProcessContentLock(), eventsWritten: () => undefined });
  const files = { answers: [] as (VisibleFile | null | Error)[], asked: 0 };
  // Until the test sets answers, every file is its caller's own public one (so its collection can be made).
  const visibleFile = async (_fileId: string, callerId: string): Promise<VisibleFile | null> => {
    if (files.answers.length === 0) return { name: 'plan.docx', private: false, ownerId: callerId };
    const answer = files.answers[Math.min(files.asked++, files.answers.length - 1)];
    if (answer instanceof Error) throw answer;
    return answer ?? null;
  };
  const service = new CollectionService({ collections, cards, cardService, files: { visibleFile }, eventsWritten: () => undefined });
  return { service, cardService, collections, files };
}

const privateFile = { name: 'secret-merger-plan.docx', private: true };
const publicFile = { name: 'secret-merger-plan.docx', private: false };

describe("a file's collection is public exactly when its file is", () => {
  it('refuses to make it public while the file is private, naming the rule; other changes go through', async () => {
    const { service, files } = setup();
    const fileId = randomUUID();
    const collection = await service.createFileCollection('alice', fileId, 'secret-merger-plan.docx', false, []);
    files.answers = [privateFile];
    const refused = service.update('alice', collection.id, { isPublic: true });
    await expect(refused).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(refused).rejects.toThrow(PRIVATE_FILE_COLLECTION);
    await expect(service.update('alice', collection.id, { name: 'Plans', isPublic: true })).rejects.toThrow(PRIVATE_FILE_COLLECTION);
    for (const viewer of ['bob', undefined]) await expect(service.get(collection.id, viewer)).rejects.toBeInstanceOf(NotFoundError);
    expect((await service.listUserCollections('alice', undefined)).items).toEqual([]);
    expect(await service.get(collection.id, 'alice')).toMatchObject({ isPublic: false, name: 'Collection for file secret-merger-plan.docx' });

    await service.update('alice', collection.id, { name: 'Plans', isPublic: false });
    expect(await service.get(collection.id, 'alice')).toMatchObject({ isPublic: false, name: 'Plans' });
    // Her other collections do not ask the files service.
    const own = await service.create('alice', 'Reading', '', false);
    const asked = files.asked;
    await service.update('alice', own.id, { isPublic: true });
    expect(files.asked).toBe(asked);
  });

  it('makes it public while the file is public, and a deleted file (no answer) no longer holds it back', async () => {
    const { service, files } = setup();
    const collection = await service.createFileCollection('alice', randomUUID(), 'plan.docx', true, []);
    await service.update('alice', collection.id, { isPublic: false });
    files.answers = [publicFile];
    await service.update('alice', collection.id, { isPublic: true });
    expect(await service.get(collection.id, 'bob')).toMatchObject({ isPublic: true });
    await service.update('alice', collection.id, { isPublic: false });
    files.answers = [null];
    await service.update('alice', collection.id, { isPublic: true });
    expect(await service.get(collection.id, undefined)).toMatchObject({ isPublic: true });
  });

  it('leaves it private when the file is made private while the collection is being made public', async () => {
    const { service, files } = setup();
    const collection = await service.createFileCollection('alice', randomUUID(), 'plan.docx', false, []);
    // Public when the update reads it, private (its change already applied to the still private collection) after.
    files.answers = [publicFile, privateFile];
    await expect(service.update('alice', collection.id, { isPublic: true })).rejects.toThrow(PRIVATE_FILE_COLLECTION);
    await expect(service.get(collection.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('leaves it private when the file is made private (its change applied) while the collection is made public and files no longer answers', async () => {
    const { service, cardService, collections, files } = setup();
    const fileId = randomUUID();
    const collection = await service.createFileCollection('alice', fileId, 'plan.docx', false, []);
    // Public when the update reads it; then, before its write, the owner makes the file private, that change is applied
    // to the (still private) collection, and the files service stops answering.
    files.answers = [publicFile, new UnavailableError('files: connect ECONNREFUSED')];
    const update = collections.update.bind(collections);
    let first = true;
    collections.update = async (...args: Parameters<typeof update>) => {
      if (first) {
        first = false;
        await cardService.applyFilePrivacy(fileId, 'alice', true);
      }
      return update(...args);
    };
    await expect(service.update('alice', collection.id, { isPublic: true })).rejects.toThrow(PRIVATE_FILE_COLLECTION);
    await expect(service.get(collection.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('makes it public when its file, made private a moment ago (that change applied), is public again before the update, that change not applied yet', async () => {
    const { service, cardService, files } = setup();
    const fileId = randomUUID();
    const collection = await service.createFileCollection('alice', fileId, 'plan.docx', true, []);
    // The owner makes the file private (applied: the collection goes private with it), then public again; the files
    // service tells it public, the event of that second change is still on its way.
    await cardService.applyFilePrivacy(fileId, 'alice', true);
    files.answers = [publicFile];
    await service.update('alice', collection.id, { isPublic: true });
    // Before: the first change's note (read from 5 s before the check) made it private again, answered 400 'private file'.
    expect(await service.get(collection.id, 'bob')).toMatchObject({ isPublic: true });
    await cardService.applyFilePrivacy(fileId, 'alice', false);
    expect(await service.get(collection.id, 'bob')).toMatchObject({ isPublic: true });
  });

  it('answers unavailable, changing nothing, when the files service cannot tell', async () => {
    const { service, files } = setup();
    const collection = await service.createFileCollection('alice', randomUUID(), 'plan.docx', false, []);
    files.answers = [new UnavailableError('The files service cannot check file_uuid right now, try again')];
    await expect(service.update('alice', collection.id, { isPublic: true })).rejects.toThrow("The files service cannot tell whether this collection's file is private right now, try again");
    await expect(service.get(collection.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a file made private makes its collection private even when its owner had made it public; made public again, public', async () => {
    const { service, cardService, files } = setup();
    const fileId = randomUUID();
    const collection = await service.createFileCollection('alice', fileId, 'plan.docx', false, []);
    files.answers = [publicFile];
    await cardService.applyFilePrivacy(fileId, 'alice', false);
    await service.update('alice', collection.id, { isPublic: false });
    await service.update('alice', collection.id, { isPublic: true });
    await cardService.applyFilePrivacy(fileId, 'alice', true);
    await expect(service.get(collection.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
    await cardService.applyFilePrivacy(fileId, 'alice', false);
    expect(await service.get(collection.id, 'bob')).toMatchObject({ isPublic: true });
  });
});

describe("a file's collection's privacy, changed by its file, is written on the version read (a new ETag, never one a rename holds)", () => {
  /** Alice's public collection of a file, last changed by a replica whose clock runs a minute ahead of this one's. */
  async function aheadFileCollection(collections: SqliteCollectionRepository, isPublic: boolean) {
    const ahead = new Date(Date.now() + 60_000);
    const made = { id: randomUUID(), authorId: 'alice', name: 'Collection for file plan.docx', description: '', isPublic, fileId: randomUUID(), idempotencyKey: null, requestFingerprint: null, createdAt: ahead, updatedAt: ahead };
    await collections.insert(made, []);
    return made;
  }

  /** Runs `landing` (another request) before the `nth` write of the collections store (1: the first). */
  function landBeforeWrite(collections: SqliteCollectionRepository, nth: number, landing: () => Promise<Date>) {
    const write = collections.update.bind(collections);
    let writes = 0;
    let landed: Promise<Date> | undefined;
    jest.spyOn(collections, 'update').mockImplementation(async (...args) => {
      if (++writes === nth) await (landed = landing());
      return write(...args);
    });
    return () => landed!;
  }

  it('a file made private: a rename landing between its read of the collection and its write keeps its version to itself', async () => {
    const { service, cardService, collections, files } = setup();
    const made = await aheadFileCollection(collections, true);
    files.answers = [privateFile];
    // Both dated right after the one version they read (this clock is behind it).
    const landed = landBeforeWrite(collections, 1, () => service.update('alice', made.id, { name: 'Renamed in another tab' }));
    await cardService.applyFilePrivacy(made.fileId, 'alice', true);
    const rename = await landed();
    const now = (await collections.findById(made.id))!;
    expect(now).toMatchObject({ name: 'Renamed in another tab', isPublic: false });
    // Before, the privacy was written over the rename under the rename's version: the tab holding the rename's ETag
    // had its If-Match taken for a private collection it never saw.
    expect(now.updatedAt.getTime()).toBeGreaterThan(rename.getTime());
    await expect(service.update('alice', made.id, { description: 'on the rename' }, rename)).rejects.toThrow(ChangedSinceReadError);
  });

  it('a file made private: its collection is made private even when a change lands before every write on the version read', async () => {
    const { service, cardService, collections } = setup();
    const made = await aheadFileCollection(collections, true);
    const write = collections.update.bind(collections);
    let landings = 0;
    jest.spyOn(collections, 'update').mockImplementation(async (id, change, events) => {
      // A rename lands before every write of the privacy, the last one (made without the version read) too.
      if (change.isPublic === false) {
        const now = (await collections.findById(id))!;
        expect(await write(id, { name: `Renamed ${++landings}`, updatedAt: new Date(now.updatedAt.getTime() + 1), ifUpdatedAt: now.updatedAt }, [])).toBe(true);
      }
      return write(id, change, events);
    });
    await cardService.applyFilePrivacy(made.fileId, 'alice', true);
    // Each attempt on the version it read lost; the last writes the privacy all the same (a private file's name must
    // not stay public), and the renames are kept...
    expect(landings).toBe(VERSIONED_WRITE_ATTEMPTS);
    const now = (await collections.findById(made.id))!;
    expect(now).toMatchObject({ name: `Renamed ${landings}`, isPublic: false });
    // ...under a version of its own: the last rename's ETag (1 ms after the version the last write read, the date that
    // write was given) no longer matches. Before, both states were stored under it, and an If-Match naming the rename
    // made public a collection its sender never saw private.
    const lastRename = new Date(made.updatedAt.getTime() + VERSIONED_WRITE_ATTEMPTS);
    expect(now.updatedAt.getTime()).toBeGreaterThan(lastRename.getTime());
    await expect(service.update('alice', made.id, { description: 'on the rename' }, lastRename)).rejects.toThrow(ChangedSinceReadError);
    await expect(service.get(made.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('made public while its file is made private: the correction after the update keeps a rename landing before it to its own version', async () => {
    const { service, collections, files } = setup();
    const made = await aheadFileCollection(collections, false);
    // Public when the update reads it, private (that change already applied to the still private collection) after.
    files.answers = [publicFile, privateFile];
    // The update's own write is the first; the rename lands before the correction, the second.
    const landed = landBeforeWrite(collections, 2, () => service.update('alice', made.id, { name: 'Renamed in another tab' }));
    await expect(service.update('alice', made.id, { isPublic: true })).rejects.toThrow(PRIVATE_FILE_COLLECTION);
    const rename = await landed();
    const now = (await collections.findById(made.id))!;
    expect(now).toMatchObject({ name: 'Renamed in another tab', isPublic: false });
    expect(now.updatedAt.getTime()).toBeGreaterThan(rename.getTime());
    await expect(service.update('alice', made.id, { description: 'on the rename' }, rename)).rejects.toThrow(ChangedSinceReadError);
  });
});

describe("a file's collection is made only for a file that is still there and its owner's", () => {
  it('refuses it for a file deleted before the call (file_id: no such file), making none', async () => {
    const { service, collections, files } = setup();
    const fileId = randomUUID();
    files.answers = [null];
    const refused = service.createFileCollection('alice', fileId, 'plan.docx', true, []);
    await expect(refused).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(refused).rejects.toThrow('file_id: no such file');
    expect(await collections.findByFileId(fileId)).toBeNull();
    expect((await service.listUserCollections('alice', 'alice')).items).toEqual([]);
  });

  it("refuses it for another user's file", async () => {
    const { service, collections, files } = setup();
    const fileId = randomUUID();
    files.answers = [{ ...publicFile, ownerId: 'bob' }];
    await expect(service.createFileCollection('alice', fileId, 'plan.docx', true, [])).rejects.toThrow('file_id: no such file');
    expect(await collections.findByFileId(fileId)).toBeNull();
  });

  it('answers a retry with the collection already made, even when the file was deleted since', async () => {
    const { service, files } = setup();
    const fileId = randomUUID();
    const made = await service.createFileCollection('alice', fileId, 'plan.docx', true, []);
    files.answers = [null];
    const asked = files.asked;
    expect(await service.createFileCollection('alice', fileId, 'plan.docx', true, [])).toMatchObject({ id: made.id, fileId });
    expect(files.asked).toBe(asked);
  });

  it('answers unavailable when the files service cannot tell, making none', async () => {
    const { service, collections, files } = setup();
    const fileId = randomUUID();
    files.answers = [new UnavailableError('The files service cannot check file_uuid right now, try again')];
    await expect(service.createFileCollection('alice', fileId, 'plan.docx', true, [])).rejects.toBeInstanceOf(UnavailableError);
    expect(await collections.findByFileId(fileId)).toBeNull();
  });
});
