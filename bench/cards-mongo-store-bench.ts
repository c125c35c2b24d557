// The cards store on MongoDB (mongo-java-server from test/engines, or a real server with BENCH_MONGO_URL) beside the
// SQLite store, same operations in one run: card inserts (with fingerprint and outbox event), votes with 100 in flight
// on one card (counters checked exact afterwards), findById latency, a user page (listByAuthor + count), sketch lookup.
// Usage: pnpm exec tsx bench/cards-mongo-store-bench.ts [cards=2000] [votes=2000]
import { randomBytes, randomUUID } from 'node:crypto';
import { connectMongo, createLogger, Topics } from '@cards/platform';
import { openMongoCardsStore } from '../services/cards/src/adapters/mongo';
import { openCardsDatabase } from '../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../services/cards/src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../services/cards/src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../services/cards/src/adapters/sqlite/sqlite-vote-repository';
import type { Card } from '../services/cards/src/domain/model';
import type { CardRepository, VoteRepository } from '../services/cards/src/domain/ports';
import { fingerprintOf } from '../services/cards/src/domain/rules';
import { startMongoSync } from '../test/engines/mongo';

const cardCount = Number(process.argv[2] ?? 2000);
const voteCount = Number(process.argv[3] ?? 2000);
const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma tau upsilon phi chi psi omega'.split(' ');
const text = () => Array.from({ length: 80 }, () => WORDS[Math.floor(Math.random() * WORDS.length)]).join(' ') + ` ${randomUUID()}`;

function aCard(authorId: string, i: number): Card {
  const at = new Date(Date.UTC(2026, 0, 1) + i * 1000);
  const content = text();
  return { id: randomUUID(), authorId, content, cardHtml: `<p>${content}</p>`, link: '', private: i % 5 === 0, tags: ['bench'], fileId: null, fileName: null, ocFilePath: null,
    vectorPointId: null, verificationScore: null, verifiedAt: null, collisionOf: null, totalUpvotes: 0, totalDownvotes: 0, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

async function pool<T>(items: T[], inFlight: number, work: (item: T) => Promise<unknown>) {
  let next = 0;
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (next < items.length) await work(items[next++]!);
  }));
}

async function measure(name: string, cards: CardRepository, votes: VoteRepository) {
  const author = randomUUID();
  const made = Array.from({ length: cardCount }, (_, i) => aCard(author, i));
  let t = performance.now();
  for (const c of made) await cards.insert(c, fingerprintOf(c.content), [{ topic: Topics.card, key: c.id, payload: new Uint8Array(64) }]);
  const insertPerS = cardCount / ((performance.now() - t) / 1000);

  const target = made[1]!;
  t = performance.now();
  await pool(Array.from({ length: voteCount }, (_, i) => i), 100, (i) => votes.upsert(`voter-${i}`, target.id, i % 3 !== 0, new Date(), randomUUID()));
  const votePerS = voteCount / ((performance.now() - t) / 1000);
  const stored = (await cards.findById(target.id))!;
  const expectUp = Array.from({ length: voteCount }, (_, i) => i).filter((i) => i % 3 !== 0).length;
  const exact = stored.totalUpvotes === expectUp && stored.totalDownvotes === voteCount - expectUp;
  const received = await votes.received(author);
  const authorExact = received.upvotes === expectUp && received.downvotes === voteCount - expectUp;

  const reads: number[] = [];
  for (let i = 0; i < 500; i++) {
    const s = performance.now();
    await cards.findById(made[Math.floor(Math.random() * made.length)]!.id);
    reads.push(performance.now() - s);
  }
  const pages: number[] = [];
  for (let i = 0; i < 100; i++) {
    const s = performance.now();
    const offset = 25 * Math.floor(Math.random() * Math.floor(cardCount / 25));
    await Promise.all([cards.listByAuthor(author, true, offset, 25), cards.countByAuthor(author, true)]);
    pages.push(performance.now() - s);
  }
  const sketches: number[] = [];
  for (let i = 0; i < 100; i++) {
    const s = performance.now();
    await cards.findBySketch(fingerprintOf(made[i]!.content).sketch, 4, 10);
    sketches.push(performance.now() - s);
  }
  console.log(`| ${name} | ${insertPerS.toFixed(0)} | ${votePerS.toFixed(0)} | ${exact && authorExact ? 'exact' : `WRONG ${stored.totalUpvotes}/${stored.totalDownvotes}`} | ${pct(reads, 50).toFixed(2)} / ${pct(reads, 99).toFixed(2)} | ${pct(pages, 50).toFixed(2)} / ${pct(pages, 99).toFixed(2)} | ${pct(sketches, 50).toFixed(2)} |`);
}

async function main() {
  console.log(`${cardCount} cards, ${voteCount} votes (100 in flight) on one card; latencies in ms (p50 / p99)`);
  console.log('| store | inserts/s | votes/s | counters | findById | user page (list+count) | findBySketch p50 |');
  console.log('|---|---|---|---|---|---|---|');
  const db = openCardsDatabase(':memory:');
  await measure('SQLite (:memory:)', new SqliteCardRepository(db), new SqliteVoteRepository(db));
  void SqliteCollectionRepository;
  db.close();

  const external = process.env.BENCH_MONGO_URL;
  const engine = external ? undefined : startMongoSync();
  const url = external ?? engine!.url;
  const connection = await connectMongo({ url, database: `cards_bench_${randomBytes(4).toString('hex')}`, logger: createLogger('bench', 'warn') });
  const store = await openMongoCardsStore(connection);
  await measure(external ? 'MongoDB (BENCH_MONGO_URL)' : 'mongo-java-server 1.47 (memory)', store.cards, store.votes);
  await connection.db.dropDatabase();
  await connection.close();
  await engine?.stop();
}

main().then(() => process.exit(0), (err: unknown) => {
  console.error(err);
  process.exit(1);
});
