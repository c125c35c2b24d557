import { randomUUID } from 'node:crypto';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { SearchService } from '../src/application/search-service';
import type { Embedder } from '../src/domain/ports';
import { searchHandlers } from '../src/grpc/search-handlers';

/** IndexStats: how many searchable root cards the index holds (the cards service rebuilds an index found empty). */
describe('IndexStats', () => {
  const index = new SqliteCardIndex({ path: ':memory:', dimensions: 3 });
  const handlers = searchHandlers(new SearchService(index, {} as Embedder));
  afterAll(() => index.close());

  const card = (collisionOf?: string) => ({
    cardId: randomUUID(),
    authorId: randomUUID(),
    content: 'The river flooded the valley',
    tags: [],
    link: '',
    private: false,
    vector: new Float32Array([1, 0, 0]),
    vectorPointId: randomUUID(),
    updatedAt: new Date(),
    ...(collisionOf ? { collisionOf } : {}),
  });

  it('answers 0 for an empty index, then the root cards it holds (a collision is not searchable, a removed card gone)', async () => {
    const stats = () => (handlers.indexStats as (req: object, ctx: never) => Promise<{ cards: number }>)({}, undefined as never);
    await expect(stats()).resolves.toEqual({ cards: 0 });
    const [a, b] = [card(), card()];
    await index.upsert(a);
    await index.upsert(b);
    await index.upsert(card(a.cardId));
    await expect(stats()).resolves.toEqual({ cards: 2 });
    await index.remove(b.cardId, new Date());
    await expect(stats()).resolves.toEqual({ cards: 1 });
  });
});
