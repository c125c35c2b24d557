import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { aCard, axis, CONTRACT_DIMENSIONS, describeCardIndexContract } from './card-index.contract';
import { testTempDir } from '../../../test/support/cleanup';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempFile = () => {
  const dir = testTempDir('search-index-');
  dirs.push(dir);
  return join(dir, 'index.db');
};

describeCardIndexContract('SqliteCardIndex (exact scan)', async () => new SqliteCardIndex({ path: tempFile(), dimensions: CONTRACT_DIMENSIONS }));
// The same contract through the sign-code candidate path used for large scopes.
describeCardIndexContract('SqliteCardIndex (sign-code candidates)', async () =>
  new SqliteCardIndex({ path: tempFile(), dimensions: CONTRACT_DIMENSIONS, exactScanLimit: 0, candidateFloor: 40 }),
);

// ElasticsearchCardIndex runs the same contract in elasticsearch-card-index.test.ts (skipped there, with the reason, when no engine is available).

describe('SqliteCardIndex', () => {
  test('rebuilds its in-memory search structures from the file after a restart', async () => {
    const path = tempFile();
    const first = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    const owner = randomUUID();
    const collection = randomUUID();
    const card = aCard().by(owner).private().saying('glaciers carve valleys').along(axis(2)).build();
    await first.upsert(card);
    await first.setBookmark(collection, card.cardId, true, new Date('2026-01-02T00:00:00Z'));
    await first.close();
    const second = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    const scope = { callerId: owner, tags: [], links: [], collectionId: collection };
    expect((await second.nearest(axis(2), scope, { offset: 0, limit: 25 })).hits.map((h) => h.cardId)).toEqual([card.cardId]);
    expect((await second.matchText('glacier valleys', scope, { offset: 0, limit: 25 })).hits.map((h) => h.cardId)).toEqual([card.cardId]);
    expect((await second.nearest(axis(2), { tags: [], links: [] }, { offset: 0, limit: 25 })).total).toBe(0);
    await second.close();
  });

  test('cards embedded by another embedder stay out of search until their vectors are refreshed', async () => {
    const path = tempFile();
    const before = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS, embedderId: 'model-a' });
    const card = aCard().saying('basalt columns form as lava cools').along(axis(1)).build();
    await before.upsert(card);
    await before.close();
    const after = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS, embedderId: 'model-b' });
    const everything = { tags: [], links: [] };
    expect(after.staleVectorCount()).toBe(1);
    expect((await after.nearest(axis(3), everything, { offset: 0, limit: 25 })).total).toBe(0);
    expect(await after.refreshStaleVectors(async (texts) => texts.map(() => axis(3)))).toBe(1);
    expect(after.staleVectorCount()).toBe(0);
    const hits = (await after.nearest(axis(3), everything, { offset: 0, limit: 25 })).hits;
    expect(hits.map((h) => h.cardId)).toEqual([card.cardId]);
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    await after.close();
  });

  test('a score floor above what the most telling query word gives alone is lowered to it; phrase holders still rank first, however the pages split', async () => {
    // Configured at 0.9, the floor was above the 0.85 of every card holding the three words scattered, so only the
    // phrase holders matched; now a card holding the query's most telling word always matches (textScoreFloor).
    const index = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS, minTextScore: 0.9 });
    const holders: string[] = [];
    const scattered: string[] = [];
    for (let i = 0; i < 12; i++) {
      const card = aCard().saying(i % 2 === 0 ? `the red fox jumps ${i}` : `the fox jumps red ${i}`).build();
      (i % 2 === 0 ? holders : scattered).push(card.cardId);
      await index.upsert(card);
    }
    const scope = { tags: [], links: [] };
    const first = await index.matchText('red fox jumps', scope, { offset: 0, limit: 4 });
    const second = await index.matchText('red fox jumps', scope, { offset: 4, limit: 4 });
    const third = await index.matchText('red fox jumps', scope, { offset: 8, limit: 4 });
    expect([first.total, second.total, third.total]).toEqual([12, 12, 12]);
    const ranked = [...first.hits, ...second.hits, ...third.hits].map((h) => h.cardId);
    expect(ranked.slice(0, 6).sort()).toEqual(holders.sort());
    expect(ranked.slice(6).sort()).toEqual(scattered.sort());
    await index.close();
  });

  test('an edited card is matched on its new words: in a row before, scattered after', async () => {
    const index = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS });
    const edited = aCard().saying('the red fox jumps red fox jumps').at('2026-01-01T00:00:00Z').build();
    const other = aCard().saying('the red fox jumps').build();
    await index.upsert(edited);
    await index.upsert(other);
    const scope = { tags: [], links: [] };
    const before = await index.matchText('red fox jumps', scope, { offset: 0, limit: 25 });
    expect(before.hits[0]!.score).toBe(before.hits[1]!.score);
    await index.upsert({ ...edited, content: 'jumps the fox red', updatedAt: new Date('2026-01-02T00:00:00Z') });
    const after = await index.matchText('red fox jumps', scope, { offset: 0, limit: 25 });
    expect(after.hits.map((h) => h.cardId)).toEqual([other.cardId, edited.cardId]);
    expect(after.hits[0]!.score).toBeGreaterThan(after.hits[1]!.score);
    expect(after.total).toBe(2);
    await index.close();
  });

  test('common words in a query change neither the matches nor their count nor the ranking (only the cost)', async () => {
    // The same cards, ranked with every matching card a candidate and with light words only adding to others' finds.
    const pruned = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS });
    const unpruned = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS, pruneTextCandidates: false });
    const vocabulary = ['glacier', 'valley', 'basalt', 'column', 'river', 'delta', 'volcano', 'magma', 'granite', 'canyon', 'erosion', 'sediment', 'fossil', 'mineral', 'crystal', 'quartz', 'plateau', 'tundra', 'monsoon', 'estuary'];
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
    for (let i = 0; i < 400; i++) {
      // Every card holds "the", most hold "of", few hold each rarer word.
      const text = ['the', ...Array.from({ length: 6 }, () => (random() < 0.6 ? pick(['of', 'and', 'the']) : pick(vocabulary)))].join(' ');
      const card = aCard().saying(text).build();
      await pruned.upsert(card);
      await unpruned.upsert(card);
    }
    const scope = { tags: [], links: [] };
    const queries = ['the glacier', 'the of glacier valley', 'of the and', 'the basalt colum', 'and of the river delta estuary', 'granit the of', 'the'];
    for (let q = 0; q < 30; q++) queries.push([pick(['the', 'of', 'and']), pick(vocabulary), pick(vocabulary).slice(1)].join(' '));
    for (const query of queries) {
      for (const offset of [0, 25]) {
        const a = await pruned.matchText(query, scope, { offset, limit: 25 });
        const b = await unpruned.matchText(query, scope, { offset, limit: 25 });
        expect({ query, offset, total: a.total, hits: a.hits }).toEqual({ query, offset, total: b.total, hits: b.hits });
      }
    }
    expect((await pruned.matchText('the of glacier valley', scope, { offset: 0, limit: 25 })).total).toBeGreaterThan(0);
    await pruned.close();
    await unpruned.close();
  });

  test('tag and link filters through collisions read no row per query, and hold after a restart and for later changes', async () => {
    const path = tempFile();
    const owner = randomUUID();
    const root = aCard().saying('tides are caused by the moon').tagged('alpha').along(axis(1)).build();
    const open = aCard().saying('tides are caused by the moon').tagged(' Beta ').linking('https://Beta.example/y').along(axis(1)).collisionOf(root.cardId).build();
    const hidden = aCard().by(owner).private().saying('tides are caused by the moon').tagged('gamma').along(axis(1)).collisionOf(root.cardId).build();
    const first = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    for (const card of [root, open, hidden]) await first.upsert(card);
    await first.close();
    const index = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    await index.ready();
    const found = async (scope: { tags?: string[]; links?: string[]; callerId?: string }) => {
      const full = { tags: [], links: [], ...scope };
      const semantic = (await index.nearest(axis(1), full, { offset: 0, limit: 25 })).hits.map((h) => h.cardId);
      const text = (await index.matchText('tides moon', full, { offset: 0, limit: 25 })).hits.map((h) => h.cardId);
      expect(text).toEqual(semantic);
      return semantic;
    };
    // Queries are answered from memory: not one statement is prepared (read) while they run.
    const db = (index as unknown as { db: { prepare: (sql: string) => unknown } }).db;
    const prepare = jest.spyOn(db, 'prepare');
    expect(await found({ tags: ['beta'] })).toEqual([root.cardId]);
    expect(await found({ links: ['beta.example'] })).toEqual([root.cardId]);
    expect(await found({ tags: ['gamma'] })).toEqual([]);
    expect(await found({ tags: ['gamma'], callerId: owner })).toEqual([root.cardId]);
    expect(prepare).not.toHaveBeenCalled();
    prepare.mockRestore();
    // A newer snapshot of the collision (private now, another tag) replaces what was kept of it; a removal forgets it.
    await index.upsert({ ...open, private: true, tags: ['delta'], updatedAt: new Date('2026-01-02T00:00:00Z') });
    expect(await found({ tags: ['beta'] })).toEqual([]);
    expect(await found({ tags: ['delta'] })).toEqual([]);
    expect(await found({ tags: ['delta'], callerId: open.authorId })).toEqual([root.cardId]);
    await index.remove(hidden.cardId, new Date('2026-01-03T00:00:00Z'));
    expect(await found({ tags: ['gamma'], callerId: owner })).toEqual([]);
    await index.close();
  });

  test('a collection scope reads no row per query, and holds after a restart and for later changes', async () => {
    const path = tempFile();
    const owner = randomUUID();
    const collection = randomUUID();
    const words = 'tides are caused by the moon';
    const root = aCard().saying(words).along(axis(1)).build();
    const other = aCard().saying(words).along(axis(2)).build();
    const bookmarkedRoot = aCard().saying(words).along(axis(3)).build();
    // Bookmarked collisions: one public (its root is in the scope for everyone), one private (for its author only).
    const open = aCard().saying(words).along(axis(1)).collisionOf(root.cardId).build();
    const hidden = aCard().by(owner).private().saying(words).along(axis(2)).collisionOf(other.cardId).build();
    const first = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    for (const card of [root, other, bookmarkedRoot, open, hidden]) await first.upsert(card);
    for (const card of [open, hidden, bookmarkedRoot]) await first.setBookmark(collection, card.cardId, true, new Date('2026-01-02T00:00:00Z'));
    await first.close();
    const index = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    await index.ready();
    const db = (index as unknown as { db: { prepare: (sql: string) => unknown } }).db;
    const found = async (callerId?: string) => {
      const scope = { tags: [], links: [], collectionId: collection, ...(callerId ? { callerId } : {}) };
      // Queries are answered from memory: not one statement is prepared (read) while they run.
      const prepare = jest.spyOn(db, 'prepare');
      try {
        const semantic = (await index.nearest(axis(1), scope, { offset: 0, limit: 25 })).hits.map((h) => h.cardId).sort();
        const text = (await index.matchText('tides moon', scope, { offset: 0, limit: 25 })).hits.map((h) => h.cardId).sort();
        expect(prepare).not.toHaveBeenCalled();
        expect(text).toEqual(semantic);
        return semantic;
      } finally {
        prepare.mockRestore();
      }
    };
    const ids = (...cards: { cardId: string }[]) => cards.map((c) => c.cardId).sort();
    expect(await found()).toEqual(ids(root, bookmarkedRoot));
    expect(await found(owner)).toEqual(ids(root, other, bookmarkedRoot));
    // A newer snapshot of the public collision (private now) hides its root from everyone but its author.
    await index.upsert({ ...open, private: true, updatedAt: new Date('2026-01-03T00:00:00Z') });
    expect(await found()).toEqual(ids(bookmarkedRoot));
    expect(await found(open.authorId)).toEqual(ids(root, bookmarkedRoot));
    // The private collision promoted: the collection holds it, a root now, not its former root.
    await index.promote(hidden.cardId);
    expect(await found(owner)).toEqual(ids(hidden, bookmarkedRoot));
    expect(await found()).toEqual(ids(bookmarkedRoot));
    // A collision bookmarked later puts its root in; the bookmark taken back, or the collision removed, takes it out.
    const late = aCard().saying(words).along(axis(2)).collisionOf(other.cardId).build();
    await index.upsert(late);
    await index.setBookmark(collection, late.cardId, true, new Date('2026-01-04T00:00:00Z'));
    expect(await found()).toEqual(ids(other, bookmarkedRoot));
    await index.setBookmark(collection, late.cardId, false, new Date('2026-01-05T00:00:00Z'));
    expect(await found()).toEqual(ids(bookmarkedRoot));
    await index.setBookmark(collection, late.cardId, true, new Date('2026-01-06T00:00:00Z'));
    expect(await found()).toEqual(ids(other, bookmarkedRoot));
    await index.remove(late.cardId, new Date('2026-01-07T00:00:00Z'));
    expect(await found()).toEqual(ids(bookmarkedRoot));
    expect(await found(open.authorId)).toEqual(ids(root, bookmarkedRoot));
    await index.close();
  });

  test("removing a card takes it out of each collection holding it, visiting those collections only, after a restart too", async () => {
    const path = tempFile();
    const words = 'tides are caused by the moon';
    const gone = aCard().saying(words).along(axis(1)).build();
    const kept = aCard().saying(words).along(axis(2)).build();
    const first = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    await first.upsert(gone);
    await first.upsert(kept);
    // Many collections hold the card kept; two hold the card removed (one of them the kept card too).
    const others = Array.from({ length: 200 }, () => randomUUID());
    const holding = [randomUUID(), others[0]!];
    const at = new Date('2026-01-02T00:00:00Z');
    for (const collectionId of others) await first.setBookmark(collectionId, kept.cardId, true, at);
    for (const collectionId of holding) await first.setBookmark(collectionId, gone.cardId, true, at);
    // A bookmark taken back still has its row: the card is in no scope of that collection, before or after.
    const takenBack = others[1]!;
    await first.setBookmark(takenBack, gone.cardId, true, at);
    await first.setBookmark(takenBack, gone.cardId, false, new Date('2026-01-03T00:00:00Z'));
    await first.close();
    const index = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    await index.ready();
    const inScope = async (collectionId: string) =>
      (await index.nearest(axis(1), { tags: [], links: [], collectionId }, { offset: 0, limit: 25 })).hits.map((h) => h.cardId).sort();
    expect(await inScope(holding[0]!)).toEqual([gone.cardId]);
    expect(await inScope(holding[1]!)).toEqual([gone.cardId, kept.cardId].sort());
    expect(await inScope(takenBack)).toEqual([kept.cardId]);

    // The removal reads the card's bookmarks through an index and touches the memberships of its own collections only.
    const internals = index as unknown as { db: { prepare: (sql: string) => unknown }; collections: Map<string, Set<string>> };
    const memberships = internals.collections;
    const touched = new Set<string>();
    for (const [collectionId, members] of memberships) {
      for (const method of ['delete', 'has'] as const) {
        const original = members[method].bind(members);
        jest.spyOn(members, method).mockImplementation((cardId: string) => {
          touched.add(collectionId);
          return original(cardId) as never;
        });
      }
    }
    const walks = (['values', 'entries', 'keys', 'forEach', Symbol.iterator] as const).map((method) => jest.spyOn(memberships, method as 'values'));
    const prepare = jest.spyOn(internals.db, 'prepare');
    await index.remove(gone.cardId, new Date('2026-01-04T00:00:00Z'));
    for (const walk of walks) expect(walk).not.toHaveBeenCalled();
    expect([...touched].sort()).toEqual([...holding].sort());
    const statements = prepare.mock.calls.map(([sql]) => sql);
    expect(statements.some((sql) => /FROM bookmarks/.test(sql))).toBe(true);
    prepare.mockRestore();
    jest.restoreAllMocks();
    const raw = internals.db as unknown as { prepare: (sql: string) => { all: (...args: unknown[]) => { detail: string }[] } };
    for (const sql of statements) {
      const plan = raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...sql.split('?').slice(1).map(() => 'x'));
      expect({ sql, scans: plan.map((step) => step.detail).filter((detail) => /^SCAN /.test(detail)) }).toEqual({ sql, scans: [] });
    }

    for (const collectionId of [...holding, takenBack]) expect(await inScope(collectionId)).not.toContain(gone.cardId);
    expect(await inScope(holding[1]!)).toEqual([kept.cardId]);
    expect(await inScope(others[2]!)).toEqual([kept.cardId]);
    expect((await index.get(kept.cardId))!.collectionIds).toEqual([...others].sort());
    // A collection left empty holds nothing, and a late bookmark of the removed card is refused.
    expect(await inScope(holding[0]!)).toEqual([]);
    await index.setBookmark(holding[0]!, gone.cardId, true, new Date('2026-01-05T00:00:00Z'));
    expect(await inScope(holding[0]!)).toEqual([]);
    await index.close();
    const reopened = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    await reopened.ready();
    for (const collectionId of [...holding, takenBack]) {
      const hits = (await reopened.nearest(axis(1), { tags: [], links: [], collectionId }, { offset: 0, limit: 25 })).hits.map((h) => h.cardId);
      expect(hits).not.toContain(gone.cardId);
    }
    await reopened.close();
  });

  test('the tie order of equal scores (newest first) holds after a restart; a card stored without created_at ranks last until a republished snapshot brings it', async () => {
    const path = tempFile();
    const index = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    const old = aCard().saying('tied words here').along(axis(4)).createdAt(new Date('2026-01-01T00:00:00Z')).build();
    const recent = aCard().saying('tied words here').along(axis(4)).createdAt(new Date('2026-01-05T00:00:00Z')).build();
    const undated = aCard().saying('tied words here').along(axis(4)).build();
    for (const card of [undated, old, recent]) await index.upsert(card);
    await index.close();
    const reopened = new SqliteCardIndex({ path, dimensions: CONTRACT_DIMENSIONS });
    const everything = { tags: [], links: [] };
    const order = async () => [
      (await reopened.nearest(axis(4), everything, { offset: 0, limit: 25 })).hits.map((h) => h.cardId),
      (await reopened.matchText('tied words', everything, { offset: 0, limit: 25 })).hits.map((h) => h.cardId),
    ];
    expect(await order()).toEqual([[recent.cardId, old.cardId, undated.cardId], [recent.cardId, old.cardId, undated.cardId]]);
    // A reindex republishes the card as stored (same updated_at), now with its created_at.
    await reopened.upsert({ ...undated, createdAt: new Date('2026-01-03T00:00:00Z') });
    expect(await order()).toEqual([[recent.cardId, undated.cardId, old.cardId], [recent.cardId, undated.cardId, old.cardId]]);
    expect((await reopened.get(undated.cardId))!.createdAt).toEqual(new Date('2026-01-03T00:00:00Z'));
    await reopened.close();
  });

  test('among many cards of one word score, the phrase holders rank first and every group in tie order (newest first), whether few or most of the newest cards hold the phrase', async () => {
    for (const every of [50, 2]) {
      const index = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS });
      const base = Date.parse('2026-01-01T00:00:00Z');
      // 400 cards holding every query word; every `every`-th holds them in a row. Creation order differs from storage order.
      const cards = Array.from({ length: 400 }, (_, i) => ({
        holds: i % every === 0,
        card: aCard().saying(i % every === 0 ? `alpha beta gamma card ${i}` : `gamma beta alpha card ${i}`).createdAt(new Date(base + ((i * 7) % 400) * 60_000)).build(),
      }));
      for (const { card } of [...cards].reverse()) await index.upsert(card);
      const newestFirst = (list: typeof cards) => list.sort((a, b) => b.card.createdAt!.getTime() - a.card.createdAt!.getTime()).map((c) => c.card.cardId);
      const expected = [...newestFirst(cards.filter((c) => c.holds)), ...newestFirst(cards.filter((c) => !c.holds))];
      const paged: string[] = [];
      for (let offset = 0; offset < 75; offset += 25) {
        const page = await index.matchText('alpha beta gamma', { tags: [], links: [] }, { offset, limit: 25 });
        expect(page.total).toBe(400);
        paged.push(...page.hits.map((h) => h.cardId));
      }
      expect(paged).toEqual(expected.slice(0, 75));
      await index.close();
    }
  });

  test('rejects a vector of the wrong dimension instead of storing it', async () => {
    const index = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS });
    await expect(index.upsert(aCard().along(new Float32Array(3)).build())).rejects.toThrow(/dimensions/);
    await index.close();
  });
});

describe('SqliteCardIndex searches whose call was cancelled', () => {
  test('a search whose caller went away while it waited for its scoring turn is not scored; the others are', async () => {
    const index = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS });
    const card = aCard().saying('the red fox jumps').build();
    await index.upsert(card);
    const scope = { tags: [], links: [] };
    const gone = new AbortController();
    const first = index.matchText('red fox', scope, { offset: 0, limit: 25 });
    const abandoned = index.matchText('red fox', scope, { offset: 0, limit: 25, signal: gone.signal });
    const abandonedNearest = index.nearest(card.vector, scope, { offset: 0, limit: 25, signal: gone.signal });
    const last = index.nearest(card.vector, scope, { offset: 0, limit: 25 });
    // The gRPC server aborts the handler's signal when the call is cancelled (the gateway's client went away).
    gone.abort();
    expect((await first).hits.map((h) => h.cardId)).toEqual([card.cardId]);
    // Before, both were scored for nobody.
    await expect(abandoned).rejects.toMatchObject({ name: 'AbortError' });
    await expect(abandonedNearest).rejects.toMatchObject({ name: 'AbortError' });
    expect((await last).hits.map((h) => h.cardId)).toEqual([card.cardId]);
    await index.close();
  });
});
