// Fills a stopped all-in-one's embedded stores (DATA_DIR) with very big single things, through the services' own
// SQLite repositories: one user (A) with `cards` cards (every 10th private), a collection of A holding `bookmarks` of
// them, A's `files` files and `collections` collections (every other one public), a file of A whose collection holds
// `fileCards` of A's cards (the cards cite the file), a root card with `collisions` collisions (near copies, by B),
// `authors` users with one card each and votes on them (the top-users listing), and a user (N) with `notifications`
// notifications, every other one read. Users A, B and N must exist already (registered through the API, so they can
// log in); the authors are copies of A's identity row under other ids and e-mails. Prints the ids the measuring script
// (bench/big-accounts-bench.ts) needs as JSON.
// Usage: pnpm exec tsx bench/big-accounts-fill.ts <data dir> <A id> <B id> <N id>
//          [cards=20000] [bookmarks=10000] [notifications=30000] [authors=50000] [collisions=2000] [files=2000] [collections=2000] [fileCards=5000]
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { openSqlite } from '@cards/platform';
import { openCardsDatabase } from '../services/cards/src/adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from '../services/cards/src/adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from '../services/cards/src/adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from '../services/cards/src/adapters/sqlite/sqlite-vote-repository';
import type { Card, Collection } from '../services/cards/src/domain/model';
import { fingerprintOf } from '../services/cards/src/domain/rules';
import { SqliteFileRepository } from '../services/files/src/adapters/sqlite/sqlite-file-repository';
import { SqliteNotificationRepository } from '../services/notifications/src/adapters/sqlite/sqlite-notification-repository';

const [dataDir, aId, bId, nId] = process.argv.slice(2, 6) as [string, string, string, string];
const size = (i: number, fallback: number) => Number(process.argv[6 + i] ?? fallback);
const [cardCount, bookmarkCount, notificationCount, authorCount, collisionCount, fileCount, collectionCount, fileCardCount] = [
  size(0, 20000), size(1, 10000), size(2, 30000), size(3, 50000), size(4, 2000), size(5, 2000), size(6, 2000), size(7, 5000),
];
if (!dataDir || !aId || !bId || !nId) throw new Error('usage: big-accounts-fill.ts <data dir> <A id> <B id> <N id> [sizes...]');

// Recent times (notifications older than their retention would be removed at start), a tenth of a second apart.
let tick = Date.now() - 6 * 3_600_000;
const nextTime = () => new Date((tick += 100));
const words = 'library card article excerpt source reading notes history science method archive review'.split(' ');

function text(n: number, salt: string): string {
  const out: string[] = [];
  for (let i = 0; i < 80; i++) out.push(words[(n * 7 + i * 3 + (i % 5)) % words.length]!);
  return `${salt} ${out.join(' ')} ${n}`;
}

function aCard(authorId: string, content: string, extra: Partial<Card> = {}): Card {
  const at = nextTime();
  return {
    id: randomUUID(), authorId, content, cardHtml: `<p>${content}</p>`, link: 'https://example.com/a', private: false, hiddenByFile: false, tags: ['big'], fileId: null,
    fileName: null, filePrivate: false, ocFilePath: null, vectorPointId: null, verificationScore: null, verifiedAt: null, collisionOf: null, totalUpvotes: 0,
    totalDownvotes: 0, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at, ...extra,
  };
}

