import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '@cards/platform';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../src/adapters/sqlite/sqlite-vote-repository';
import { InProcessContentLock } from '../src/adapters/in-process/in-process-content-lock';
import { cardMessageBytes } from '../src/application/card-groups';
import { CardService, type ViewedGroup } from '../src/application/card-service';
import type { Card } from '../src/domain/model';
import { fingerprintOf } from '../src/domain/rules';
import { aCard, nextTime } from './builders';
import { uninvolvedCardServiceDeps } from './uninvolved-deps';

function setup() {
  const db = openCardsDatabase(':memory:');
  const cards = new SqliteCardRepository(db);
  const votes = new SqliteVoteRepository(db);
  const service = new CardService({
    ...uninvolvedCardServiceDeps,
    cards,
    votes,
    collections: new SqliteCollectionRepository(db),
    contentLock: new InProcessContentLock(),
    eventsWritten: () => undefined,
  });
  const store = async (card: Card) => {
    await cards.insert(card, fingerprintOf(card.content), []);
    return card;
  };
  return { service, votes, store };
}

const viewer = randomUUID();
const shape = (groups: readonly ViewedGroup[]) => groups.map((g) => [g.root.id, g.root.viewerVote, ...g.collisions.map((c) => [c.id, c.viewerVote])]);

/** Every part read one after the other and put together as the gateway does; also each part's card bytes. */
async function readInParts(service: CardService, cardIds: readonly string[], maxBytes: number) {
  const groups: ViewedGroup[] = [];
  const partBytes: number[] = [];
  let pageToken = '';
  do {
    const part = await service.getCardGroupsPart(cardIds, viewer, maxBytes, pageToken);
    partBytes.push(part.groups.reduce((sum, g) => sum + [g.root, ...g.collisions].reduce((s, c) => s + cardMessageBytes(c), 0), 0));
    for (const g of part.groups) {
      const last = groups[groups.length - 1];
      if (last && last.root.id === g.root.id) last.collisions.push(...g.collisions);
      else groups.push({ root: g.root, collisions: [...g.collisions] });
    }
    pageToken = part.next ?? '';
  } while (pageToken !== '' && partBytes.length < 10_000);
  return { groups, partBytes };
}

/** Three roots: a few collisions each, one with more than one read takes (hidden ones among them), one with none. */
async function seed() {
  const s = setup();
  const [a, big, lonely] = [await s.store(aCard().build()), await s.store(aCard().build()), await s.store(aCard().build())];
  const aCopies = [await s.store(aCard().collisionOf(a.id).build()), await s.store(aCard().collisionOf(a.id).by(viewer).private().build())];
  await s.store(aCard().collisionOf(a.id).private().build());
  const bigCopies: Card[] = [];
  for (let i = 0; i < 450; i++) {
    const copy = await s.store(i % 7 === 3 ? aCard().collisionOf(big.id).private().build() : aCard().collisionOf(big.id).build());
    if (i % 7 !== 3) bigCopies.push(copy);
  }
  await s.votes.upsert(viewer, bigCopies[300]!.id, true, nextTime(), randomUUID());
  await s.votes.upsert(viewer, a.id, false, nextTime(), randomUUID());
  // Asked by a collision's id, a root's own id, and again: each root once, at the place of its first card.
  const cardIds = [aCopies[0]!.id, big.id, a.id, lonely.id, bigCopies[5]!.id];
  return { ...s, a, big, lonely, aCopies, bigCopies, cardIds };
}

