import { randomUUID } from 'node:crypto';
import type { Card, Collection } from '../src/domain/model';

let tick = Date.parse('2026-01-01T00:00:00.000Z');
/** Distinct, increasing timestamps for test data. */
export const nextTime = () => new Date((tick += 1000));

const WORDS = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda omicron sigma tau upsilon phi chi psi omega'.split(' ');
export function someContent(words = 80): string {
  return Array.from({ length: words }, () => WORDS[Math.floor(Math.random() * WORDS.length)]).join(' ') + ` ${randomUUID()}`;
}

/** Test card builder: aCard().by(user).private().build(). */
export function aCard() {
  const at = nextTime();
  const card: Card = {
    id: randomUUID(),
    authorId: randomUUID(),
    content: someContent(),
    cardHtml: '',
    link: 'https://example.com/',
    private: false,
    hiddenByFile: false,
    tags: ['t1', 't2'],
    fileId: null,
    fileName: null,
    filePrivate: false,
    ocFilePath: null,
    vectorPointId: null,
    verificationScore: null,
    verifiedAt: null,
    collisionOf: null,
    totalUpvotes: 0,
    totalDownvotes: 0,
    idempotencyKey: null,
    requestFingerprint: null,
    createdAt: at,
    updatedAt: at,
  };
  const builder = {
    by: (authorId: string) => ((card.authorId = authorId), builder),
    private: () => ((card.private = true), builder),
    hiddenByFile: () => ((card.private = true), (card.hiddenByFile = true), builder),
    withContent: (content: string) => ((card.content = content), builder),
    collisionOf: (rootId: string) => ((card.collisionOf = rootId), builder),
    fromFile: (fileId: string, fileName: string, filePrivate = false) => ((card.fileId = fileId), (card.fileName = fileName), (card.filePrivate = filePrivate), builder),
    withIdempotencyKey: (key: string, requestFingerprint: string | null = null) => ((card.idempotencyKey = key), (card.requestFingerprint = requestFingerprint), builder),
    build: (): Card => ({ ...card, cardHtml: card.cardHtml || `<p>${card.content}</p>` }),
  };
  return builder;
}

/** Test collection builder. */
export function aCollection() {
  const at = nextTime();
  const c: Collection = { id: randomUUID(), authorId: randomUUID(), name: 'Reading list', description: 'things', isPublic: true, fileId: null, idempotencyKey: null, requestFingerprint: null, createdAt: at, updatedAt: at };
  const builder = {
    by: (authorId: string) => ((c.authorId = authorId), builder),
    private: () => ((c.isPublic = false), builder),
    forFile: (fileId: string) => ((c.fileId = fileId), builder),
    withIdempotencyKey: (key: string, requestFingerprint: string | null = null) => ((c.idempotencyKey = key), (c.requestFingerprint = requestFingerprint), builder),
    build: (): Collection => ({ ...c }),
  };
  return builder;
}
