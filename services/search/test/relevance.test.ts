import { randomUUID } from 'node:crypto';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { SearchService } from '../src/application/search-service';
import { words } from '../src/domain/text';
import { LABELLED_CARDS } from './fixtures/labelled-cards';
import { sharedWinkEmbedder } from './shared-model';

/** Distractors made of the labelled cards' own words in random order: they share vocabulary but say nothing. */
function distractors(count: number): string[] {
  const pool = LABELLED_CARDS.flatMap((c) => words(c.content));
  let seed = 7;
  const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  return Array.from({ length: count }, () => Array.from({ length: 80 }, () => pool[Math.floor(random() * pool.length)]!).join(' '));
}

interface Metrics {
  recallAt10: number;
  mrr: number;
}

/**
 * Relevance on the labelled set: each card has one known relevant query per search kind (a paraphrase sharing few
 * words for semantic search, a misspelled one for full-text search), among 200 distractor cards.
 */
describe('relevance on the labelled set', () => {
  const index = new SqliteCardIndex({ path: ':memory:', dimensions: 100 });
  const service = new SearchService(index, sharedWinkEmbedder());
  const idOf = new Map<string, string>();
  let corpusSize = 0;

  beforeAll(async () => {
    const embedder = sharedWinkEmbedder();
    const texts = [...LABELLED_CARDS.map((c) => c.content), ...distractors(200)];
    const vectors = await embedder.embed(texts);
    corpusSize = texts.length;
    for (let i = 0; i < texts.length; i++) {
      const cardId = randomUUID();
      if (i < LABELLED_CARDS.length) idOf.set(LABELLED_CARDS[i]!.key, cardId);
      await index.upsert({ cardId, authorId: randomUUID(), content: texts[i]!, tags: [], link: '', private: false, vector: vectors[i]!, vectorPointId: randomUUID(), updatedAt: new Date() });
    }
  }, 120_000);
  afterAll(() => index.close());

  async function measure(kind: 'semantic' | 'fulltext'): Promise<Metrics> {
    let found = 0;
    let reciprocal = 0;
    for (const card of LABELLED_CARDS) {
      const query = { query: kind === 'semantic' ? card.paraphrase : card.misspelled, tags: [], links: [], page: 1, pageSize: 25 };
      const result = kind === 'semantic' ? await service.semanticSearch(query) : await service.fullTextSearch(query);
      const rank = result.hits.findIndex((h) => h.cardId === idOf.get(card.key)) + 1;
      if (rank >= 1 && rank <= 10) found++;
      if (rank >= 1) reciprocal += 1 / rank;
    }
    return { recallAt10: found / LABELLED_CARDS.length, mrr: reciprocal / LABELLED_CARDS.length };
  }

  test.each(['semantic', 'fulltext'] as const)('%s search: recall@10 and MRR well above a random ranking', async (kind) => {
    const metrics = await measure(kind);
    const randomRecall = 10 / corpusSize;
    console.log(`${kind}: recall@10 ${metrics.recallAt10.toFixed(3)}, MRR ${metrics.mrr.toFixed(3)} over ${LABELLED_CARDS.length} queries, ${corpusSize} cards (random ranking: recall@10 ~${randomRecall.toFixed(3)})`);
    expect(metrics.recallAt10).toBeGreaterThanOrEqual(0.9);
    expect(metrics.mrr).toBeGreaterThanOrEqual(0.75);
  });
});
