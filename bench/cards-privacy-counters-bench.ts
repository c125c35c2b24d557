// The vote counters split by privacy (cards service), on SQLite and on MongoDB (mongo-java-server from test/engines,
// or a real server with BENCH_MONGO_URL), same operations in one run:
//  - votes with 100 in flight on one card while its author flips its privacy every few milliseconds; afterwards the
//    author's public and own counters are checked exact against the card;
//  - a privacy flip (PUT /api/card/update's store write, which moves the card's totals) p50 / p99;
//  - a user page's cast-vote count for a user with `cast` votes: every vote (countCastBy) versus only the votes on cards
//    the viewer may see (countCastOnVisible, what the user page now shows).
// Usage: pnpm exec tsx bench/cards-privacy-counters-bench.ts [votes=2000] [cast=5000]
import { randomBytes, randomUUID } from 'node:crypto';
import { connectMongo, createLogger } from '@cards/platform';
import { openMongoCardsStore } from '../services/cards/src/adapters/mongo';
import { openCardsDatabase } from '../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../services/cards/src/adapters/sqlite/sqlite-card-repository';
import { SqliteVoteRepository } from '../services/cards/src/adapters/sqlite/sqlite-vote-repository';
import type { Card } from '../services/cards/src/domain/model';
import type { CardRepository, VoteRepository } from '../services/cards/src/domain/ports';
import { fingerprintOf } from '../services/cards/src/domain/rules';
import { startMongoSync } from '../test/engines/mongo';

const voteCount = Number(process.argv[2] ?? 2000);
const castCount = Number(process.argv[3] ?? 5000);
const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma tau upsilon phi chi psi omega'.split(' ');
const text = () => Array.from({ length: 80 }, () => WORDS[Math.floor(Math.random() * WORDS.length)]).join(' ') + ` ${randomUUID()}`;
let tick = Date.UTC(2026, 0, 1);
const nextTime = () => new Date((tick += 1));

function aCard(authorId: string, isPrivate = false): Card {
  const at = nextTime();
  const content = text();
  return { id: randomUUID(), authorId, content, cardHtml: `<p>${content}</p>`, link: '', private: isPrivate, tags: [], fileId: null, fileName: null, ocFilePath: null,
    vectorPointId: null, verificationScore: null, verifiedAt: null, collisionOf: null, totalUpvotes: 0, totalDownvotes: 0, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const ms = (x: number) => `${x.toFixed(2)}`;

async function pool<T>(items: T[], inFlight: number, work: (item: T) => Promise<unknown>) {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

async function timed(n: number, op: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await op(i);
    out.push(performance.now() - t);
  }
  return out;
}

async function measure(name: string, cards: CardRepository, votes: VoteRepository) {
  const author = randomUUID();
  let card = aCard(author);
  await cards.insert(card, fingerprintOf(card.content), []);

  // Votes racing privacy flips.
  let voting = true;
  let flips = 0;
  const flipper = (async () => {
    while (voting) {
      card = { ...card, private: !card.private, updatedAt: nextTime() };
      await cards.update(card, null, []);
      flips++;
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  let t = performance.now();
  await pool(Array.from({ length: voteCount }, (_, i) => i), 100, (i) => votes.upsert(`voter-${i}`, card.id, i % 3 !== 0, new Date(), randomUUID()));
  const votePerS = voteCount / ((performance.now() - t) / 1000);
  voting = false;
  await flipper;
  const stored = (await cards.findById(card.id))!;
  const own = await votes.received(author, true);
  const shown = await votes.received(author);
  const expectUp = Array.from({ length: voteCount }, (_, i) => i).filter((i) => i % 3 !== 0).length;
  const exact =
    stored.totalUpvotes === expectUp && stored.totalDownvotes === voteCount - expectUp &&
    own.upvotes === expectUp && own.downvotes === voteCount - expectUp &&
    shown.upvotes === (stored.private ? 0 : expectUp) && shown.downvotes === (stored.private ? 0 : voteCount - expectUp);

  // Privacy flips of a card holding the votes, one at a time.
  const flipTimes = await timed(200, async () => {
    card = { ...card, private: !card.private, updatedAt: nextTime() };
    await cards.update(card, null, []);
  });

  // A heavy voter: `castCount` votes on cards of 50 authors, a fifth of the cards private.
  const voter = `heavy-${randomUUID()}`;
  const authors = Array.from({ length: 50 }, () => randomUUID());
  const targets = Array.from({ length: castCount }, (_, i) => aCard(authors[i % authors.length]!, i % 5 === 0));
  for (const c of targets) await cards.insert(c, fingerprintOf(c.content), []);
  await pool(targets, 20, (c) => votes.upsert(voter, c.id, true, new Date(), randomUUID()));
  const all = await timed(50, () => votes.countCastBy(voter));
  const visible = await timed(50, () => votes.countCastOnVisible(voter, null));
  const visibleCount = await votes.countCastOnVisible(voter, null);

  console.log(
    `| ${name} | ${votePerS.toFixed(0)} | ${flips} | ${exact ? 'exact' : 'NOT EXACT'} | ${ms(pct(flipTimes, 50))} / ${ms(pct(flipTimes, 99))} | ` +
      `${ms(pct(all, 50))} | ${ms(pct(visible, 50))} / ${ms(pct(visible, 99))} (${visibleCount} of ${castCount}) |`,
  );
}

async function main() {
  console.log(`cards privacy counters bench: ${voteCount} votes (100 in flight) racing privacy flips; a voter with ${castCount} votes; node ${process.version}`);
  console.log('| store | votes/s | flips during the votes | counters | privacy flip p50 / p99 ms | cast count, all p50 ms | cast count, visible p50 / p99 ms |');
  console.log('|---|---|---|---|---|---|---|');
  const db = openCardsDatabase(':memory:');
  await measure('SQLite (:memory:)', new SqliteCardRepository(db), new SqliteVoteRepository(db));
  db.close();

  const external = process.env.BENCH_MONGO_URL;
  const engine = external ? { url: external, stop: () => undefined } : startMongoSync();
  const logger = createLogger('bench', 'fatal');
  const connection = await connectMongo({ url: engine.url, database: `bench_${randomBytes(4).toString('hex')}`, logger });
  try {
    const store = await openMongoCardsStore(connection);
    await measure(external ? 'MongoDB (BENCH_MONGO_URL)' : 'mongo-java-server', store.cards, store.votes);
  } finally {
    await connection.db.dropDatabase().catch(() => undefined);
    await connection.close();
    engine.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