function aCollection(authorId: string, name: string, isPublic: boolean, fileId: string | null = null): Collection {
  const at = nextTime();
  return { id: randomUUID(), authorId, name, description: '', isPublic, fileId, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
}

async function main(): Promise<void> {
  const started = Date.now();
  const log = (what: string) => console.error(`${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);

  // Identity: the authors of the top-users listing, copies of A's row.
  const identity = openSqlite(join(dataDir, 'identity', 'identity.db'), []);
  const a = identity.prepare('SELECT * FROM users WHERE id = ?').get(aId) as Record<string, unknown>;
  const authors = Array.from({ length: authorCount }, () => randomUUID());
  const addUser = identity.prepare('INSERT INTO users (id, email, visible_email, password_hash, created_at, updated_at) VALUES (?, ?, 1, ?, ?, ?)');
  identity.transaction(() => {
    for (const [i, id] of authors.entries()) {
      const at = new Date(Date.UTC(2025, 0, 1) + i * 60_000).toISOString();
      addUser.run(id, `author${i}-${id.slice(0, 8)}@example.com`, a.password_hash, at, at);
    }
  })();
  identity.close();
  log(`${authorCount} users`);

  const db = openCardsDatabase(join(dataDir, 'cards', 'cards.db'));
  const cards = new SqliteCardRepository(db);
  const collections = new SqliteCollectionRepository(db);
  const votes = new SqliteVoteRepository(db);
  const fileId = randomUUID();
  const aCards: string[] = [];
  db.exec('BEGIN');
  for (let i = 0; i < cardCount; i++) {
    const inFile = i >= cardCount - fileCardCount;
    const card = aCard(aId, text(i, `a-card-${i}`), { private: i % 10 === 9, ...(inFile ? { fileId, fileName: 'big.docx' } : {}) });
    await cards.insert(card, fingerprintOf(card.content), []);
    aCards.push(card.id);
  }
  log(`${cardCount} cards of A`);
  const root = aCard(aId, text(1, 'collision-root'));
  await cards.insert(root, fingerprintOf(root.content), []);
  for (let i = 0; i < collisionCount; i++) {
    const copy = aCard(bId, `${root.content} copy ${i}`, { collisionOf: root.id });
    await cards.insert(copy, fingerprintOf(copy.content), []);
  }
  log(`root with ${collisionCount} collisions`);
  const authorCards: string[] = [];
  for (const [i, author] of authors.entries()) {
    const card = aCard(author, text(i, `author-card-${i}`));
    await cards.insert(card, fingerprintOf(card.content), []);
    authorCards.push(card.id);
  }
  for (const [i, cardId] of authorCards.entries()) {
    for (let v = 0; v < 1 + (i % 5); v++) await votes.upsert(authors[(i * 31 + v * 7919) % authors.length]!, cardId, (i + v) % 4 !== 0, nextTime(), randomUUID());
  }
  log(`${authorCount} authors' cards and votes`);
  const big = aCollection(aId, 'ten thousand', true);
  await collections.insert(big, []);
  for (let i = 0; i < bookmarkCount; i++) await collections.addBookmark(big.id, aCards[i]!, nextTime(), []);
  await collections.addBookmark(big.id, root.id, nextTime(), []);
  log(`collection of ${bookmarkCount + 1} bookmarks`);
  const small: string[] = [];
  for (let i = 0; i < collectionCount; i++) {
    const c = aCollection(aId, `collection ${i}`, i % 2 === 0);
    await collections.insert(c, []);
    small.push(c.id);
    await collections.addBookmark(c.id, aCards[i]!, nextTime(), []);
  }
  const fileCollection = aCollection(aId, 'big.docx', true, fileId);
  const { collection } = await collections.insertFileCollection(fileCollection, aCards.slice(cardCount - fileCardCount), () => []);
  log(`${collectionCount} collections and the file's collection of ${fileCardCount}`);
  db.exec('COMMIT');
  // As a finished create leaves a card (a card still owing its look-again would be resumed at start).
  db.exec('UPDATE cards SET look_again_owed = 0');
  db.close();

  const files = new SqliteFileRepository(join(dataDir, 'files', 'files.db'));
  const fileRecord = (id: string, i: number) => {
    const at = nextTime();
    return { id, userId: aId, fileName: `file-${i}.docx`, mimeType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', format: 'docx' as const,
      private: i % 3 === 2, size: 1000, tags: [], ocFilePath: null, ingestionStatus: 'done' as const, ingestionError: null, cardCount: 0, collectionId: null,
      idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
  };
  const filesDb = (files as unknown as { db: { exec(sql: string): void } }).db;
  filesDb.exec('BEGIN');
  for (let i = 0; i < fileCount; i++) await files.create(fileRecord(randomUUID(), i), []);
  await files.create({ ...fileRecord(fileId, fileCount), private: false, cardCount: fileCardCount, collectionId: collection.id }, []);
  filesDb.exec('COMMIT');
  await files.close();
  log(`${fileCount + 1} files`);

  const notifications = new SqliteNotificationRepository(join(dataDir, 'notifications', 'notifications.db'));
  const notificationsDb = (notifications as unknown as { db: { exec(sql: string): void } }).db;
  notificationsDb.exec('BEGIN');
  for (let i = 0; i < notificationCount; i++) {
    const at = nextTime();
    await notifications.add({ kind: 'collection_created', id: randomUUID(), userId: nId, read: i % 2 === 0, createdAt: at, updatedAt: at, sourceEventId: randomUUID(), collectionId: randomUUID() });
  }
  notificationsDb.exec('COMMIT');
  await notifications.close();
  log(`${notificationCount} notifications`);

  console.log(JSON.stringify({ a: aId, b: bId, n: nId, bigCollection: big.id, smallCollection: small[0], fileCollection: collection.id, fileId, root: root.id,
    aPublicCard: aCards[0], aCardCount: cardCount, authors: authorCount }));
}

void main();
