import { randomUUID } from 'node:crypto';
import { NotFoundError, UnavailableError } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { CardService } from '../src/application/card-service';
import type { VisibleFile } from '../src/domain/ports';
import { someContent } from './builders';
import { sqliteCardServiceDeps } from './uninvolved-deps';

/**
 * A card created with `file_uuid` while that file is deleted or changes privacy. The files service's event of the
 * change is applied by the cards service (clearFileReferences, applyFilePrivacy) at any moment after the change; here
 * it is applied while the create is between its file check and its insert (during the near-duplicate lookup), the
 * interleaving a burst of creates racing a DELETE /api/file showed from outside: cards naming a deleted file for good.
 */
function setup() {
  const db = openCardsDatabase(':memory:');
  const files = new Map<string, VisibleFile & { ownerId: string }>();
  let changeDuringLookup: (() => Promise<void>) | null = null;
  const filesService = { answering: true };
  const deps = {
    ...sqliteCardServiceDeps(db),
    files: {
      visibleFile: async (id: string, callerId: string): Promise<VisibleFile | null> => {
        if (!filesService.answering) throw new UnavailableError('files: connect ECONNREFUSED');
        const file = files.get(id);
        return file && (!file.private || file.ownerId === callerId) ? { name: file.name, private: file.private } : null;
      },
    },
    nearDuplicates: {
      find: async () => {
        const change = changeDuringLookup;
        changeDuringLookup = null;
        await change?.();
        return [];
      },
    },
  };
  const service = new CardService(deps);
  /** The file changes (as the files service stores it) and its event is applied, while the next create is under way. */
  const whileNextCreateChecks = (change: () => Promise<void>) => {
    changeDuringLookup = change;
  };
  const create = (callerId: string, fileId: string) =>
    service.createCard({ callerId, cardHtml: `<p>${someContent()}</p>`, link: '', private: false, tags: [], fileId });
  return { service, files, filesService, whileNextCreateChecks, create };
}

