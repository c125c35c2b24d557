import { randomBytes, randomUUID } from 'node:crypto';
import { createLogger, Topics, type OutgoingEvent } from '@cards/platform';
import { events } from '@cards/proto';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { Client } from '@elastic/elasticsearch';
import { ElasticsearchCardIndex, type ElasticsearchCardIndexOptions } from '../src/adapters/elasticsearch/elasticsearch-card-index';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { IndexProjector } from '../src/application/index-projector';
import { SearchService, type SearchQuery } from '../src/application/search-service';
import type { IndexHit, SearchScope } from '../src/domain/model';
import type { CardIndex, Embedder } from '../src/domain/ports';
import { wordTrigrams } from '../src/domain/text';
import { startElasticsearchSync } from '../../../test/engines/elasticsearch';
import { contractTests, describeOnEngine, engineForSuite } from '../../../test/engines/suite';
import { aCard, axis, CONTRACT_DIMENSIONS, describeCardIndexContract } from './card-index.contract';

// TEST_ELASTICSEARCH_URL points the suite at a running cluster; otherwise it starts the Maven Central
// Elasticsearch of test/engines (docs/engines.md), and the suite is skipped with the reason when it cannot.
const external = process.env.TEST_ELASTICSEARCH_URL;
const { engine, skipReason } = external ? { engine: { url: external }, skipReason: undefined } : engineForSuite('elasticsearch', startElasticsearchSync);

const opened: ElasticsearchCardIndex[] = [];
/**
 * A fresh set of indices per call. Writes wait for the periodic refresh, here a short one so the suite stays quick:
 * whatever a test finds right after a write (or batch) returned, that write waited for.
 */
function openIndex(
  prefix = `cards-test-${randomBytes(4).toString('hex')}`,
  dimensions = CONTRACT_DIMENSIONS,
  embedderId?: string,
  more: Partial<ElasticsearchCardIndexOptions> = {},
): ElasticsearchCardIndex {
  const index = new ElasticsearchCardIndex({ url: engine!.url, dimensions, indexPrefix: prefix, replicas: 0, refreshInterval: '100ms', ...(embedderId ? { embedderId } : {}), ...more });
  opened.push(index);
  return index;
}
afterAll(async () => {
  await Promise.all(opened.map((i) => i.close().catch(() => undefined)));
});

interface Exchange {
  method: string;
  path: string;
  sent: string;
  received: string;
}

/**
 * An HTTP proxy in front of the engine that keeps every request and answer the adapter exchanges with it, so a test
 * can see what travels for an operation (uncompressed: the proxy asks the engine for identity encoding).
 */
