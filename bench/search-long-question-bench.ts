// How a full-text query behaves as it grows past the paste threshold (LONG_QUERY_WORDS, 8 distinct words) with a word
// no card holds beside it: the 24 labelled cards (services/search/test/fixtures) in an in-memory SqliteCardIndex, and
// for each card a query of its first k distinct words of four letters or more and one stray word ("zqxwv"), k = 5..10.
// Prints, per k, how often the card the words came from is first and found, its mean score and the mean total. A
// question should not change its answer at the threshold: compare the rows either side of 8 distinct words.
// Usage: pnpm exec tsx bench/search-long-question-bench.ts [stray words, default zqxwv]
import { randomUUID } from 'node:crypto';
import { SqliteCardIndex } from '../services/search/src/adapters/sqlite/sqlite-card-index';
import { searchWords } from '../services/search/src/domain/text';
import { LABELLED_CARDS } from '../services/search/test/fixtures/labelled-cards';
import { axis, CONTRACT_DIMENSIONS } from '../services/search/test/card-index.contract';

async function main(): Promise<void> {
  const index = new SqliteCardIndex({ path: ':memory:', dimensions: CONTRACT_DIMENSIONS });
  const ids: string[] = [];
  for (const card of LABELLED_CARDS) {
    const cardId = randomUUID();
    ids.push(cardId);
    await index.upsert({ cardId, authorId: randomUUID(), content: card.content, tags: [], link: '', private: false, vector: axis(0), vectorPointId: randomUUID(), updatedAt: new Date() });
  }
  const stray = process.argv.slice(2).join(' ') || 'zqxwv';
  const scope = { tags: [], links: [] };
  const page = { offset: 0, limit: 25 };
  for (let k = 5; k <= 10; k++) {
    let first = 0;
    let found = 0;
    let totals = 0;
    let scores = 0;
    for (let i = 0; i < LABELLED_CARDS.length; i++) {
      const words = [...new Set(searchWords(LABELLED_CARDS[i]!.content))].filter((word) => word.length > 3).slice(0, k);
      const result = await index.matchText(`${words.join(' ')} ${stray}`, scope, page);
      const at = result.hits.findIndex((hit) => hit.cardId === ids[i]);
      if (at === 0) first++;
      if (at >= 0) {
        found++;
        scores += result.hits[at]!.score;
      }
      totals += result.total;
    }
    const distinct = k + stray.split(/\s+/).length;
    console.log(`${k} card words + "${stray}" (${distinct} distinct): source first ${first}/24, found ${found}/24, mean source score ${(scores / Math.max(1, found)).toFixed(3)}, mean total ${(totals / 24).toFixed(1)}`);
  }
  await index.close();
}

void main();
