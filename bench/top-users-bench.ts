// The reads behind GET /api/top_users/:page in the cards service's SQLite store, at a store size: `authors` authors
// with one card each and `votes` votes spread over the cards by random voters (a fifth of them downvotes), every
// author's join date known (as after the first listing). Per read, p50 over 100 calls in ms: the look for ranked
// authors without a join date (made on every request), the count of ranked authors (total_user_pages), and the
// first, middle and last page (25 authors). The store is a file in a temporary directory, removed at the end.
// Usage: pnpm exec tsx bench/top-users-bench.ts [authors=20000] [votes=200000]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { openCardsDatabase } from '../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../services/cards/src/adapters/sqlite/sqlite-card-repository';
import { SqliteVoteRepository } from '../services/cards/src/adapters/sqlite/sqlite-vote-repository';
import type { Card } from '../services/cards/src/domain/model';
import { fingerprintOf } from '../services/cards/src/domain/rules';

const authorCount = Number(process.argv[2] ?? 20000);
const voteCount = Number(process.argv[3] ?? 200000);
let tick = Date.UTC(2026, 0, 1);
const nextTime = () => new Date((tick += 1));

function aCard(authorId: string, n: number): Card {
  const at = nextTime();
  const content = `card ${n} of the top users bench ${randomUUID()}`;
  return { id: randomUUID(), authorId, content, cardHtml: `<p>${content}</p>`, link: '', private: false, hiddenByFile: false, tags: [], fileId: null, fileName: null, filePrivate: false,
    ocFilePath: null, vectorPointId: null, verificationScore: null, verifiedAt: null, collisionOf: null, totalUpvotes: 0, totalDownvotes: 0, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
}

async function p50(work: () => Promise<unknown>): Promise<string> {
  for (let i = 0; i < 5; i++) await work();
  const times: number[] = [];
  for (let i = 0; i < 100; i++) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[50]!.toFixed(3);
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'top-users-bench-'));
  try {
    const db = openCardsDatabase(join(dir, 'cards.db'));
    const [cards, votes] = [new SqliteCardRepository(db), new SqliteVoteRepository(db)];
    const authors = Array.from({ length: authorCount }, () => randomUUID());
    const cardIds: string[] = [];
    db.exec('BEGIN');
    for (const [n, author] of authors.entries()) {
      const card = aCard(author, n);
      await cards.insert(card, fingerprintOf(card.content), []);
      cardIds.push(card.id);
    }
    for (let i = 0; i < voteCount; i++) {
      await votes.upsert(authors[Math.floor(Math.random() * authors.length)]!, cardIds[Math.floor(Math.random() * cardIds.length)]!, Math.random() < 0.8, nextTime(), randomUUID());
    }
    db.exec('COMMIT');
    for (let unknown = await votes.authorsWithoutJoinDate(500); unknown.length > 0; unknown = await votes.authorsWithoutJoinDate(500)) {
      await votes.recordJoinDates(new Map(unknown.map((id) => [id, new Date(Date.UTC(2025, 0, 1) + Math.floor(Math.random() * 300) * 86_400_000)])));
    }
    const ranked = await votes.countRankedAuthors();
    const lastOffset = Math.max(0, Math.floor((ranked - 1) / 25) * 25);
    const figures = {
      authors: authorCount,
      votes: voteCount,
      rankedAuthors: ranked,
      withoutJoinDateMs: await p50(() => votes.authorsWithoutJoinDate(500)),
      countRankedMs: await p50(() => votes.countRankedAuthors()),
      firstPageMs: await p50(() => votes.topAuthors(0, 25)),
      middlePageMs: await p50(() => votes.topAuthors(Math.floor(lastOffset / 50) * 25, 25)),
      lastPageMs: await p50(() => votes.topAuthors(lastOffset, 25)),
    };
    console.log(JSON.stringify(figures));
    db.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void main();
