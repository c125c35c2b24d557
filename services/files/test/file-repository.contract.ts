import { newId, type OutgoingEvent } from '@cards/platform';
import type { FileRepository } from '../src/domain/ports';
import { aFile } from './builders';

export interface RepositoryUnderTest {
  repository: FileRepository;
  /** Events written through the repository and not yet relayed, oldest first. */
  pendingEvents(): Promise<OutgoingEvent[]>;
}

const event = (key: string, text: string): OutgoingEvent => ({ topic: 'files.file.v1', key, payload: new TextEncoder().encode(text) });

/** The FileRepository port's contract; every adapter runs it with a fresh, empty store per test. */
export function describeFileRepositoryContract(name: string, factory: () => Promise<RepositoryUnderTest>): void {
  describe(`FileRepository contract: ${name}`, () => {
    let subject: RepositoryUnderTest;
    beforeEach(async () => {
      subject = await factory();
    });
    afterEach(async () => {
      await subject.repository.close();
    });

    it('create stores the record with its event; get returns it field for field', async () => {
      const file = aFile({ ocFilePath: '/docs/x.docx', tags: ['x', 'Heading One'] }).private().build();
      await subject.repository.create(file, [event(file.id, 'uploaded')]);
      expect(await subject.repository.get(file.id)).toEqual(file);
      const pending = await subject.pendingEvents();
      expect(pending.map((e) => [e.key, new TextDecoder().decode(e.payload)])).toEqual([[file.id, 'uploaded']]);
    });

    it('get of an unknown id is null', async () => {
      expect(await subject.repository.get(newId())).toBeNull();
    });

    it('a failed create (duplicate id) stores neither record nor event', async () => {
      const file = aFile().build();
      await subject.repository.create(file, [event(file.id, 'first')]);
      // Not .rejects.toThrow(): a native driver's error class may come from another jest realm.
      const outcome = await subject.repository.create({ ...file, fileName: 'other.pdf' }, [event(file.id, 'second')]).then(
        () => 'stored',
        () => 'refused',
      );
      expect(outcome).toBe('refused');
      expect((await subject.repository.get(file.id))?.fileName).toBe('notes.docx');
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual(['first']);
    });

    it('listByUser returns only that user\'s files, newest first', async () => {
      const owner = newId();
      const older = aFile().ownedBy(owner).createdAt(new Date('2026-01-01T00:00:00Z')).build();
      const newer = aFile().ownedBy(owner).createdAt(new Date('2026-02-01T00:00:00Z')).private().build();
      const other = aFile().build();
      for (const f of [older, newer, other]) await subject.repository.create(f, []);
      expect((await subject.repository.listByUser(owner)).map((f) => f.id)).toEqual([newer.id, older.id]);
      expect(await subject.repository.listByUser(newId())).toEqual([]);
    });

    it('setPrivacy changes the flag and updated_at, with its events only when the flag changes; false for an unknown id', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      const now = new Date('2026-03-03T03:03:03.333Z');
      expect(await subject.repository.setPrivacy(file.id, true, now, [event(file.id, 'private')])).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ private: true, updatedAt: now, createdAt: file.createdAt });
      expect(await subject.repository.setPrivacy(file.id, true, new Date(), [event(file.id, 'private again')])).toBe(true);
      expect(await subject.repository.setPrivacy(file.id, false, new Date(), [event(file.id, 'public')])).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ private: false });
      expect(await subject.repository.setPrivacy(newId(), true, now, [event(file.id, 'unknown')])).toBe(false);
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual(['private', 'public']);
    });

    it('setIngestion records the outcome; false once the record is gone', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      const collectionId = newId();
      expect(await subject.repository.setIngestion(file.id, { status: 'done', error: null, cardCount: 7, collectionId }, new Date())).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ ingestionStatus: 'done', ingestionError: null, cardCount: 7, collectionId });
      expect(await subject.repository.setIngestion(file.id, { status: 'failed', error: 'corrupt', cardCount: 0, collectionId: null }, new Date())).toBe(true);
      expect(await subject.repository.get(file.id)).toMatchObject({ ingestionStatus: 'failed', ingestionError: 'corrupt' });
      await subject.repository.delete(file.id, []);
      expect(await subject.repository.setIngestion(file.id, { status: 'done', error: null, cardCount: 1, collectionId }, new Date())).toBe(false);
    });

    it('delete removes the record and writes its event only when there was a record', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      expect(await subject.repository.delete(file.id, [event(file.id, 'deleted')])).toBe(true);
      expect(await subject.repository.get(file.id)).toBeNull();
      expect(await subject.repository.delete(file.id, [event(file.id, 'deleted again')])).toBe(false);
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual(['deleted']);
    });

    it('delete of one record raced by a second delete: one answers true, the other false, with one event', async () => {
      const file = aFile().build();
      await subject.repository.create(file, []);
      const results = await Promise.all([subject.repository.delete(file.id, [event(file.id, 'first')]), subject.repository.delete(file.id, [event(file.id, 'second')])]);
      expect([...results].sort()).toEqual([false, true]);
      expect(await subject.repository.get(file.id)).toBeNull();
      expect((await subject.pendingEvents()).map((e) => new TextDecoder().decode(e.payload))).toEqual([results[0] ? 'first' : 'second']);
    });
  });
}
