import { randomUUID } from 'node:crypto';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { SearchService } from '../src/application/search-service';
import { sharedWinkEmbedder } from './shared-model';

/**
 * A semantic query made only of words the bundled model does not know (product names, rare terms) embeds to the zero
 * vector: it is answered by its words, as a full-text search in the same scope, instead of finding nothing while the
 * card that says them is there.
 */
describe('semantic search of words the embedder does not know', () => {
  const index = new SqliteCardIndex({ path: ':memory:', dimensions: 100 });
  const service = new SearchService(index, sharedWinkEmbedder());
  const alice = randomUUID();
  const bob = randomUUID();
  const ids = new Map<string, string>();
  const page = (query: string, callerId?: string, tags: string[] = []) => ({ query, tags, links: [], callerId, page: 1, pageSize: 25 });

  beforeAll(async () => {
    const cards = [
      { key: 'kubernetes', author: alice, private: false, tags: ['ops'], content: 'Kubernetes operators reconcile the desired state of a cluster with what is running, restarting pods that fail' },
      { key: 'grafana', author: alice, private: true, tags: [], content: 'Grafana dashboards chart the latency of every service next to its error rate' },
      { key: 'river', author: bob, private: false, tags: [], content: 'The river flooded the valley after a week of heavy rain in the mountains' },
      { key: 'bread', author: bob, private: false, tags: [], content: 'Bakers knead the dough, let it rise overnight and bake the bread in a hot oven' },
      { key: 'waves', author: bob, private: false, tags: [], content: 'Surf report for Saturday 🌊🔥 the swell is back' },
    ];
    const vectors = await sharedWinkEmbedder().embed(cards.map((c) => c.content));
    for (const [i, card] of cards.entries()) {
      const cardId = randomUUID();
      ids.set(card.key, cardId);
      await index.upsert({ cardId, authorId: card.author, content: card.content, tags: card.tags, link: '', private: card.private, vector: vectors[i]!, vectorPointId: randomUUID(), updatedAt: new Date() });
    }
  }, 120_000);
  afterAll(() => index.close());

  test('the query embeds to nothing the model knows, yet the card saying the word is found first', async () => {
    const [vector] = await sharedWinkEmbedder().embed(['Kubernetes']);
    expect(vector!.every((v) => v === 0)).toBe(true);
    const result = await service.semanticSearch(page('Kubernetes'));
    expect(result.hits.map((h) => h.cardId)).toEqual([ids.get('kubernetes')]);
    expect(result.totalPages).toBe(1);
  });

  test('visibility and filters hold: a private card reaches its author only, a tag filter still applies', async () => {
    expect((await service.semanticSearch(page('Grafana'))).hits).toEqual([]);
    expect((await service.semanticSearch(page('Grafana', bob))).hits).toEqual([]);
    expect((await service.semanticSearch(page('Grafana', alice))).hits.map((h) => h.cardId)).toEqual([ids.get('grafana')]);
    expect((await service.semanticSearch(page('Kubernetes', undefined, ['other']))).hits).toEqual([]);
    expect((await service.semanticSearch(page('Kubernetes', undefined, ['ops']))).hits.map((h) => h.cardId)).toEqual([ids.get('kubernetes')]);
  });

  test('a query with a known word stays semantic; one with no word at all finds nothing', async () => {
    const flood = await service.semanticSearch(page('water overflowing its banks'));
    expect(flood.hits[0]!.cardId).toBe(ids.get('river'));
    expect(flood.hits.length).toBeGreaterThan(1);
    expect(await service.semanticSearch(page('!!!'))).toEqual({ hits: [], totalHits: 0, totalPages: 0 });
  });

  test('a query of emoji alone embeds to nothing and finds the card holding them, as full-text search does', async () => {
    const [vector] = await sharedWinkEmbedder().embed(['🌊🔥']);
    expect(vector!.every((v) => v === 0)).toBe(true);
    expect((await service.semanticSearch(page('🌊🔥'))).hits.map((h) => h.cardId)).toEqual([ids.get('waves')]);
    expect((await service.semanticSearch(page('🐙'))).hits).toEqual([]);
  });
});
