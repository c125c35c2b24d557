import { randomUUID } from 'node:crypto';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { CardService } from '../src/application/card-service';
import { CollectionService, type CardCollections } from '../src/application/collection-service';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, aCollection, nextTime } from './builders';
import { uninvolvedCardServiceDeps } from './uninvolved-deps';

/** The collection use cases on a real SQLite store. */
function setup(lookupPageBytes?: number) {
  const db = openCardsDatabase(':memory:');
  const cards = new SqliteCardRepository(db);
  const collections = new SqliteCollectionRepository(db);
  const cardService = new CardService({
    ...uninvolvedCardServiceDeps,
    cards,
    votes: new SqliteVoteRepository(db),
    collections,
    contentLock: new InProcessContentLock(),
    eventsWritten: () => undefined,
  });
  return { cards, collections, service: new CollectionService({ collections, cards, cardService, files: uninvolvedCardServiceDeps.files, eventsWritten: () => undefined, lookupPageBytes }) };
}

describe('the bookmark lookup in pages (FindCardCollections page_size / page_token)', () => {
  it('answers the same entries as one answer, in order, pages of at most page_size cards', async () => {
    const { cards, collections, service } = setup();
    const owner = randomUUID();
    const stored = Array.from({ length: 7 }, () => aCard().build());
    for (const card of stored) await cards.insert(card, fingerprintOf(card.content), []);
    const holder = aCollection().by(owner).build();
    await collections.insert(holder, []);
    for (const card of stored.slice(0, 4)) await collections.addBookmark(holder.id, card.id, nextTime(), []);
    const asked = [...stored.map((c) => c.id), stored[0]!.id, randomUUID()];

    const whole = await service.findCardCollections(owner, asked);
    expect(whole.next).toBeUndefined();
    expect(whole.items.map((e) => e.cardId)).toEqual([...stored.map((c) => c.id), asked[8]]);
    const pages: CardCollections[][] = [];
    let token = '';
    do {
      const page = await service.findCardCollections(owner, asked, 3, token);
      pages.push(page.items);
      token = page.next ?? '';
    } while (token !== '');
    expect(pages.map((p) => p.length)).toEqual([3, 3, 2]);
    expect(pages.flat()).toEqual(whole.items);
  });

  it('ends a page early once its collection ids pass the byte budget, always answering at least one card', async () => {
    // Ten collection ids' worth, as gRPC's limit is some 220,000.
    const { cards, collections, service } = setup(10 * 38);
    const owner = randomUUID();
    const root = aCard().build();
    await cards.insert(root, fingerprintOf(root.content), []);
    const copies = Array.from({ length: 3 }, () => aCard().collisionOf(root.id).build());
    for (const copy of copies) await cards.insert(copy, fingerprintOf(copy.content), []);
    // Every card of the group answers every holder: two cards' answers pass the budget, one does not.
    const holders = 6;
    for (let i = 0; i < holders; i++) {
      const c = aCollection().by(owner).build();
      await collections.insert(c, []);
      await collections.addBookmark(c.id, root.id, c.createdAt, []);
    }
    const asked = [root.id, ...copies.map((c) => c.id)];
    const seen: number[] = [];
    let token = '';
    do {
      const page = await service.findCardCollections(owner, asked, 500, token);
      seen.push(page.items.length);
      expect(page.items.every((e) => e.collectionIds.length === holders)).toBe(true);
      token = page.next ?? '';
    } while (token !== '');
    expect(seen).toEqual([1, 1, 1, 1]);
  });

  it('refuses a bad page_size or page_token naming the field', async () => {
    const { service } = setup();
    const asked = [randomUUID(), randomUUID()];
    await expect(service.findCardCollections('u', asked, -1)).rejects.toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('page_size') }));
    for (const token of ['0', '2', '01', 'x', '-1', '1.5']) {
      await expect(service.findCardCollections('u', asked, 1, token)).rejects.toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('page_token') }));
    }
    expect((await service.findCardCollections('u', asked, 1, '1')).items.map((e) => e.cardId)).toEqual([asked[1]]);
  });
});