async function recordingProxy(target: string): Promise<{
  url: string;
  exchanges: Exchange[];
  /** Every request as it arrives (method and path), answered or not. */
  arrivals: string[];
  /** Holds back the next request matching `path` until release() (reached resolves when it arrives). */
  holdNext(path: RegExp): { reached: Promise<void>; release(): void };
  close(): Promise<void>;
}> {
  const exchanges: Exchange[] = [];
  const arrivals: string[] = [];
  const holds: { path: RegExp; arrived(): void; released: Promise<void> }[] = [];
  const upstream = new URL(target);
  const server = createHttpServer((req, res) => {
    arrivals.push(`${req.method} ${req.url}`);
    const sent: Buffer[] = [];
    req.on('data', (chunk: Buffer) => sent.push(chunk));
    req.on('end', async () => {
      const hold = holds.findIndex((h) => h.path.test(req.url!));
      if (hold >= 0) {
        const [{ arrived, released }] = holds.splice(hold, 1) as [(typeof holds)[number]];
        arrived();
        await released;
      }
      const headers = { ...req.headers, host: upstream.host, 'accept-encoding': 'identity' };
      const forward = httpRequest({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
        const received: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => received.push(chunk));
        answer.on('end', () => {
          exchanges.push({ method: req.method!, path: req.url!, sent: Buffer.concat(sent).toString(), received: Buffer.concat(received).toString() });
          res.writeHead(answer.statusCode!, answer.headers);
          res.end(Buffer.concat(received));
        });
      });
      forward.on('error', (err) => res.destroy(err));
      forward.end(Buffer.concat(sent));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    arrivals,
    holdNext(path) {
      let arrived!: () => void;
      let release!: () => void;
      const reached = new Promise<void>((resolve) => (arrived = resolve));
      holds.push({ path, arrived, released: new Promise<void>((resolve) => (release = resolve)) });
      return { reached, release };
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Runs `test` with a recording proxy in front of the engine, closed afterwards whatever happens. */
async function throughRecordingProxy(test: (proxy: Awaited<ReturnType<typeof recordingProxy>>) => Promise<void>): Promise<void> {
  const proxy = await recordingProxy(engine!.url);
  try {
    await test(proxy);
  } finally {
    await proxy.close();
  }
}

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

/** Refreshes an operation forced (POST _refresh), and waits for the periodic one (writes with refresh=wait_for). */
function refreshesIn(exchanges: readonly Exchange[]): { forced: number; waits: number } {
  return {
    forced: exchanges.filter((e) => /\/_refresh\b/.test(e.path)).length,
    waits: exchanges.filter((e) => /[?&]refresh=wait_for\b/.test(e.path)).length,
  };
}

/** Embeds every text along the first axis, so semantic ranks follow the cards' tilt away from it. */
const alongFirstAxis: Embedder = {
  id: 'first-axis',
  dimensions: CONTRACT_DIMENSIONS,
  ready: async () => undefined,
  embed: async (texts) => texts.map(() => axis(0)),
  orderAware: true,
  duplicateThreshold: () => 1,
};

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
    });

    test("the vocabulary words a query reads (200 per word) hold none of someone else's private card: its 250 spellings closer to a typo crowd out no public word", async () => {
      const index = openIndex();
      const owner = randomUUID();
      const open = aCard().saying('a glacier carved the valley').build();
      await index.upsert(open);
      const spellings = Array.from({ length: 250 }, (_, i) => `glaciar${String.fromCharCode(97 + Math.floor(i / 26), 97 + (i % 26))}`);
      await index.upsert(aCard().by(owner).private().saying(spellings.join(' ')).build());
      for (const caller of [undefined, randomUUID()]) {
        expect((await index.matchText('glaciar', { callerId: caller, tags: [], links: [] }, firstPage)).hits.map((h) => h.cardId)).toEqual([open.cardId]);
      }
    });

    test('a vocabulary written before word scopes is rewritten from the cards: typos find public words again, never words of private cards', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const owner = randomUUID();
      const open = aCard().saying('a glacier carved the valley').build();
      const secret = aCard().by(owner).private().saying('my glaciare notes').build();
      const first = openIndex(prefix);
      await first.upsert(open);
      await first.upsert(secret);
      // As an earlier release left it: one document per word of every card, private ones included, without a scope.
      await first.close();
      const client = new Client({ node: engine!.url });
      const vocabulary = `${prefix}-vocabulary`;
      await client.indices.delete({ index: vocabulary });
      await client.indices.create({ index: vocabulary, mappings: { dynamic: 'strict', properties: { word: { type: 'keyword' }, trigrams: { type: 'keyword' } } } });
      const legacy = ['a', 'glacier', 'carved', 'the', 'valley', 'my', 'glaciare', 'notes'];
      await client.bulk({ refresh: true, operations: legacy.flatMap((word) => [{ index: { _index: vocabulary, _id: word } }, { word, trigrams: wordTrigrams(word) }]) });
      await client.close();
      const restarted = openIndex(prefix);
      expect(await restarted.unscopedWordCount()).toBe(legacy.length);
      expect((await restarted.matchText('glaciar', everything, firstPage)).total).toBe(0);
      expect(await restarted.scopeVocabulary()).toBe(2);
      expect(await restarted.unscopedWordCount()).toBe(0);
      expect((await restarted.matchText('glaciar', everything, firstPage)).hits.map((h) => h.cardId)).toEqual([open.cardId]);
      expect((await restarted.matchText('glaciar', { callerId: randomUUID(), tags: [], links: [] }, firstPage)).hits.map((h) => h.cardId)).toEqual([open.cardId]);
      expect((await restarted.matchText('glaciar', { callerId: owner, tags: [], links: [] }, firstPage)).hits.map((h) => h.cardId)).toEqual([secret.cardId, open.cardId]);
    });

    test('tag and link filters through collisions send queries of one size however many collisions match: the roots hold their entries', () =>
      throughRecordingProxy(async (proxy) => {
        // Written directly (hundreds of requests at once), searched through the recording proxy.
        const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
        const writer = openIndex(prefix);
        const index = openIndex(prefix, undefined, undefined, { url: proxy.url });
        const roots = Array.from({ length: 400 }, (_, i) => aCard().saying(`tides are caused by the moon ${i}`).tagged('alpha').along(axis(1)).build());
        const owner = randomUUID();
        await writer.batch(() => Promise.all(roots.map((root) => writer.upsert(root))));
        // Each root has a public collision with the tag and link looked for, and a private one of `owner` with another.
        await writer.batch(() =>
          Promise.all(
            roots.flatMap((root) => [
              writer.upsert(aCard().saying(root.content).tagged('Shared').linking('https://Shared.example/p').along(axis(1)).collisionOf(root.cardId).build()),
              writer.upsert(aCard().by(owner).private().saying(root.content).tagged('mine').along(axis(1)).collisionOf(root.cardId).build()),
            ]),
          ),
        );
        const query = async (scope: Partial<SearchScope>) => {
          proxy.exchanges.length = 0;
          const page = await index.nearest(axis(1), { ...everything, ...scope }, firstPage);
          const sent = proxy.exchanges.reduce((sum, e) => sum + e.sent.length, 0);
          return { total: page.total, bounded: sent < 8_000 };
        };
        expect(await query({ tags: ['shared'] })).toEqual({ total: 400, bounded: true });
        expect(await query({ tags: ['shared'], links: ['shared.example'] })).toEqual({ total: 400, bounded: true });
        expect(await query({ links: ['shared.example'] })).toEqual({ total: 400, bounded: true });
        expect(await query({ tags: ['mine'] })).toEqual({ total: 0, bounded: true });
        expect(await query({ tags: ['mine'], callerId: owner })).toEqual({ total: 400, bounded: true });
        expect(await query({ tags: ['mine'], links: ['shared.example'], callerId: owner })).toEqual({ total: 0, bounded: true });
      }),
      180_000,
    );

    test('collisions stored before roots held their entries are found through their roots at once, and entered by denormalizeCollisions()', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const owner = randomUUID();
      const root = aCard().saying('tides are caused by the moon').tagged('alpha').along(axis(1)).build();
      const open = aCard().saying('tides are caused by the moon').tagged('beta').linking('https://beta.example/y').along(axis(1)).collisionOf(root.cardId).build();
      const hidden = aCard().by(owner).private().saying('tides are caused by the moon').tagged('gamma').along(axis(1)).collisionOf(root.cardId).build();
      for (const card of [root, open, hidden]) await first.upsert(card);
      // As an index written before: no entries on the root, collisions not marked entered.
      const client = new Client({ node: engine!.url });
      await client.update({ index: `${prefix}-cards`, id: root.cardId, doc: { collisions: [] }, refresh: true });
      for (const card of [open, hidden]) await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { entered: null }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (scope: Partial<SearchScope>) =>
        (await restarted.nearest(axis(1), { ...everything, ...scope }, firstPage)).hits.map((h) => h.cardId);
      const expectations = async () => {
        expect(await found({ tags: ['beta'] })).toEqual([root.cardId]);
        expect(await found({ links: ['beta.example'] })).toEqual([root.cardId]);
        expect(await found({ tags: ['gamma'] })).toEqual([]);
        expect(await found({ tags: ['gamma'], callerId: owner })).toEqual([root.cardId]);
      };
      expect(await restarted.unenteredCollisionCount()).toBe(2);
      await expectations();
      expect(await restarted.denormalizeCollisions()).toBe(2);
      expect(await restarted.unenteredCollisionCount()).toBe(0);
      await expectations();
      expect(await restarted.denormalizeCollisions()).toBe(0);
    });

    test('a collection scope finds roots through more bookmarked collisions than the result window, in one search of one size', () =>
      throughRecordingProxy(async (proxy) => {
        // 120 roots found only through a bookmarked collision each, behind a window of 50 (production: 10,000).
        const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
        const writer = openIndex(prefix, undefined, undefined, { maxResultWindow: 50 });
        const index = openIndex(prefix, undefined, undefined, { maxResultWindow: 50, url: proxy.url });
        const owner = randomUUID();
        const collection = randomUUID();
        const roots = Array.from({ length: 120 }, (_, i) => aCard().saying(`harbour seals resting on rocks ${i}`).along(axis(2)).build());
        await writer.batch(() => Promise.all(roots.map((root) => writer.upsert(root))));
        const collisions = roots.map((root, i) => (i % 4 === 3 ? aCard().by(owner).private() : aCard()).saying(root.content).along(axis(2)).collisionOf(root.cardId).build());
        await writer.batch(() => Promise.all(collisions.map((c) => writer.upsert(c))));
        const at = new Date('2026-04-01T00:00:00Z');
        await writer.batch(() => Promise.all(collisions.map((c) => writer.setBookmark(collection, c.cardId, true, at))));
        const found = async (callerId?: string) => {
          proxy.exchanges.length = 0;
          const [semantic, text] = [
            await index.nearest(axis(2), { ...everything, callerId, collectionId: collection }, { offset: 0, limit: 200 }),
            await index.matchText('harbour seals', { ...everything, callerId, collectionId: collection }, { offset: 0, limit: 200 }),
          ];
          const searches = proxy.exchanges.filter((e) => /_search\b/.test(e.path));
          return { semantic: semantic.total, text: text.total, bounded: searches.every((e) => e.sent.length < 8_000) };
        };
        // Before: the first 50 collisions' roots only (a window of collisions read per query, their roots as terms).
        expect(await found()).toEqual({ semantic: 90, text: 90, bounded: true });
        expect(await found(owner)).toEqual({ semantic: 120, text: 120, bounded: true });
        // A collision's bookmark removed (its root goes), one added back; a collision made private by someone else hides its root.
        await writer.setBookmark(collection, collisions[0]!.cardId, false, new Date('2026-04-02T00:00:00Z'));
        await writer.upsert({ ...collisions[1]!, private: true, authorId: randomUUID(), updatedAt: new Date(collisions[1]!.updatedAt.getTime() + 1000) });
        expect(await found()).toEqual({ semantic: 88, text: 88, bounded: true });
        await writer.setBookmark(collection, collisions[0]!.cardId, true, new Date('2026-04-03T00:00:00Z'));
        expect(await found()).toEqual({ semantic: 89, text: 89, bounded: true });
        expect((await index.nearest(axis(2), { ...everything, collectionId: randomUUID() }, firstPage)).total).toBe(0);
      }),
      180_000,
    );

    test('collisions whose entries were written before entries held collections are found through their roots at once, and entered by denormalizeCollisions()', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const owner = randomUUID();
      const collection = randomUUID();
      const root = aCard().saying('tides are caused by the moon').along(axis(1)).build();
      const open = aCard().saying('tides are caused by the moon').along(axis(1)).collisionOf(root.cardId).build();
      const hidden = aCard().by(owner).private().saying('tides are caused by the moon').along(axis(1)).collisionOf(root.cardId).build();
      for (const card of [root, open, hidden]) await first.upsert(card);
      await first.setBookmark(collection, hidden.cardId, true, new Date('2026-04-01T00:00:00Z'));
      // As an index written before: entries without collections, collisions not marked as entered with them.
      const client = new Client({ node: engine!.url });
      const stored = (await client.get<{ collisions: Record<string, unknown>[] }>({ index: `${prefix}-cards`, id: root.cardId }))._source!;
      await client.update({ index: `${prefix}-cards`, id: root.cardId, doc: { collisions: stored.collisions.map(({ collection_ids: _, ...entry }) => entry) }, refresh: true });
      for (const card of [open, hidden]) await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { entered_collections: null }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (callerId?: string) => (await restarted.nearest(axis(1), { ...everything, callerId, collectionId: collection }, firstPage)).hits.map((h) => h.cardId);
      expect(await restarted.unenteredCollisionCount()).toBe(2);
      expect(await found(owner)).toEqual([root.cardId]);
      expect(await found()).toEqual([]);
      expect(await restarted.denormalizeCollisions()).toBe(2);
      expect(await restarted.unenteredCollisionCount()).toBe(0);
      expect(await found(owner)).toEqual([root.cardId]);
      expect(await found()).toEqual([]);
      // Entered now: a bookmark of the public collision reaches its root's entry.
      await restarted.setBookmark(collection, open.cardId, true, new Date('2026-04-02T00:00:00Z'));
      expect(await found()).toEqual([root.cardId]);
    });

    test('cards and collision entries indexed before links were compared decoded are found by either spelling once decodeStoredLinks() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const copied = aCard().linking('https://xn--mnchen-3ya.de/wiki/M%C3%BCnchen').along(axis(1)).build();
      const shown = aCard().linking('https://München.de/wiki/München').along(axis(1)).build();
      const plain = aCard().linking('https://example.org/plain').along(axis(1)).build();
      const root = aCard().saying('tides are caused by the moon').linking('https://alpha.example/x').along(axis(1)).build();
      const collision = aCard().saying('tides are caused by the moon').linking('https://xn--e1afmkfd.example/a').along(axis(1)).collisionOf(root.cardId).build();
      for (const card of [copied, shown, plain, root, collision]) await first.upsert(card);
      // As written before: the link lower-cased only (filterForm), on the card and on its root's entry, no mark.
      const client = new Client({ node: engine!.url });
      for (const card of [copied, shown, plain, collision]) {
        await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { link_lower: card.link.toLowerCase(), links_decoded: null }, refresh: true });
      }
      const stored = (await client.get<{ collisions: { link_lower: string }[] }>({ index: `${prefix}-cards`, id: root.cardId }))._source!;
      const collisions = stored.collisions.map((entry) => ({ ...entry, link_lower: collision.link.toLowerCase() }));
      await client.update({ index: `${prefix}-cards`, id: root.cardId, doc: { collisions, links_decoded: null }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (link: string) => (await restarted.nearest(axis(1), { ...everything, links: [link] }, firstPage)).hits.map((h) => h.cardId).sort();
      // The copied card, the collision and the root holding its entry; the others hold neither '%' nor 'xn--' (their
      // lower-cased link is already the form compared).
      expect(await restarted.undecodedLinkCount()).toBe(3);
      expect(await found('münchen')).toEqual([shown.cardId]);
      expect(await found('пример')).toEqual([]);
      expect(await restarted.decodeStoredLinks()).toBe(3);
      expect(await restarted.undecodedLinkCount()).toBe(0);
      const both = [copied.cardId, shown.cardId].sort();
      expect(await found('münchen.de/wiki/münchen')).toEqual(both);
      expect(await found('xn--mnchen-3ya.de/wiki/M%C3%BCnchen')).toEqual(both);
      expect(await found('пример.example')).toEqual([root.cardId]);
      expect(await found('xn--e1afmkfd')).toEqual([root.cardId]);
      expect(await found('example.org/plain')).toEqual([plain.cardId]);
      expect((await restarted.get(copied.cardId))!.link).toBe(copied.link);
    });

    test('cards indexed before diacritics were folded are found by their folded words once foldStoredWords() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const owner = randomUUID();
      const open = aCard().saying('Meet me at the Café in Zürich').build();
      const secret = aCard().by(owner).private().saying('my résumé draft').build();
      const plain = aCard().saying('plain ascii words only').build();
      for (const card of [open, secret, plain]) await first.upsert(card);
      // As written before folding: words and phrase text as spelled, no mark.
      const client = new Client({ node: engine!.url });
      const asSpelled = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu)!;
      for (const card of [open, secret]) {
        await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { words: [...new Set(asSpelled(card.content))], text: asSpelled(card.content).join(' '), folded: null }, refresh: true });
      }
      await client.update({ index: `${prefix}-cards`, id: plain.cardId, doc: { folded: null }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (query: string, callerId?: string) => (await restarted.matchText(query, { ...everything, callerId }, firstPage)).hits.map((h) => h.cardId);
      expect(await restarted.unfoldedCardCount()).toBe(2);
      expect(await found('zurich')).toEqual([]);
      expect(await restarted.foldStoredWords()).toBe(2);
      expect(await restarted.unfoldedCardCount()).toBe(0);
      expect(await found('zurich')).toEqual([open.cardId]);
      expect(await found('Café')).toEqual([open.cardId]);
      expect(await found('cafe in zurich')).toEqual([open.cardId]);
      expect(await found('resume', owner)).toEqual([secret.cardId]);
      expect(await found('resume')).toEqual([]);
      // A typo of a folded word: its folded spelling is in the vocabulary (the owner's scope for a private card).
      expect(await found('resumme', owner)).toEqual([secret.cardId]);
      expect(await found('plain ascii')).toEqual([plain.cardId]);
      expect((await restarted.get(open.cardId))!.content).toBe('Meet me at the Café in Zürich');
    });

    test('cards indexed before Chinese and Japanese runs were split are found by a word inside them once foldStoredWords() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const park = aCard().saying('我们今天去公园散步').build();
      const tower = aCard().saying('東京タワーに行きました').build();
      const plain = aCard().saying('plain ascii words only').build();
      for (const card of [park, tower, plain]) await first.upsert(card);
      // As written before the split, already folded: each run one word, no segmented mark.
      const client = new Client({ node: engine!.url });
      const asRuns = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu)!;
      for (const card of [park, tower]) {
        await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { words: [...new Set(asRuns(card.content))], text: asRuns(card.content).join(' '), folded: true, segmented: null }, refresh: true });
      }
      await client.update({ index: `${prefix}-cards`, id: plain.cardId, doc: { segmented: null }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (query: string) => (await restarted.matchText(query, everything, firstPage)).hits.map((h) => h.cardId);
      expect(await restarted.unfoldedCardCount()).toBe(2);
      expect(await found('公园')).toEqual([]);
      expect(await restarted.foldStoredWords()).toBe(2);
      expect(await restarted.unfoldedCardCount()).toBe(0);
      expect(await found('公园')).toEqual([park.cardId]);
      expect(await found('タワー')).toEqual([tower.cardId]);
      expect(await found('plain ascii')).toEqual([plain.cardId]);
    });

    test('cards indexed before words kept their combining marks are found by whole Hindi words and unvocalized Arabic once foldStoredWords() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const hindi = aCard().saying('हिन्दी भारत की एक प्रमुख भाषा है').build();
      const book = aCard().saying('كِتَابٌ جَمِيلٌ').build();
      const plain = aCard().saying('plain ascii words only').build();
      for (const card of [hindi, book, plain]) await first.upsert(card);
      // As written before: words cut at every mark (Arabic vowel marks were no DIACRITICS either), no marks_folded mark.
      const client = new Client({ node: engine!.url });
      const cut = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu)!;
      for (const card of [hindi, book]) {
        await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { words: [...new Set(cut(card.content))], text: cut(card.content).join(' '), marks_folded: null }, refresh: true });
      }
      await client.update({ index: `${prefix}-cards`, id: plain.cardId, doc: { marks_folded: null }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (query: string) => (await restarted.matchText(query, everything, firstPage)).hits.map((h) => h.cardId);
      expect(await restarted.unfoldedCardCount()).toBe(2);
      expect(await found('كتاب')).toEqual([]);
      expect(await restarted.foldStoredWords()).toBe(2);
      expect(await restarted.unfoldedCardCount()).toBe(0);
      expect(await found('हिन्दी')).toEqual([hindi.cardId]);
      expect(await found('हिंदी')).toEqual([hindi.cardId]);
      expect(await found('كتاب')).toEqual([book.cardId]);
      expect(await found('plain ascii')).toEqual([plain.cardId]);
    });

    test('cards both start-time rewrites must change get both when foldStoredWords() and decodeStoredLinks() run side by side, as at start', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      // Hindi cards linked to a percent-encoded Hindi page (upgrade audit: such old cards kept their links undecoded).
      const cards = Array.from({ length: 12 }, (_, i) => aCard().saying(`हिन्दी भारत की एक प्रमुख भाषा है ${i}`).linking(`https://example.in/${encodeURIComponent('हिन्दी')}/${i}`).along(axis(1)).build());
      for (const card of cards) await first.upsert(card);
      // As written before both: words cut at every mark, the link lower-cased only, neither mark.
      const client = new Client({ node: engine!.url });
      const cut = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu)!;
      for (const card of cards) {
        const doc = { words: [...new Set(cut(card.content))], text: cut(card.content).join(' '), marks_folded: null, link_lower: card.link.toLowerCase(), links_decoded: null };
        await client.update({ index: `${prefix}-cards`, id: card.cardId, doc, refresh: true });
      }
      await client.close();
      const restarted = openIndex(prefix);
      expect([await restarted.unfoldedCardCount(), await restarted.undecodedLinkCount()]).toEqual([12, 12]);
      await Promise.all([restarted.foldStoredWords(), restarted.decodeStoredLinks()]);
      expect([await restarted.unfoldedCardCount(), await restarted.undecodedLinkCount()]).toEqual([0, 0]);
      const all = cards.map((c) => c.cardId).sort();
      expect((await restarted.nearest(axis(1), { ...everything, links: ['example.in/हिन्दी'] }, firstPage)).hits.map((h) => h.cardId).sort()).toEqual(all);
      expect((await restarted.matchText('हिंदी', everything, firstPage)).hits.map((h) => h.cardId).sort()).toEqual(all);
    });

    test('Arabic and Hebrew cards indexed by their words as written alone are found without the article or prefix once foldStoredWords() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const theBook = aCard().saying('قرأت الكتاب في المكتبة').build();
      const theLanguage = aCard().saying('השפה העברית היא שפה עתיקה').build();
      for (const card of [theBook, theLanguage]) await first.upsert(card);
      // As written before: the words as written only, no prefix_forms mark.
      const client = new Client({ node: engine!.url });
      for (const card of [theBook, theLanguage]) {
        const written = card.content.match(/\p{L}+/gu)!;
        await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { words: [...new Set(written)], text: written.join(' '), prefix_forms: null }, refresh: true });
      }
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (query: string) => (await restarted.matchText(query, everything, firstPage)).hits.map((h) => h.cardId);
      expect(await restarted.unfoldedCardCount()).toBe(2);
      expect(await found('كتاب')).toEqual([]);
      expect(await restarted.foldStoredWords()).toBe(2);
      expect(await restarted.unfoldedCardCount()).toBe(0);
      expect(await found('كتاب')).toEqual([theBook.cardId]);
      expect(await found('עברית')).toEqual([theLanguage.cardId]);
    });

    test('Chinese cards indexed in traditional characters as written are found by simplified ones once foldStoredWords() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const library = aCard().saying('我昨天一個人去圖書館看書').build();
      for (const card of [library]) await first.upsert(card);
      // As written before: the traditional characters' bigrams, no chinese_folded mark.
      const client = new Client({ node: engine!.url });
      const chars = Array.from('我昨天一個人去圖書館看書');
      const bigrams = chars.slice(1).map((c, i) => chars[i]! + c);
      await client.update({ index: `${prefix}-cards`, id: library.cardId, doc: { words: [...new Set(bigrams)], text: bigrams.join(' '), chinese_folded: null }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (query: string) => (await restarted.matchText(query, everything, firstPage)).hits.map((h) => h.cardId);
      expect(await restarted.unfoldedCardCount()).toBe(1);
      expect(await found('图书馆')).toEqual([]);
      expect(await restarted.foldStoredWords()).toBe(1);
      expect(await restarted.unfoldedCardCount()).toBe(0);
      expect(await found('图书馆')).toEqual([library.cardId]);
      expect(await found('圖書館')).toEqual([library.cardId]);
    });

    test('cards indexed before Korean words lost their particles are found by the bare noun once foldStoredWords() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const school = aCard().saying('학교에서 공부를 했다').build();
      const plain = aCard().saying('plain ascii words only').build();
      for (const card of [school, plain]) await first.upsert(card);
      // As written before: each Korean word as written, particles and all, folded and segmented.
      const client = new Client({ node: engine!.url });
      const asWritten = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu)!;
      await client.update({ index: `${prefix}-cards`, id: school.cardId, doc: { words: asWritten(school.content), text: asWritten(school.content).join(' '), folded: true, segmented: true }, refresh: true });
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (query: string) => (await restarted.matchText(query, everything, firstPage)).hits.map((h) => h.cardId);
      expect(await restarted.unfoldedCardCount()).toBe(1);
      expect(await found('학교')).toEqual([]);
      expect(await restarted.foldStoredWords()).toBe(1);
      expect(await restarted.unfoldedCardCount()).toBe(0);
      expect(await found('학교')).toEqual([school.cardId]);
      expect(await found('학교를')).toEqual([school.cardId]);
      expect(await found('plain ascii')).toEqual([plain.cardId]);
    });

    test('cards indexed by the stems of their Korean words alone are found by a one-syllable noun and rank the word as written first once foldStoredWords() has run', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      const home = aCard().saying('비가 와서 집에 일찍 돌아왔다').build();
      const cat = aCard().saying('고양이가 소파에서 잔다').build();
      const goyang = aCard().saying('친구는 고양에 산다').build();
      for (const card of [home, cat, goyang]) await first.upsert(card);
      // As written before: each Korean word by its stem alone, in jamo (집에 kept whole, 고양이가 and 고양에 both 고양), no korean_forms mark.
      const client = new Client({ node: engine!.url });
      const before: [{ cardId: string }, string[]][] = [
        [home, ['비가', '와서', '집에', '일찍', '돌아왔다']],
        [cat, ['고양', '소파', '잔다']],
        [goyang, ['친구', '고양', '산다']],
      ];
      for (const [card, stems] of before) {
        const words = stems.map((w) => w.normalize('NFD'));
        await client.update({ index: `${prefix}-cards`, id: card.cardId, doc: { words, text: words.join(' '), folded: true, segmented: true, korean_forms: null }, refresh: true });
      }
      await client.close();
      const restarted = openIndex(prefix);
      const found = async (query: string) => (await restarted.matchText(query, everything, firstPage)).hits;
      expect(await restarted.unfoldedCardCount()).toBe(3);
      expect(await found('집')).toEqual([]);
      expect(await restarted.foldStoredWords()).toBe(3);
      expect(await restarted.unfoldedCardCount()).toBe(0);
      expect((await found('집')).map((h) => h.cardId)).toEqual([home.cardId]);
      const cats = await found('고양이');
      expect(cats.map((h) => h.cardId)).toEqual([cat.cardId, goyang.cardId]);
      expect(cats[0]!.score).toBeGreaterThan(cats[1]!.score);
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

    test('createdAtStart: the adapter that created the cards index says so; one opening it after, no once the check settled (yes while pending); once it is deleted, yes again', async () => {
      const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
      const first = openIndex(prefix);
      expect(await first.createdAtStart()).toBe(true);
      await first.close();
      // Its start stopped before it settled the lost-index check: the next one checks again.
      const again = openIndex(prefix);
      expect(await again.createdAtStart()).toBe(true);
      await again.lostIndexCheckSettled();
      await again.close();
      const second = openIndex(prefix);
      expect(await second.createdAtStart()).toBe(false);
      await second.close();
      const client = new Client({ node: engine!.url });
      await client.indices.delete({ index: `${prefix}-cards` });
      await client.close();
      expect(await openIndex(prefix).createdAtStart()).toBe(true);
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

    test('past the result window (index.max_result_window, kNN k): total_pages counts only the pages served, each of them full', async () => {
      // 80 matching cards behind a window of 50 (production: 10,000 = 400 pages of 25).
      const index = openIndex(undefined, undefined, undefined, { maxResultWindow: 50 });
      const collection = randomUUID();
      const cards = Array.from({ length: 80 }, (_, i) => aCard().saying(`deep paging lighthouse keeper ${i}`).along(axis(0, 1, i / 100)).build());
      await index.batch(() =>
        Promise.all(
          cards.map(async (card) => {
            await index.upsert(card);
            await index.setBookmark(collection, card.cardId, true, new Date('2026-01-02T00:00:00Z'));
          }),
        ),
      );
      const search = new SearchService(index, alongFirstAxis);
      const query = (page: number, more: Partial<SearchQuery> = {}): SearchQuery => ({ query: 'lighthouse keeper', tags: [], links: [], page, pageSize: 25, ...more });
      for (const run of [(q: SearchQuery) => search.semanticSearch(q), (q: SearchQuery) => search.fullTextSearch(q)]) {
        const [p1, p2, p3] = [await run(query(1)), await run(query(2)), await run(query(3))];
        expect([p1.totalHits, p1.totalPages, p2.totalPages, p3.totalPages]).toEqual([80, 2, 2, 2]);
        expect([p1.hits.length, p2.hits.length, p3.hits.length]).toEqual([25, 25, 0]);
        expect(new Set([...p1.hits, ...p2.hits].map((h) => h.cardId)).size).toBe(50);
        // A window that is no multiple of the page size: the last page announced is served in part.
        const [q1, q2] = [await run(query(1, { pageSize: 30 })), await run(query(2, { pageSize: 30 }))];
        expect([q1.totalPages, q1.hits.length, q2.hits.length]).toEqual([2, 30, 20]);
        // The lookups a scope needs (bookmarked collisions, long link strings) stay within the window too.
        const scoped = await run(query(2, { collectionId: collection, links: [`example.org/${'x'.repeat(100)}`] }));
        expect([scoped.totalHits, scoped.hits]).toEqual([0, []]);
        expect((await run(query(2, { collectionId: collection }))).hits).toHaveLength(25);
      }
      expect(cards.slice(0, 50).map((c) => c.cardId)).toEqual([
        ...(await search.semanticSearch(query(1))).hits.map((h) => h.cardId),
        ...(await search.semanticSearch(query(2))).hits.map((h) => h.cardId),
      ]);
    });

    test("a bookmark change reads and writes only the card's collections: its text and vector never travel, nothing else changes", () =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        const card = aCard().saying('cormorants dry their wings on harbour posts').along(axis(4, 5, 0.2)).tagged('birds').build();
        await index.upsert(card);
        const before = (await index.get(card.cardId))!;
        const [first, second] = [randomUUID(), randomUUID()];
        const inCollection = async (collectionId: string) => (await index.matchText('cormorants harbour', { ...everything, collectionId }, firstPage)).hits.map((h) => h.cardId);
        const change = async (collectionId: string, added: boolean, at: string) => {
          proxy.exchanges.length = 0;
          await index.setBookmark(collectionId, card.cardId, added, new Date(at));
          const seen = proxy.exchanges.map((e) => `${e.sent}\n${e.received}`).join('\n');
          expect(seen).not.toContain('cormorants');
          expect(seen).not.toMatch(/"vector"/);
          // The writes of the card's document it made.
          return proxy.exchanges.filter((e) => e.method !== 'GET' && /-cards\/_(doc|update|create)\//.test(e.path));
        };
        expect(await change(first, true, '2026-02-01T00:00:00Z')).toHaveLength(1);
        expect(await change(second, true, '2026-02-01T00:00:01Z')).toHaveLength(1);
        expect(await inCollection(first)).toEqual([card.cardId]);
        expect(await inCollection(second)).toEqual([card.cardId]);
        // Adding again (a replay, or a later add) and removing a collection the card is not in write nothing to the card.
        expect(await change(first, true, '2026-02-01T00:00:00Z')).toHaveLength(0);
        expect(await change(first, true, '2026-02-02T00:00:00Z')).toHaveLength(0);
        expect(await change(randomUUID(), false, '2026-02-02T00:00:00Z')).toHaveLength(0);
        expect(await change(second, false, '2026-02-03T00:00:00Z')).toHaveLength(1);
        expect(await change(second, false, '2026-02-04T00:00:00Z')).toHaveLength(0);
        expect(await inCollection(first)).toEqual([card.cardId]);
        expect(await inCollection(second)).toEqual([]);
        const after = (await index.get(card.cardId))!;
        expect(after).toEqual({ ...before, collectionIds: [first] });
        expect((await index.nearest(axis(4, 5, 0.2), { ...everything, collectionId: first }, firstPage)).hits[0]).toEqual({ cardId: card.cardId, score: expect.closeTo(1, 5) });
      }));

    test('an addition and a later removal of one bookmark applied at the same time leave the card out of the collection', () =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        const card = aCard().saying('puffins nest in burrows on cliff tops').build();
        await index.upsert(card);
        const collection = randomUUID();
        // The addition has read the card and its bookmark; its write of the card is held back while the removal runs whole.
        const held = proxy.holdNext(/-cards\/_update\//);
        const adding = index.setBookmark(collection, card.cardId, true, new Date('2026-03-01T00:00:00Z'));
        await held.reached;
        await index.setBookmark(collection, card.cardId, false, new Date('2026-03-02T00:00:00Z'));
        held.release();
        await adding;
        expect((await index.get(card.cardId))!.collectionIds).toEqual([]);
        expect((await index.matchText('puffins burrows', { ...everything, collectionId: collection }, firstPage)).total).toBe(0);
      }));

    test('promoting a collision reads and writes only whether it is a root: its text and vector never travel, a replay writes and refreshes nothing', () =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        const root = aCard().saying('gannets plunge into the sea').along(axis(2)).build();
        const collision = aCard().saying('gannets plunge into the cold sea headfirst').along(axis(3, 4, 0.3)).tagged('Birds').linking('https://example.org/gannets').collisionOf(root.cardId).build();
        await index.upsert(root);
        await index.upsert(collision);
        const collection = randomUUID();
        await index.setBookmark(collection, collision.cardId, true, new Date('2026-02-01T00:00:00Z'));
        await index.remove(root.cardId, new Date('2026-02-02T00:00:00Z'));
        const before = (await index.get(collision.cardId))!;
        const promote = async () => {
          proxy.exchanges.length = 0;
          const promoted = await index.promote(collision.cardId);
          const seen = proxy.exchanges.map((e) => `${e.sent}\n${e.received}`).join('\n');
          expect(seen).not.toContain('cold sea');
          expect(seen).not.toMatch(/"vector"/);
          const cardWrites = proxy.exchanges.filter((e) => e.method !== 'GET' && /-cards\/_(doc|update|create)\//.test(e.path)).length;
          return { promoted, cardWrites, refreshes: refreshesIn(proxy.exchanges) };
        };
        expect(await promote()).toEqual({ promoted: true, cardWrites: 1, refreshes: { forced: 0, waits: 1 } });
        expect(await promote()).toEqual({ promoted: true, cardWrites: 0, refreshes: { forced: 0, waits: 0 } });
        expect(await index.get(collision.cardId)).toEqual({ ...before, collisionOf: undefined });
        // Searched as a root at once: by its own words (a collision's words join the vocabulary only now) and its vector.
        expect((await index.matchText('headfirst', everything, firstPage)).hits.map((h) => h.cardId)).toEqual([collision.cardId]);
        expect((await index.nearest(axis(3, 4, 0.3), { ...everything, collectionId: collection, tags: ['birds'] }, firstPage)).hits).toEqual([{ cardId: collision.cardId, score: expect.closeTo(1, 5) }]);
      }));

    test('refreshing stale vectors sends no text and reads no old vector; a snapshot or bookmark written meanwhile is kept', () =>
      throughRecordingProxy(async (proxy) => {
        const prefix = `cards-test-${randomBytes(4).toString('hex')}`;
        const old = openIndex(prefix, CONTRACT_DIMENSIONS, 'model-a');
        const [plain, zero, bookmarked, edited] = [
          aCard().saying('kittiwakes nest on narrow ledges').along(axis(1)).tagged('birds').linking('https://example.org/kittiwakes').build(),
          aCard().saying('fulmars glide low over waves').along(axis(1)).build(),
          aCard().saying('shags dive for fish near rocks').along(axis(1)).build(),
          aCard().saying('skuas chase other birds for food').along(axis(1)).build(),
        ];
        for (const card of [plain, zero, bookmarked, edited]) await old.upsert(card);
        const current = openIndex(prefix, CONTRACT_DIMENSIONS, 'model-b', { url: proxy.url });
        const before = await Promise.all([plain, zero, bookmarked].map(async (c) => (await current.get(c.cardId))!));
        const collection = randomUUID();
        const newer = { ...edited, content: 'skuas chase terns for their catch', vector: axis(5), updatedAt: new Date('2026-01-05T00:00:00Z') };
        let first = true;
        proxy.exchanges.length = 0;
        const refreshed = await current.refreshStaleVectors(async (texts) => {
          if (first) {
            first = false;
            // While the batch is being embedded: a bookmark, and a newer snapshot embedded by the current model.
            await old.setBookmark(collection, bookmarked.cardId, true, new Date('2026-01-04T00:00:00Z'));
            await openIndex(prefix, CONTRACT_DIMENSIONS, 'model-b').upsert(newer);
          }
          return texts.map((t) => (t.startsWith('fulmars') ? new Float32Array(CONTRACT_DIMENSIONS) : axis(3)));
        });
        expect(refreshed).toBe(4);
        const sent = proxy.exchanges.map((e) => e.sent).join('\n');
        for (const card of [plain, zero, bookmarked, edited]) expect(sent).not.toContain(card.content);
        expect(proxy.exchanges.map((e) => e.received).join('\n')).not.toMatch(/"vector"/);
        const readBack = async (cardId: string) => {
          const card = (await current.get(cardId))!;
          return { ...card, vector: Array.from(card.vector) };
        };
        const withVector = (card: (typeof before)[number], vector: Float32Array) => ({ ...card, vector: Array.from(vector) });
        expect(await readBack(plain.cardId)).toEqual(withVector(before[0]!, axis(3)));
        expect(await readBack(zero.cardId)).toEqual(withVector(before[1]!, new Float32Array(CONTRACT_DIMENSIONS)));
        expect(await readBack(bookmarked.cardId)).toEqual(withVector({ ...before[2]!, collectionIds: [collection] }, axis(3)));
        expect(await readBack(edited.cardId)).toMatchObject({ content: newer.content, vector: Array.from(axis(5)) });
        expect(await current.staleVectorCount()).toBe(0);
        const ranked = (await current.nearest(axis(3), everything, firstPage)).hits;
        expect(tiesSorted(ranked)).toEqual([[plain.cardId, bookmarked.cardId].sort(), [zero.cardId, edited.cardId].sort()]);
        expect(ranked[0]!.score).toBeCloseTo(1, 5);
        expect((await current.nearest(axis(3), { ...everything, collectionId: collection }, firstPage)).hits.map((h) => h.cardId)).toEqual([bookmarked.cardId]);
      }));

    test('a replayed removal, or one of a card never stored, refreshes nothing; a first removal is out of both searches at once', () =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        const card = aCard().saying('razorbills raise one chick a year').build();
        await index.upsert(card);
        const refreshesOf = async (removals: () => Promise<unknown>) => {
          proxy.exchanges.length = 0;
          await removals();
          return refreshesIn(proxy.exchanges);
        };
        const removedAt = new Date('2026-02-01T00:00:00Z');
        expect(await refreshesOf(() => index.remove(card.cardId, removedAt))).toEqual({ forced: 0, waits: 1 });
        expect((await index.matchText('razorbills', everything, firstPage)).total).toBe(0);
        expect((await index.nearest(axis(0), everything, firstPage)).total).toBe(0);
        const none = { forced: 0, waits: 0 };
        expect(await refreshesOf(() => index.remove(card.cardId, removedAt))).toEqual(none);
        expect(await refreshesOf(() => index.remove(randomUUID(), removedAt))).toEqual(none);
        expect(await refreshesOf(() => index.batch(() => Promise.all([index.remove(card.cardId, removedAt), index.remove(randomUUID(), removedAt)])))).toEqual(none);
        // The removal still holds against a late snapshot.
        expect(await index.upsert(card)).toBe(false);
        expect(await index.get(card.cardId)).toBeUndefined();
      }));

    test('card events handled one at a time force no refresh: each waits for the periodic one, and its card is searchable once handled', () =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        const projector = new IndexProjector(index, alongFirstAxis, { publish: async () => undefined }, createLogger('test', 'silent'));
        const at = new Date('2026-01-01T00:00:00Z');
        for (const bird of ['puffins', 'gannets', 'fulmars', 'kittiwakes', 'razorbills']) {
          const card: events.CardSnapshot = { id: randomUUID(), authorId: randomUUID(), content: `${bird} nest on the northern cliffs`, tags: [], link: '', private: false, createdAt: at, updatedAt: at, collectionIds: [] };
          proxy.exchanges.length = 0;
          await projector.handle({ topic: Topics.card, payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: at, kind: { $case: 'created', value: { card } } }).finish() });
          expect(refreshesIn(proxy.exchanges)).toEqual({ forced: 0, waits: 1 });
          expect((await index.matchText(bird, everything, firstPage)).hits.map((h) => h.cardId)).toEqual([card.id]);
        }
      }));

    test('a refresh interval without periodic refreshes (-1, 0) is refused: writes wait for the periodic refresh', async () => {
      for (const refreshInterval of ['-1', '0s', '0ms', 'soon']) {
        expect(() => new ElasticsearchCardIndex({ url: engine!.url, dimensions: CONTRACT_DIMENSIONS, refreshInterval })).toThrow(/refreshInterval must be a positive duration/);
      }
    });

    test("the indexer re-indexing a snapshot or announcing a promoted card never reads a stored card's text or vector back", () =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        const published: OutgoingEvent[] = [];
        const projector = new IndexProjector(index, alongFirstAxis, { publish: async (outgoing) => void published.push(...outgoing) }, createLogger('test', 'silent'));
        const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));
        const snapshot = (content: string, more: Partial<events.CardSnapshot> = {}): events.CardSnapshot => ({
          id: randomUUID(), authorId: randomUUID(), content, tags: [], link: '', private: false, createdAt: at(0), updatedAt: at(0), collectionIds: [], ...more,
        });
        const cardEvent = (kind: events.CardEvent['kind'], minute: number) => ({ topic: Topics.card, payload: events.CardEvent.encode({ eventId: randomUUID(), occurredAt: at(minute), kind }).finish() });
        const announced = () => published.map((e) => events.CardIndexed.decode(e.payload)).map((a) => [a.cardId, a.vectorPointId]);
        const root = snapshot('guillemots crowd together on bare rock');
        const collision = snapshot('guillemots crowd together on bare rock ledges', { collisionOf: root.id });
        await projector.handle(cardEvent({ $case: 'created', value: { card: root } }, 0));
        await projector.handle(cardEvent({ $case: 'created', value: { card: collision } }, 0));
        const rootPoint = announced()[0]![1];
        proxy.exchanges.length = 0;
        const edit = { ...root, content: 'guillemots lay one pointed egg', updatedAt: at(1) };
        await projector.handle(cardEvent({ $case: 'updated', value: { card: edit, contentChanged: true, linkChanged: false, privacyChanged: false } }, 1));
        await projector.handle(cardEvent({ $case: 'deleted', value: { cardId: root.id, authorId: root.authorId, promotedCardId: collision.id } }, 2));
        const received = proxy.exchanges.map((e) => e.received).join('\n');
        expect(received).not.toContain('bare rock');
        expect(received).not.toMatch(/"vector"/);
        // The edit kept the root's vector point; the promoted collision is announced with its own, once a root.
        const collisionPoint = (await index.get(collision.id))!.vectorPointId;
        expect(announced()).toEqual([[root.id, rootPoint], [root.id, rootPoint], [collision.id, collisionPoint]]);
        expect(collisionPoint).not.toBe(rootPoint);
      }));

    test("the order-blind duplicate check reads a hit's text only, never its vector, and still tells a reordered text from a copy", () =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        const bagOfWords: Embedder = { ...alongFirstAxis, id: 'bag-of-words', orderAware: false, duplicateThreshold: () => 0.9 };
        const service = new SearchService(index, bagOfWords);
        const stored = aCard().saying('puffins nest in burrows on grassy cliff tops every spring').build();
        await index.upsert(stored);
        proxy.exchanges.length = 0;
        const copy = await service.findNearDuplicates('puffins nest in burrows on grassy cliff tops every spring again', undefined, 1);
        const reordered = await service.findNearDuplicates('spring every tops cliff grassy on burrows in nest puffins', undefined, 1);
        expect([copy, reordered]).toEqual([[expect.objectContaining({ cardId: stored.cardId, duplicate: true })], [expect.objectContaining({ cardId: stored.cardId, duplicate: false })]]);
        const reads = proxy.exchanges.filter((e) => e.method === 'GET' && /-cards\/_doc\//.test(e.path));
        expect(reads).toHaveLength(2);
        const received = reads.map((e) => e.received).join('\n');
        expect(received).toContain('puffins nest in burrows');
        expect(received).not.toMatch(/"vector"/);
      }));

    test('concurrent bookmark changes of one card are all applied', async () => {
      const index = openIndex();
      const card = aCard().build();
      await index.upsert(card);
      const collections = Array.from({ length: 6 }, () => aCard().build().cardId);
      await Promise.all(collections.map((c, i) => index.setBookmark(c, card.cardId, true, new Date(Date.UTC(2026, 1, 1, 0, i)))));
      expect((await index.get(card.cardId))!.collectionIds).toEqual([...collections].sort());
      for (const c of collections) expect((await index.nearest(axis(0), { ...everything, collectionId: c }, firstPage)).total).toBe(1);
    });

    /**
     * A search whose caller went away (its call cancelled: the handler's context.signal, passed as PageRequest.signal)
     * while its request to the engine was under way: the request is aborted (the transport closes its connection, which
     * cancels the engine's search task) and no later stage is sent; the search ends with the AbortError of a cancelled
     * call. The held request is let through at once, so before the signal reached the requests the search went on.
     */
    const abandonedWhileAsking = (held: RegExp, search: (index: ElasticsearchCardIndex, page: typeof firstPage & { signal: AbortSignal }) => Promise<unknown>) =>
      throughRecordingProxy(async (proxy) => {
        const index = openIndex(undefined, undefined, undefined, { url: proxy.url });
        await index.upsert(aCard().saying('herons stand still in the shallow reeds at dawn').along(axis(1)).build());
        const callerGone = new AbortController();
        const hold = proxy.holdNext(held);
        const searching = search(index, { ...firstPage, signal: callerGone.signal });
        await hold.reached;
        const sentBefore = proxy.arrivals.length;
        callerGone.abort();
        hold.release();
        await expect(searching).rejects.toMatchObject({ name: 'AbortError' });
        expect(proxy.arrivals.slice(sentBefore)).toEqual([]);
      });

    test("a semantic search whose caller went away aborts its engine request under way and sends no later one (an AbortError, the cancelled call's)", () =>
      abandonedWhileAsking(/-cards\/_count\b/, (index, page) => index.nearest(axis(1), everything, page)));

    test("a pasted full-text search whose caller went away aborts the stage under way (its words' frequencies) and sends no later one", () =>
      abandonedWhileAsking(/-cards\/_search\b/, (index, page) => {
        // More distinct words than MAX_QUERY_TERMS: the paste's first stage weighs its words before the vocabulary is read.
        const paste = Array.from({ length: 40 }, (_, i) => `heron${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}`).join(' ');
        return index.matchText(`herons reeds ${paste}`, everything, page);
      }));
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
