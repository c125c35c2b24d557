import type { CardRepository, CollectionRepository, FileDirectory, OneTimeTasks } from '../domain/ports';
import { setCollectionPrivacy } from './file-privacy';

/** The name the backfill is recorded under once done (OneTimeTasks). */
export const FILE_PRIVACY_BACKFILL = 'file-privacy-from-files-service';

/** Cards or collections read at a time. */
const PAGE = 200;

export interface FilePrivacyBackfillDeps {
  cards: Pick<CardRepository, 'pageAll' | 'setFilePrivacy'>;
  collections: Pick<CollectionRepository, 'pageFileCollections' | 'findByFileId' | 'update'>;
  files: FileDirectory;
  tasks: OneTimeTasks;
  now: () => Date;
}

/**
 * Cards stored before each card kept its file's privacy (Card.filePrivate) were given it by a migration from the file's
 * collection, else from their hidden-by-file mark, so a public card of a private file with no collection (or whose
 * collection its owner had published by hand) still showed the file's id and name to everyone; and a file's collection
 * published by hand while the file was private showed them too. Once per store, the privacy of every file a card or a
 * collection carries is asked of the files service (GetFile, as its owner where the collection or a card tells who
 * that is: a private file answers its owner only) and recorded on all its cards (setFilePrivacy); the collection of a
 * private file is made private (docs/files.md: public exactly when the file is). The cards' own privacy is left as it
 * is: a card public by its owner's choice stays public and shows the file to its owner only. A file no one may see
 * (deleted) is passed over: its references are cleared by its deletion. Idempotent; answers how many files it asked
 * about (0 when done before), and throws (UnavailableError) while the files service cannot answer: run it again later.
 */
export async function backfillFilePrivacy(deps: FilePrivacyBackfillDeps): Promise<number> {
  if (await deps.tasks.isDone(FILE_PRIVACY_BACKFILL)) return 0;
  // Each file with the users to ask as: its collection's author (the owner) first.
  const carriers = new Map<string, Set<string>>();
  const carried = (fileId: string, authorId: string) => {
    const authors = carriers.get(fileId) ?? new Set<string>();
    carriers.set(fileId, authors.add(authorId));
  };
  let after: string | undefined;
  do {
    const page = await deps.collections.pageFileCollections(PAGE, after);
    for (const c of page.items) if (c.fileId) carried(c.fileId, c.authorId);
    after = page.next;
  } while (after !== undefined);
  do {
    const page = await deps.cards.pageAll(PAGE, after);
    for (const c of page.items) if (c.fileId) carried(c.fileId, c.authorId);
    after = page.next;
  } while (after !== undefined);
  for (const [fileId, authors] of carriers) await recordFilePrivacy(deps, fileId, [...authors]);
  await deps.tasks.markDone(FILE_PRIVACY_BACKFILL, deps.now());
  return carriers.size;
}

/** The file's privacy as the first of `askAs` who may see it is told; null when none may (the file is gone). */
async function privacyOf(files: FileDirectory, fileId: string, askAs: readonly string[]): Promise<boolean | null> {
  for (const callerId of askAs) {
    const file = await files.visibleFile(fileId, callerId);
    if (file) return file.private;
  }
  return null;
}

/**
 * Records the file's privacy on its cards and collection, then reads it again: a privacy change stored and applied
 * while this ran would be overwritten with the older value, so the newer one is recorded in its turn.
 */
async function recordFilePrivacy(deps: FilePrivacyBackfillDeps, fileId: string, askAs: readonly string[]): Promise<void> {
  let isPrivate = await privacyOf(deps.files, fileId, askAs);
  let hidCollection: string | null = null;
  for (let round = 0; isPrivate !== null && round < 5; round++) {
    await deps.cards.setFilePrivacy(fileId, isPrivate);
    // Hidden while the file is private; made public again when its file was made public meanwhile, as its file's change
    // had made it before this round hid it. Written on the version read, dated after it, as every collection change (a
    // stale If-Match must not match it).
    const fileIsPrivate = isPrivate;
    const changed = await setCollectionPrivacy(
      deps,
      () => deps.collections.findByFileId(fileId),
      (collection) => (fileIsPrivate ? false : hidCollection === collection.id ? true : undefined),
    );
    if (changed) hidCollection = isPrivate ? changed.id : null;
    const now = await privacyOf(deps.files, fileId, askAs);
    if (now === isPrivate) return;
    isPrivate = now;
  }
}
