import { randomUUID } from 'node:crypto';
import { SqliteCardIndex } from '../src/adapters/sqlite/sqlite-card-index';
import { SearchService } from '../src/application/search-service';
import { shingleJaccard } from '../src/domain/text';
import { LABELLED_CARDS } from './fixtures/labelled-cards';
import { nearCopies } from './fixtures/near-copies';
import { sharedWinkEmbedder } from './shared-model';

const VOCABULARY = 'river mountain library archive signal harbor lantern meadow orbit canvas granite velvet compass thunder willow crystal ember falcon glacier horizon'.split(' ');

/** Word salads over one small vocabulary: distinct cards whose bag-of-words vectors are nearly identical. */
function salad(seed: number): string {
  let s = seed;
  const next = () => ((s = (s * 48271) % 2147483647) / 2147483647);
  return Array.from({ length: 80 }, () => VOCABULARY[Math.floor(next() * VOCABULARY.length)]!).join(' ');
}

/**
 * The near-duplicate verdict FindNearDuplicates gives the cards service, on the labelled set: every near copy merges,
 * no distinct card does, including word salads that a bag-of-words model cannot tell apart by cosine alone.
 */
describe('near-duplicate verdict (bundled embedder)', () => {
  const index = new SqliteCardIndex({ path: ':memory:', dimensions: 100 });
  const service = new SearchService(index, sharedWinkEmbedder());
  const ids: string[] = [];
  const salads = Array.from({ length: 6 }, (_, i) => salad(1000 + i * 7919));

  beforeAll(async () => {
    const texts = [...LABELLED_CARDS.map((c) => c.content), ...salads];
    const vectors = await sharedWinkEmbedder().embed(texts);
    for (let i = 0; i < texts.length; i++) {
      const cardId = randomUUID();
      ids.push(cardId);
      await index.upsert({ cardId, authorId: randomUUID(), content: texts[i]!, tags: [], link: '', private: false, vector: vectors[i]!, vectorPointId: randomUUID(), updatedAt: new Date() });
    }
  });
  afterAll(() => index.close());

  test('every near copy of a labelled card is a duplicate of that card', async () => {
    let minOverlap = 1;
    for (const [i, card] of LABELLED_CARDS.entries()) {
      for (const copy of nearCopies(card.content)) {
        const [best] = await service.findNearDuplicates(copy, undefined, 1);
        expect(best).toMatchObject({ cardId: ids[i], duplicate: true });
        minOverlap = Math.min(minOverlap, shingleJaccard(copy, card.content));
      }
    }
    console.log(`near copies: least word 3-shingle Jaccard ${minOverlap.toFixed(2)}`);
  });

  test('a card the index does not hold yet, sent along as unindexed, gets the same verdict as if it were indexed', async () => {
    const unindexedIndex = new SqliteCardIndex({ path: ':memory:', dimensions: 100 });
    const fresh = new SearchService(unindexedIndex, sharedWinkEmbedder());
    try {
      const cards = [...LABELLED_CARDS.slice(0, 6).map((c) => c.content), salads[0]!].map((content) => ({ cardId: randomUUID(), content }));
      for (const [i, card] of cards.slice(0, 6).entries()) {
        for (const copy of nearCopies(card.content)) {
          const [best] = await fresh.findNearDuplicates(copy, undefined, 1, cards);
          expect([i, best]).toEqual([i, expect.objectContaining({ cardId: card.cardId, duplicate: true })]);
        }
      }
      // Distinct cards stay distinct: another card of the topic, and a word salad on the same vocabulary as another.
      const related = await fresh.findNearDuplicates(LABELLED_CARDS[1]!.content, undefined, 5, [cards[0]!, cards[2]!]);
      expect(related.filter((c) => c.duplicate)).toEqual([]);
      const salad = await fresh.findNearDuplicates(salads[1]!, undefined, 5, cards);
      expect(salad[0]!.cardId).toBe(cards[6]!.cardId);
      expect(salad.some((c) => c.duplicate)).toBe(false);
      await expect(fresh.findNearDuplicates('text', undefined, 1, [{ cardId: 'not-a-uuid', content: 'text' }])).rejects.toThrow(/unindexed/);
    } finally {
      await unindexedIndex.close();
    }
  });

  test('one report template filled in with other figures or another company is no duplicate; copies of a report still are', async () => {
    const report = (company: string, change: string, quarter: string, margin: string, driver: string, chief: string) =>
      `${company} reported on Thursday that revenue ${change} in ${quarter} compared with the same quarter last year, driven mainly by ${driver}. ` +
      `Operating margin moved to ${margin}, and the company kept its forecast for the full year unchanged. ` +
      `Chief executive ${chief} told analysts on a call that demand remained solid and that the group would continue to invest in new products and in its sales network. ` +
      'The shares moved in early trading after the results were published.';
    const q1 = report('Northwind Traders', 'rose 5%', 'Q1', '14%', 'strong sales of kitchen appliances in Europe', 'Maria Lopez');
    const reportIndex = new SqliteCardIndex({ path: ':memory:', dimensions: 100 });
    const fresh = new SearchService(reportIndex, sharedWinkEmbedder());
    const stored = [{ cardId: randomUUID(), content: q1 }];
    const verdict = async (content: string) => (await fresh.findNearDuplicates(content, undefined, 1, stored))[0]!;
    const distinct = [
      report('Northwind Traders', 'fell 3%', 'Q2', '12%', 'strong sales of kitchen appliances in Europe', 'Maria Lopez'),
      report('Contoso Ltd', 'rose 7%', 'Q3', '16%', 'higher demand for cloud services in Asia', 'James Chen'),
      report('Contoso Ltd', 'rose 5%', 'Q1', '14%', 'higher demand for cloud services in Asia', 'James Chen'),
    ];
    for (const other of distinct) {
      const v = await verdict(other);
      // The embedder alone cannot tell them apart: the wording has to.
      expect(v.cosine).toBeGreaterThanOrEqual(sharedWinkEmbedder().duplicateThreshold());
      expect([other, v.duplicate]).toEqual([other, false]);
    }
    const sentences = q1.split(/(?<=\.) /);
    const copies = [
      q1.toLowerCase().replace(/[.,%]/g, ''),
      q1.replace('Northwind', 'Nortwind').replace('Lopez', 'López'),
      sentences.slice(0, -1).join(' '),
      [...sentences].reverse().join(' '),
      `${q1} Analysts had expected a similar result.`,
    ];
    for (const copy of copies) expect([copy, (await verdict(copy)).duplicate]).toEqual([copy, true]);
    await reportIndex.close();
  });

  test('an unindexed card the index already holds is answered once', async () => {
    const [first] = await service.findNearDuplicates(LABELLED_CARDS[0]!.content, undefined, 3, [{ cardId: ids[0]!, content: LABELLED_CARDS[0]!.content }]);
    const all = await service.findNearDuplicates(LABELLED_CARDS[0]!.content, undefined, 3, [{ cardId: ids[0]!, content: LABELLED_CARDS[0]!.content }]);
    expect(first).toMatchObject({ cardId: ids[0], duplicate: true });
    expect(all.filter((c) => c.cardId === ids[0])).toHaveLength(1);
  });

  test("a lookup whose caller went away while it read the hits' stored texts reads no more of them (the cancelled call's AbortError)", async () => {
    // Word salads on one vocabulary: every salad is a hit at a duplicate's cosine, so each one's stored text is read.
    const callerGone = new AbortController();
    const readText = index.contentOf.bind(index);
    const read = jest.spyOn(index, 'contentOf').mockImplementation(async (cardId) => {
      // The caller goes away (its call cancelled: the cards service's deadline) while the first text is read.
      callerGone.abort();
      return readText(cardId);
    });
    try {
      await expect(service.findNearDuplicates(salads[0]!, undefined, 25, [], callerGone.signal)).rejects.toMatchObject({ name: 'AbortError' });
      // Before, the text of every hit at a duplicate's cosine was read, for a lookup nobody waited for.
      expect(read).toHaveBeenCalledTimes(1);
    } finally {
      read.mockRestore();
    }
  });

  test('no distinct card merges: other cards of the same topic, and word salads on one vocabulary', async () => {
    for (const card of LABELLED_CARDS) {
      const candidates = await service.findNearDuplicates(card.content, undefined, 5);
      expect(candidates.filter((c) => c.duplicate).map((c) => c.cardId)).toEqual([ids[LABELLED_CARDS.indexOf(card)]]);
    }
    const fresh = salad(424242);
    const candidates = await service.findNearDuplicates(fresh, undefined, 5);
    console.log(`word salad: nearest cosine ${candidates[0]!.cosine.toFixed(3)} (above the cosine threshold), duplicate ${candidates[0]!.duplicate}`);
    expect(candidates.some((c) => c.duplicate)).toBe(false);
  });
});
