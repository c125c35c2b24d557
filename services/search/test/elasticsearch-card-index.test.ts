import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { ElasticsearchCardIndex } from '../src/adapters/elasticsearch/elasticsearch-card-index';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import type { IndexHit } from '../src/domain/model';
import type { CardIndex } from '../src/domain/ports';
import { startElasticsearchSync } from '../../../test/engines/elasticsearch';
import { contractTests, describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { aCard, axis, CONTRACT_DIMENSIONS, describeCardIndexContract } from './card-index.contract';

// TEST_ELASTICSEARCH_URL points the suite at a running cluster; otherwise it starts the Maven Central
// Elasticsearch of test/engines (docs/engines.md), and the suite is skipped with the reason when it cannot.
const external = process.env.TEST_ELASTICSEARCH_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('elasticsearch', startElasticsearchSync);

const opened: ElasticsearchCardIndex[] = [];
/**
 * A fresh set of indices per call, with the periodic refresh turned off (-1): whatever a test finds was made
 * searchable by the write (or batch) that returned, never by a background refresh that happened to come first.
 */
function openIndex(prefix = `cards-test-${randomBytes(4).toString('hex')}`, dimensions = CONTRACT_DIMENSIONS, embedderId?: string): ElasticsearchCardIndex {
  const index = new ElasticsearchCardIndex({ url: engine!.url, dimensions, indexPrefix: prefix, replicas: 0, refreshInterval: '-1', ...(embedderId ? { embedderId } : {}) });
  opened.push(index);
  return index;
}
afterAll(async () => {
  await Promise.all(opened.map((i) => i.close().catch(() => undefined)));
});

/** Hit ids in rank order, ids of (nearly) equal scores sorted among themselves. */
function tiesSorted(hits: IndexHit[]): string[][] {
  const groups: { score: number; ids: string[] }[] = [];
  for (const hit of hits) {
    const last = groups[groups.length - 1];
    if (last && Math.abs(last.score - hit.score) < 1e-5) last.ids.push(hit.cardId);
    else groups.push({ score: hit.score, ids: [hit.cardId] });
  }
  return groups.map((g) => g.ids.sort());
}

const everything = { tags: [], links: [] };
const firstPage = { offset: 0, limit: 25 };

describeOnEngine('CardIndex on ElasticsearchCardIndex', skipReason, () => {
  jest.setTimeout(60_000);
  describeCardIndexContract('ElasticsearchCardIndex', async () => {
    const index = openIndex();
    await index.ready();
    return index;
  });

  describe('ElasticsearchCardIndex specifics', () => {
    const test = contractTests('ElasticsearchCardIndex specifics');

    test('ranks full-text matches like the embedded index, with the same scores', async () => {
      const texts = [
        'Perseverance landed in Jezero crater and carried a small helicopter called Ingenuity',
        'The helicopter flew above the crater floor many times before its rotor broke',
        'Sourdough starters need regular feeding with flour and water to stay active',
        'A large search index is fast when its postings fit in memory',
        'The index of the book lists every large search the author ran',
        'Glaciers carve valleys and leave moraines behind when they retreat',
        'Searching large indexes quickly needs good data structures and caching',
        'Volcanic craters can fill with water and become lakes over centuries',
      ];
      const cards = texts.map((t, i) => aCard().saying(t).along(axis(i)).build());
      const es = openIndex();
      const sqlite = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS });
      for (const card of cards) {
        await es.upsert(card);
        await sqlite.upsert(card);
      }
      for (const query of ['large search index', 'helicoptr crater', 'jezzero', 'water', 'glacier valley retreat', 'sourdough flour', 'indexes searching quickly']) {
        const [a, b] = await Promise.all([es.matchText(query, everything, firstPage), sqlite.matchText(query, everything, firstPage)]);
        expect({ query, total: a.total }).toEqual({ query, total: b.total });
        // Same scores rank by rank; cards with equal scores may come in either order.
        a.hits.forEach((hit, i) => expect(hit.score).toBeCloseTo(b.hits[i]!.score, 4));
        expect({ query, ranked: tiesSorted(a.hits) }).toEqual({ query, ranked: tiesSorted(b.hits) });
      }
      await sqlite.close();
    });

    test('a card without a known word (zero vector) is stored, read back and ranked at cosine 0', async () => {
      const index = openIndex();
      const zero = aCard().saying('qqq zzz').along(new Float32Array(CONTRACT_DIMENSIONS)).build();
      const near = aCard().along(axis(1)).build();
      const opposite = aCard().along(axis(1).map((x) => -x)).build();
      for (const card of [zero, near, opposite]) expect(await index.upsert(card)).toBe(true);
      expect(Array.from((await index.get(zero.cardId))!.vector)).toEqual(Array.from(zero.vector));
      const page = await index.nearest(axis(1), everything, firstPage);
      expect(page.hits.map((h) => h.cardId)).toEqual([near.cardId, zero.cardId, opposite.cardId]);
      expect(page.hits[1]!.score).toBe(0);
      expect(page.total).toBe(3);
      // A query without a known word: every card at cosine 0, none refused.
      const blank = await index.nearest(new Float32Array(CONTRACT_DIMENSIONS), everything, { offset: 1, limit: 25 });
      expect(blank.total).toBe(3);
      expect(blank.hits).toHaveLength(2);
      for (const hit of blank.hits) expect(hit.score).toBe(0);
    });

    test('a restarted adapter reuses its indices (mapping upgrade is a no-op) and finds what was stored', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const owner = aCard().build().authorId;
      const card = aCard().by(owner).private().saying('basalt columns form as lava cools').along(axis(2)).build();
      await first.upsert(card);
      await first.close();
      const second = openIndex(prefix);
      await second.ready();
      expect((await second.nearest(axis(2), { ...everything, callerId: owner }, firstPage)).hits.map((h) => h.cardId)).toEqual([card.cardId]);
      expect((await second.matchText('basalt lava', { ...everything, callerId: owner }, firstPage)).hits.map((h) => h.cardId)).toEqual([card.cardId]);
      expect(await second.count()).toBe(1);
    });

    test('an embedder with other dimensions is refused at start with a clear message, nothing stored is lost', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const card = aCard().along(axis(3)).build();
      await first.upsert(card);
      const other = openIndex(prefix, CONTRACT_DIMENSIONS * 2);
      await expect(other.ready()).rejects.toThrow(/cannot be upgraded.*dimensions/);
      expect((await first.get(card.cardId))?.cardId).toBe(card.cardId);
    });

    test('cards embedded by another embedder stay out of search until their vectors are refreshed', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const before = openIndex(prefix, CONTRACT_DIMENSIONS, 'model-a');
      const card = aCard().saying('basalt columns form as lava cools').along(axis(1)).build();
      await before.upsert(card);
      const after = openIndex(prefix, CONTRACT_DIMENSIONS, 'model-b');
      expect(await after.staleVectorCount()).toBe(1);
      expect((await after.nearest(axis(3), everything, firstPage)).total).toBe(0);
      expect((await after.matchText('basalt lava', everything, firstPage)).total).toBe(0);
      expect(await after.refreshStaleVectors(async (texts) => texts.map(() => axis(3)))).toBe(1);
      expect(await after.staleVectorCount()).toBe(0);
      const hits = (await after.nearest(axis(3), everything, firstPage)).hits;
      expect(hits.map((h) => h.cardId)).toEqual([card.cardId]);
      expect(hits[0]!.score).toBeCloseTo(1, 5);
      expect((await after.matchText('basalt lava', everything, firstPage)).hits.map((h) => h.cardId)).toEqual([card.cardId]);
    });

    test('rejects a vector of the wrong dimension instead of storing it', async () => {
      const index = openIndex();
      await expect(index.upsert(aCard().along(new Float32Array(3)).build())).rejects.toThrow(/dimensions/);
      expect(await index.count()).toBe(0);
    });

    test('concurrent bookmark changes of one card are all applied', async () => {
      const index = openIndex();
      const card = aCard().build();
      await index.upsert(card);
      const collections = Array.from({ length: 6 }, () => aCard().build().cardId);
      await Promise.all(collections.map((c, i) => index.setBookmark(c, card.cardId, true, new Date(Date.UTC(2026, 1, 1, 0, i)))));
      expect((await index.get(card.cardId))!.collectionIds).toEqual([...collections].sort());
      for (const c of collections) expect((await index.nearest(axis(0), { ...everything, collectionId: c }, firstPage)).total).toBe(1);
    });
  });
});

describe('ElasticsearchCardIndex readiness', () => {
  test('fails clearly, naming ELASTICSEARCH_URL, when the cluster is unreachable', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const index: CardIndex & { ready(): Promise<void> } = new ElasticsearchCardIndex({ url: `http://user:secret@127.0.0.1:${port}`, dimensions: 4, readyTimeoutMs: 1_000 });
    const started = Date.now();
    const failure = index.ready();
    await expect(failure).rejects.toThrow(/Elasticsearch at http:\/\/user:\*\*\*@127\.0\.0\.1:\d+\/ is unreachable \(ELASTICSEARCH_URL\)/);
    await expect(index.count()).rejects.toThrow(/unreachable/);
    expect(Date.now() - started).toBeLessThan(10_000);
    await index.close();
  });
});
