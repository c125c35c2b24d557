import { collisionMovesOnChange, mayHoldCollision } from '../src/domain/model';
import { aCard } from './builders';

describe('collisions and privacy (domain rule)', () => {
  it('a root may hold a card whose author may see it and that is not more visible than the root', () => {
    const alicePublic = aCard().by('alice').build();
    const alicePrivate = aCard().by('alice').private().build();
    expect(mayHoldCollision(alicePublic, { authorId: 'bob', private: false })).toBe(true);
    expect(mayHoldCollision(alicePublic, { authorId: 'bob', private: true })).toBe(true);
    expect(mayHoldCollision(alicePrivate, { authorId: 'alice', private: true })).toBe(true);
    // A public card behind a private root would vanish from search; another author would learn the private card exists.
    expect(mayHoldCollision(alicePrivate, { authorId: 'alice', private: false })).toBe(false);
    expect(mayHoldCollision(alicePrivate, { authorId: 'bob', private: true })).toBe(false);
    expect(mayHoldCollision(alicePrivate, { authorId: 'bob', private: false })).toBe(false);
  });

  it('a root made private keeps its author\'s private collisions; the oldest public one becomes the root of the rest', () => {
    const root = aCard().by('alice').private().build();
    const alicePrivate = aCard().by('alice').private().collisionOf(root.id).build();
    const bobPrivate = aCard().by('bob').private().collisionOf(root.id).build();
    const bobPublic = aCard().by('bob').collisionOf(root.id).build();
    const alicePublic = aCard().by('alice').collisionOf(root.id).build();
    const carolPublic = aCard().by('carol').collisionOf(root.id).build();
    expect(collisionMovesOnChange(root, [alicePrivate, bobPrivate, bobPublic, alicePublic, carolPublic])).toEqual([
      { cardId: bobPublic.id, collisionOf: null },
      { cardId: alicePublic.id, collisionOf: bobPublic.id },
      { cardId: carolPublic.id, collisionOf: bobPublic.id },
      { cardId: bobPrivate.id, collisionOf: bobPublic.id },
    ]);
  });

  it('with no public collision, other authors\' private collisions become roots, one per author', () => {
    const root = aCard().by('alice').private().build();
    const bob1 = aCard().by('bob').private().collisionOf(root.id).build();
    const carol = aCard().by('carol').private().collisionOf(root.id).build();
    const bob2 = aCard().by('bob').private().collisionOf(root.id).build();
    expect(collisionMovesOnChange(root, [bob1, carol, bob2])).toEqual([
      { cardId: bob1.id, collisionOf: null },
      { cardId: carol.id, collisionOf: null },
      { cardId: bob2.id, collisionOf: bob1.id },
    ]);
    expect(collisionMovesOnChange(root, [aCard().by('alice').private().collisionOf(root.id).build()])).toEqual([]);
  });
});
