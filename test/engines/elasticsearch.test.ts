import { startElasticsearchSync } from './elasticsearch';
import { contractTests, describeOnEngine, engineForSuite } from './suite';

// What the Maven Central Elasticsearch can do, checked on every run, so the search adapter knows
// which features it may rely on when its contract suite runs here (docs/engines.md).
const { engine, skipReason } = engineForSuite('elasticsearch', startElasticsearchSync);

describeOnEngine('Elasticsearch engine capabilities', skipReason, () => {
  const test = contractTests('elasticsearch engine capabilities');
  /** The REST API over plain fetch: the engine check needs no client library. */
  async function es(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
    const res = await fetch(`${engine!.url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': typeof body === 'string' ? 'application/x-ndjson' : 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: res.status, json: await res.json() };
  }

  test('indexes documents and answers dense_vector kNN with cosine similarity', async () => {
    expect(
      (
        await es('PUT', '/cards-knn', {
          settings: { number_of_replicas: 0 },
          mappings: { properties: { content: { type: 'text' }, tags: { type: 'keyword' }, embedding: { type: 'dense_vector', dims: 3, index: true, similarity: 'cosine' } } },
        })
      ).status,
    ).toBe(200);
    const docs = [
      { id: 'a', content: 'kafka brokers keep partitions', tags: ['ops'], embedding: [1, 0, 0] },
      { id: 'b', content: 'mongodb stores documents', tags: ['db'], embedding: [0, 1, 0] },
      { id: 'c', content: 'elasticsearch ranks by vectors', tags: ['ops'], embedding: [0.9, 0.1, 0] },
    ];
    const bulk = docs.flatMap(({ id, ...doc }) => [JSON.stringify({ index: { _index: 'cards-knn', _id: id } }), JSON.stringify(doc)]).join('\n') + '\n';
    expect((await es('POST', '/_bulk?refresh=true', bulk)).json.errors).toBe(false);
    const result = await es('POST', '/cards-knn/_search', { knn: { field: 'embedding', query_vector: [1, 0, 0], k: 2, num_candidates: 10, filter: { term: { tags: 'ops' } } } });
    expect(result.json.hits.hits.map((h: { _id: string }) => h._id)).toEqual(['a', 'c']);
  });

  test('full-text match with fuzziness and the standard analyzer', async () => {
    await es('PUT', '/cards-text', { settings: { number_of_replicas: 0 }, mappings: { properties: { content: { type: 'text', analyzer: 'standard' } } } });
    await es('PUT', '/cards-text/_doc/1?refresh=true', { content: 'Verification scores compare card content' });
    const result = await es('POST', '/cards-text/_search', { query: { match: { content: { query: 'verificaton', fuzziness: 'AUTO' } } } });
    expect(result.json.hits.hits.map((h: { _id: string }) => h._id)).toEqual(['1']);
  });

  test('analysis-common is absent: ngram tokenizers are refused (a trigram field must be built client-side)', async () => {
    const refused = await es('PUT', '/cards-trigram', {
      settings: { analysis: { tokenizer: { tri: { type: 'ngram', min_gram: 3, max_gram: 3 } }, analyzer: { tri: { type: 'custom', tokenizer: 'tri' } } } },
    });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toMatch(/Unknown tokenizer type \[ngram\]/);
  });
});
