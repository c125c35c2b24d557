// How long a large card's duplicate checks hold the cards service's event loop (shinglesOf, findRoot,
// settleNearCopyRoots): the longest gap between two turns of a 1 ms timer while CardService.createCard stores a card of
// ~27,000 characters (3,200 words, near the 29,000-character limit) among 50 stored near copies of it (one root and its
// collisions, all found by its sketch: the most the checks compare), and the time a create takes, 20 rounds after a
// warm-up each: (a) the card is a near copy of the root (a collision: findRoot compares up to 20 by sketch), (b) another
// author's card, which none of them may hold (all private: a root, so settleNearCopyRoots compares up to 50 more).
// The HTML is cleaned before (not measured here: bench/card-html-hold.ts), search answers no candidates, SQLite in
// memory. Usage: pnpm exec tsx bench/card-duplicate-hold.ts
import { createLogger } from '@cards/platform';
import { InProcessContentLock } from '../services/cards/src/adapters/in-process/in-process-content-lock';
import { openCardsDatabase } from '../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../services/cards/src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../services/cards/src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../services/cards/src/adapters/sqlite/sqlite-vote-repository';
import { CardService } from '../services/cards/src/application/card-service';
import { cardTextFromHtml } from '../services/cards/src/domain/rules';
import { longestEventLoopGap } from './support/event-loop-gap';

const STORED = 50;
const WORDS = 3_200;

/** A deterministic text of WORDS words from a 2,000-word vocabulary; `variant` changes one word in 100 (Jaccard ~0.97). */
function text(variant: number): string {
  const words: string[] = [];
  for (let i = 0; i < WORDS; i++) words.push(i % 100 === variant % 100 && variant > 0 ? `vari${variant}x${i}` : `wort${(i * 7919 + (i >> 4)) % 2000}`);
  return `<p>${words.join(' ')}</p>`;
}

async function main(): Promise<void> {
  const cleaned = new Map<string, { cardHtml: string; content: string }>();
  const db = openCardsDatabase(':memory:');
  const service = new CardService({
    cards: new SqliteCardRepository(db),
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db),
    contentLock: new InProcessContentLock(),
    nearDuplicates: { find: async () => [] },
    files: { visibleFile: async () => null },
    users: { joinDates: async () => new Map() },
    eventsWritten: () => undefined,
    logger: createLogger('bench', 'silent'),
    htmlCleaner: { clean: async (html) => cleaned.get(html) ?? cardTextFromHtml(html) },
  });
  const create = (html: string, callerId = 'alice') => service.createCard({ callerId, cardHtml: html, link: '', private: true, tags: [] });
  for (let v = 0; v < STORED; v++) await create(text(v));
  const rounds = 25;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  for (const [label, callerId, duplicate] of [['(a) a collision of alice', 'alice', true], ['(b) a root of another author', 'bob', false]] as const) {
    const htmls = Array.from({ length: rounds }, (_, r) => text(1_000 + r + (duplicate ? 0 : 100)));
    for (const html of htmls) cleaned.set(html, cardTextFromHtml(html));
    const gaps: number[] = [];
    const took: number[] = [];
    for (const [r, html] of htmls.entries()) {
      const { gap: longest, took: createTook, result: created } = await longestEventLoopGap(() => create(html, duplicate ? callerId : `${callerId}${r}`));
      if (created.duplicate !== duplicate) throw new Error(`${label}: duplicate ${created.duplicate}`);
      if (r >= 5) {
        gaps.push(longest);
        took.push(createTook);
      }
    }
    console.log(`${label} (text ${cleaned.get(htmls[0]!)!.content.length} characters, ${STORED} near copies stored): longest event-loop gap median ${median(gaps).toFixed(1)} ms, max ${Math.max(...gaps).toFixed(1)} ms; a create takes median ${median(took).toFixed(1)} ms`);
  }
  db.close();
}

void main();
