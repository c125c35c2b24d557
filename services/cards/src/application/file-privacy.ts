import { InvalidArgumentError, NotFoundError } from '@cards/platform';
import { privacyAfterFileChange, type Card, type Collection } from '../domain/model';
import type { CardRepository, CollectionRepository } from '../domain/ports';
import { datedAfter, VERSIONED_WRITE_ATTEMPTS } from './events';

/** Whose decision a privacy change is: the card's owner's own, or the consequence of its file's privacy change. */
export type PrivacyChangedBy = 'owner' | 'file';

/** Whether the card is private because its file is (hidden by the file), not by its owner's choice. */
export const isHiddenByFile = (card: Card) => card.hiddenByFile === true;

/** A card's privacy and mark after a privacy change asked for by its owner or by its file. */
export function privacyAfterChange(card: Card, requested: boolean, by: PrivacyChangedBy): { private: boolean; hiddenByFile: boolean } {
  // The owner's own choice wins over the file's: it clears the mark, so the file made public leaves the card as chosen.
  return by === 'owner' ? { private: requested, hiddenByFile: false } : privacyAfterFileChange(card, requested);
}

export interface FilePrivacyDeps {
  cards: Pick<CardRepository, 'findByFile' | 'clearFileReferences' | 'setFilePrivacy'>;
  collections: Pick<CollectionRepository, 'findByFileId' | 'update'>;
  /** The card service's own update of one card's privacy, made by the file (PrivacyChangedBy 'file'). */
  changeCardPrivacy: (cardId: string) => Promise<void>;
  now: () => Date;
}

/**
 * The owner changed a file's privacy. Cards made from a file say what it holds, so a file made private hides the
 * owner's public cards carrying it, marking each as hidden by the file; made public, it gives back only the cards it
 * hid (privacyAfterFileChange), so a card its owner made private stays private. Each goes through the same update as
 * a card's own privacy change (collisions re-homed, vote counters moved, search told). A duplicate it hid comes back
 * too, under its root when the root may hold it public, else as a root of its own (the owner alone may not publish a
 * private duplicate). The file's collection is public exactly when the file is. Other users' cards citing a file made private
 * lose the reference, as they would lose it if the file were deleted: they may no longer see it, nor anyone else its
 * name. First of all every card carrying the file records its privacy, so a card public by its owner's choice shows a
 * private file's id and name to its owner only (withFileShownTo). Running it again changes nothing.
 */
export async function followFilePrivacy(deps: FilePrivacyDeps, fileId: string, ownerId: string, isPrivate: boolean): Promise<void> {
  await deps.cards.setFilePrivacy(fileId, isPrivate);
  for (const card of await deps.cards.findByFile(fileId)) {
    const after = privacyAfterFileChange(card, isPrivate);
    if (card.authorId !== ownerId || (after.private === card.private && after.hiddenByFile === isHiddenByFile(card))) continue;
    try {
      await deps.changeCardPrivacy(card.id);
    } catch (err) {
      if (err instanceof NotFoundError) continue;
      if (err instanceof InvalidArgumentError && !isPrivate) continue;
      throw err;
    }
  }
  if (isPrivate) await deps.cards.clearFileReferences(fileId, ownerId);
  await setCollectionPrivacy(
    deps,
    () => deps.collections.findByFileId(fileId),
    (collection) => (collection.authorId === ownerId ? !isPrivate : undefined),
  );
}

/**
 * Gives the collection `read` answers the privacy `wanted` asks of it as read (undefined: none; nothing is written
 * when it is so already, nor when there is no collection), and answers the collection as read when it wrote, else null. The file's doing, not
 * the caller's, so never refused: written on the version read and dated after it, as an update without If-Match is
 * (CollectionService.update): a change landing between the read and the write (a rename, from a clock behind, dated
 * right after the same version) fails the write, and the collection is read and judged again. Written without that
 * check, both were dated the same, two states under one ETag, and an If-Match naming the rename's matched the
 * collection made private after it. Past VERSIONED_WRITE_ATTEMPTS such losses the privacy is written on whatever
 * version is there (a private file's name must not stay public while others keep changing the collection), still as
 * a version of its own: a write without ifUpdatedAt stores one after the stored version (versionAfterStored, in the
 * repository's own step), so the change that won the last race keeps its ETag to itself and an If-Match naming it is
 * refused (before, the privacy was written under that change's version).
 */
export async function setCollectionPrivacy(
  deps: { collections: Pick<CollectionRepository, 'update'>; now: () => Date },
  read: () => Promise<Collection | null>,
  wanted: (collection: Collection) => boolean | undefined,
): Promise<Collection | null> {
  for (let attempt = 1; ; attempt++) {
    const collection = await read();
    const isPublic = collection ? wanted(collection) : undefined;
    if (!collection || isPublic === undefined || isPublic === collection.isPublic) return null;
    const onVersion = attempt < VERSIONED_WRITE_ATTEMPTS ? { ifUpdatedAt: collection.updatedAt } : {};
    if (await deps.collections.update(collection.id, { isPublic, updatedAt: datedAfter(collection.updatedAt, deps.now()), ...onVersion }, [])) return collection;
    // Past the attempts, a collection deleted meanwhile (nothing written): nothing to change.
    if (attempt >= VERSIONED_WRITE_ATTEMPTS) return null;
  }
}
