import type { Embedder } from '../src/domain/ports';
import { LABELLED_CARDS } from './fixtures/labelled-cards';
import { nearCopies } from './fixtures/near-copies';
import { cosine } from './shared-model';

/** The Embedder port's contract, including the calibration of its duplicate threshold on the labelled set. */
export function describeEmbedderContract(name: string, factory: () => Embedder): void {
  describe(`Embedder contract: ${name}`, () => {
    let embedder: Embedder;
    beforeAll(async () => {
      embedder = factory();
      await embedder.ready();
    }, 120_000);

    test('gives one unit-length vector of the configured dimension per text, in order', async () => {
      const texts = ['The cat sat on the mat.', 'Interest rates rose again this quarter.'];
      const vectors = await embedder.embed(texts);
      expect(vectors).toHaveLength(2);
      for (const v of vectors) {
        expect(v).toHaveLength(embedder.dimensions);
        expect(Math.hypot(...v)).toBeCloseTo(1, 4);
      }
      const [again] = await embedder.embed([texts[1]!]);
      expect(cosine(again!, vectors[1]!)).toBeCloseTo(1, 5);
    });

    test('a paraphrase is closer to its card than cards of other topics are', async () => {
      const cards = await embedder.embed(LABELLED_CARDS.map((c) => c.content));
      const queries = await embedder.embed(LABELLED_CARDS.map((c) => c.paraphrase));
      let wins = 0;
      LABELLED_CARDS.forEach((card, i) => {
        const own = cosine(queries[i]!, cards[i]!);
        const otherTopics = LABELLED_CARDS.map((c, j) => (c.topic === card.topic ? -Infinity : cosine(queries[i]!, cards[j]!)));
        if (own > Math.max(...otherTopics)) wins++;
      });
      // A random embedder wins about 1 time in 22 here; the bar is nine in ten.
      console.log(`${name}: paraphrase beats every other topic's cards for ${wins}/${LABELLED_CARDS.length} cards`);
      expect(wins).toBeGreaterThanOrEqual(Math.ceil(0.9 * LABELLED_CARDS.length));
    });

    test('duplicate threshold: distinct cards on one topic never reach it, near copies always do', async () => {
      const cards = await embedder.embed(LABELLED_CARDS.map((c) => c.content));
      let maxDistinct = -1;
      for (let i = 0; i < cards.length; i++) for (let j = i + 1; j < cards.length; j++) maxDistinct = Math.max(maxDistinct, cosine(cards[i]!, cards[j]!));
      let minCopy = 2;
      for (let i = 0; i < cards.length; i++) {
        const content = LABELLED_CARDS[i]!.content;
        for (const copy of await embedder.embed(nearCopies(content))) minCopy = Math.min(minCopy, cosine(cards[i]!, copy));
      }
      const threshold = embedder.duplicateThreshold(LABELLED_CARDS[0]!.content.length);
      console.log(`${name}: distinct-but-related max cosine ${maxDistinct.toFixed(3)}, near-copy min cosine ${minCopy.toFixed(3)}, threshold ${threshold}`);
      expect(maxDistinct).toBeLessThan(threshold);
      expect(minCopy).toBeGreaterThanOrEqual(threshold);
    });
  });
}
