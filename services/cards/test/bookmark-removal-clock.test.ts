import { createLogger, SqliteOutboxStore, Topics } from '@cards/platform';
import { events } from '@cards/proto';
import { SqliteCardIndex } from '../../search/src/adapters/sqlite/sqlite-card-index';
import { IndexProjector } from '../../search/src/application/index-projector';
import type { Embedder } from '../../search/src/domain/ports';
import { openCardsDatabase } from '../src/adapters/sqlite/sqlite-cards-database';
import { CardService } from '../src/application/card-service';
import { CollectionService } from '../src/application/collection-service';
import { someContent } from './builders';
import { sqliteCardServiceDeps } from './uninvolved-deps';

/** Collection services on one SQLite store (`replica()`: another cards process on it), and the events they stored. */
function setup() {
  const db = openCardsDatabase(':memory:');
  const deps = sqliteCardServiceDeps(db);
  const cardService = new CardService(deps);
  const collectionDeps: ConstructorParameters<typeof CollectionService>[0] = { ...deps, cardService, eventsWritten: () => undefined };
  const outbox = new SqliteOutboxStore(db);
  /** The events stored since the last call, taken out of the outbox as its relay would. */
  const relayed = async () => {
    const pending = await outbox.pending(1000);
    await outbox.remove(pending.map((e) => e.id));
    return pending;
  };
  return { cardService, service: new CollectionService(collectionDeps), replica: () => new CollectionService(collectionDeps), relayed };
}

/** Every text the same vector: only the bookmarks matter here. */
const flat: Embedder = {
  id: 'flat',
  dimensions: 3,
  ready: async () => undefined,
  embed: async (texts) => texts.map(() => new Float32Array([1, 0, 0])),
  orderAware: true,
  duplicateThreshold: () => 0.99,
};

// Search orders the changes of one bookmark by their events' time and drops one older than what it holds: a removal
// made on a replica whose clock is behind the one that added the bookmark (within the skew, or after a clock set back
// and a restart) must still be dated later, or the card stays in the collection's search results for good.
describe('a bookmark removed on a replica whose clock is behind the one that added it', () => {
  afterEach(() => jest.useRealTimers());

  it('is dated after the addition, and search takes the card out of the collection', async () => {
    const { cardService, service, replica, relayed } = setup();
    const { card } = await cardService.createCard({ callerId: 'alice', cardHtml: `<p>${someContent()}</p>`, link: '', private: false, tags: [] });
    const collection = await service.create('alice', 'Mine', '', true);
    const index = new SqliteCardIndex({ path: ':memory:', dimensions: flat.dimensions, embedderId: flat.id });
    const search = new IndexProjector(index, flat, { publish: async () => undefined }, createLogger('search-test', 'silent'));
    const project = async () => {
      const delivered = await relayed();
      await search.handleBatch(delivered);
      return delivered.filter((e) => e.topic === Topics.bookmark).map((e) => events.BookmarkEvent.decode(e.payload));
    };

    // Only Date is faked (the clocks of the two replicas); timers and the event loop run as they are.
    const real = Date.now();
    jest.useFakeTimers({ doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'requestAnimationFrame', 'cancelAnimationFrame', 'requestIdleCallback', 'cancelIdleCallback', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'], now: real + 60_000 });
    await service.addBookmark('alice', collection.id, card.id);
    const [added] = await project();
    expect((await index.get(card.id))?.collectionIds).toEqual([collection.id]);

    jest.setSystemTime(real + 1_000);
    await replica().removeBookmark('alice', collection.id, card.id);
    const [removed] = await project();
    expect(removed).toMatchObject({ collectionId: collection.id, cardId: card.id, added: false });
    expect(removed!.occurredAt!.getTime()).toBeGreaterThan(added!.occurredAt!.getTime());
    expect((await index.get(card.id))?.collectionIds).toEqual([]);
  });
});