describe('a card created while the file it cites changes', () => {
  it('does not keep naming a file deleted between its check and its insert', async () => {
    const { service, files, whileNextCreateChecks, create } = setup();
    const fileId = randomUUID();
    files.set(fileId, { name: 'report.docx', private: false, ownerId: 'alice' });
    whileNextCreateChecks(async () => {
      files.delete(fileId);
      await service.clearFileReferences(fileId);
    });

    const { card } = await create('alice', fileId);

    expect(card).toMatchObject({ fileId: null, fileName: null });
    expect(await service.getCard(card.id, 'alice')).toMatchObject({ fileId: null, fileName: null });
  });

  it("does not keep naming someone else's file made private between its check and its insert", async () => {
    const { service, files, whileNextCreateChecks, create } = setup();
    const fileId = randomUUID();
    files.set(fileId, { name: 'secret plans.docx', private: false, ownerId: 'alice' });
    whileNextCreateChecks(async () => {
      files.get(fileId)!.private = true;
      await service.applyFilePrivacy(fileId, 'alice', true);
    });

    const { card } = await create('bob', fileId);

    expect(await service.getCard(card.id, 'bob')).toMatchObject({ fileId: null, fileName: null, private: false });
    expect(await service.getCard(card.id, 'carol')).toMatchObject({ fileId: null, fileName: null });
  });

  it('is hidden with the rest of its file when its owner makes the file private between its check and its insert', async () => {
    const { service, files, whileNextCreateChecks, create } = setup();
    const fileId = randomUUID();
    files.set(fileId, { name: 'draft.docx', private: false, ownerId: 'alice' });
    whileNextCreateChecks(async () => {
      files.get(fileId)!.private = true;
      await service.applyFilePrivacy(fileId, 'alice', true);
    });

    const { card } = await create('alice', fileId);

    expect(card).toMatchObject({ private: true, fileId, filePrivate: true });
    await expect(service.getCard(card.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
    // Made public again, the file gives the card back, as it does every card it hid.
    files.get(fileId)!.private = false;
    await service.applyFilePrivacy(fileId, 'alice', false);
    expect(await service.getCard(card.id, 'bob')).toMatchObject({ private: false, fileId, fileName: 'draft.docx' });
  });

  it("keeps someone else's file made private a moment ago and public again before its check, that change's event not applied yet", async () => {
    const { service, files, create } = setup();
    const fileId = randomUUID();
    files.set(fileId, { name: 'plans.docx', private: true, ownerId: 'alice' });
    await service.applyFilePrivacy(fileId, 'alice', true);
    // Public again in the files service; the event of that change is still on its way to cards.
    files.get(fileId)!.private = false;

    const { card } = await create('bob', fileId);
    await service.applyFilePrivacy(fileId, 'alice', false);

    // Before: the note of the change to private (read from 5 s before the check) took the public file from the card for good.
    expect(card).toMatchObject({ fileId, fileName: 'plans.docx', private: false });
    expect(await service.getCard(card.id, 'bob')).toMatchObject({ fileId, fileName: 'plans.docx' });
    expect(await service.getCard(card.id, 'carol')).toMatchObject({ fileId, fileName: 'plans.docx' });
  });

  describe('with the files service no longer answering once the change is made (stopped, restarting)', () => {
    it('does not keep naming a file deleted between its check and its insert', async () => {
      const { service, files, filesService, whileNextCreateChecks, create } = setup();
      const fileId = randomUUID();
      files.set(fileId, { name: 'report.docx', private: false, ownerId: 'alice' });
      whileNextCreateChecks(async () => {
        files.delete(fileId);
        await service.clearFileReferences(fileId);
        filesService.answering = false;
      });

      const { card } = await create('alice', fileId);

      expect(card).toMatchObject({ fileId: null, fileName: null });
      expect(await service.getCard(card.id, 'alice')).toMatchObject({ fileId: null, fileName: null });
    });

    it("does not keep naming someone else's file made private, and hides the owner's card with its file made private", async () => {
      const { service, files, filesService, whileNextCreateChecks, create } = setup();
      const [othersFile, ownFile] = [randomUUID(), randomUUID()];
      files.set(othersFile, { name: 'secret plans.docx', private: false, ownerId: 'alice' });
      files.set(ownFile, { name: 'draft.docx', private: false, ownerId: 'alice' });
      whileNextCreateChecks(async () => {
        files.get(othersFile)!.private = true;
        await service.applyFilePrivacy(othersFile, 'alice', true);
        filesService.answering = false;
      });
      const { card: bobs } = await create('bob', othersFile);
      filesService.answering = true;
      whileNextCreateChecks(async () => {
        files.get(ownFile)!.private = true;
        await service.applyFilePrivacy(ownFile, 'alice', true);
        filesService.answering = false;
      });
      const { card: alices } = await create('alice', ownFile);

      expect(await service.getCard(bobs.id, 'bob')).toMatchObject({ fileId: null, fileName: null, private: false });
      expect(alices).toMatchObject({ private: true, fileId: ownFile, filePrivate: true });
      await expect(service.getCard(alices.id, 'bob')).rejects.toBeInstanceOf(NotFoundError);
    });

    it('keeps the file it cites when nothing changed', async () => {
      const { files, filesService, whileNextCreateChecks, create } = setup();
      const fileId = randomUUID();
      files.set(fileId, { name: 'report.docx', private: false, ownerId: 'alice' });
      whileNextCreateChecks(async () => {
        filesService.answering = false;
      });

      const { card } = await create('bob', fileId);

      expect(card).toMatchObject({ fileId, fileName: 'report.docx', private: false });
    });
  });

  it('keeps the file it cites when nothing changed', async () => {
    const { files, create } = setup();
    const fileId = randomUUID();
    files.set(fileId, { name: 'report.docx', private: false, ownerId: 'alice' });

    const { card } = await create('bob', fileId);

    expect(card).toMatchObject({ fileId, fileName: 'report.docx', private: false });
  });
});