describe('card groups in parts', () => {
  it('answers in one part, the same as the unbounded read, when the groups fit', async () => {
    const { service, a, big, lonely, aCopies, bigCopies, cardIds } = await seed();
    const whole = await service.getCardGroups(cardIds, viewer);
    expect(whole.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([
      [a.id, aCopies.map((c) => c.id)],
      [big.id, bigCopies.map((c) => c.id)],
      [lonely.id, []],
    ]);
    const part = await service.getCardGroupsPart(cardIds, viewer, 4 * 1024 * 1024, '');
    expect(part.next).toBeUndefined();
    expect(shape(part.groups)).toEqual(shape(whole));
  });

  it('answers in parts within the size asked that put together give exactly the unbounded answer, votes included', async () => {
    const { service, cardIds, bigCopies } = await seed();
    const whole = await service.getCardGroups(cardIds, viewer);
    const card = cardMessageBytes(bigCopies[0]!);
    for (const maxBytes of [1, card * 3, card * 40, card * 300]) {
      const { groups, partBytes } = await readInParts(service, cardIds, maxBytes);
      expect(shape(groups)).toEqual(shape(whole));
      expect(partBytes.length).toBeGreaterThan(1);
      // A part holds at least one card the part before did not (a cut group's root comes again with it).
      for (const bytes of partBytes) expect(bytes).toBeLessThanOrEqual(Math.max(maxBytes, 2 * card + 200));
    }
  });

  it('cuts inside a group read whole (a handful of collisions each) and goes on from there', async () => {
    const { service, store } = setup();
    const roots = [await store(aCard().build()), await store(aCard().build())];
    const copies = [];
    for (const root of roots) for (let i = 0; i < 5; i++) copies.push(await store(aCard().collisionOf(root.id).build()));
    const ids = roots.map((r) => r.id);
    const maxBytes = [roots[0]!, ...copies.slice(0, 2)].reduce((sum, c) => sum + cardMessageBytes(c), 0);
    const first = await service.getCardGroupsPart(ids, viewer, maxBytes, '');
    expect(first.groups.map((g) => [g.root.id, g.collisions.length])).toEqual([[roots[0]!.id, 2]]);
    const { groups } = await readInParts(service, ids, maxBytes);
    expect(groups.map((g) => [g.root.id, g.collisions.map((c) => c.id)])).toEqual([
      [roots[0]!.id, copies.slice(0, 5).map((c) => c.id)],
      [roots[1]!.id, copies.slice(5).map((c) => c.id)],
    ]);
  });

  it("names the user page's cards past the size asked instead of sending them, at least one sent", async () => {
    const { service, store } = setup();
    const author = randomUUID();
    const cards: Card[] = [];
    for (let i = 0; i < 5; i++) cards.unshift(await store(aCard().by(author).build()));
    const ids = cards.map((c) => c.id);
    const whole = await service.listUserCards(author, viewer, 1);
    expect(whole.cards.map((c) => c.id)).toEqual(ids);
    expect(whole.restCardIds).toEqual([]);
    const twoFit = cardMessageBytes(cards[0]!) + cardMessageBytes(cards[1]!);
    const cut = await service.listUserCards(author, viewer, 1, twoFit);
    expect([cut.cards.map((c) => c.id), cut.restCardIds]).toEqual([ids.slice(0, 2), ids.slice(2)]);
    expect(cut.totalCardsCreated).toBe(5);
    const tiny = await service.listUserCards(author, viewer, 1, 1);
    expect([tiny.cards.map((c) => c.id), tiny.restCardIds]).toEqual([ids.slice(0, 1), ids.slice(1)]);
    await expect(service.listUserCards(author, viewer, 1, -1)).rejects.toThrow(new InvalidArgumentError('max_bytes: must be 0 or more'));
  });

  it('refuses a negative size and a token it did not give for these card ids', async () => {
    const { service, cardIds } = await seed();
    await expect(service.getCardGroupsPart(cardIds, viewer, -1, '')).rejects.toThrow(new InvalidArgumentError('max_bytes: must be 0 or more'));
    for (const token of ['x', '5', '01', '-1', '2_garbage', `2_1_${randomUUID().toUpperCase()}`]) {
      await expect(service.getCardGroupsPart(cardIds, viewer, 1000, token)).rejects.toThrow(expect.objectContaining({ name: 'InvalidArgumentError', message: expect.stringContaining('page_token') }));
    }
  });
});
