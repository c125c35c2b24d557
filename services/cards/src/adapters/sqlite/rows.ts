import type { Card, Collection } from '../../domain/model';

export interface CardRow {
  id: string;
  author_id: string;
  content: string;
  card_html: string;
  link: string;
  private: number;
  hidden_by_file: number;
  tags: string;
  file_id: string | null;
  file_name: string | null;
  file_private: number;
  oc_file_path: string | null;
  vector_point_id: string | null;
  verification_score: number | null;
  verified_at: string | null;
  collision_of: string | null;
  total_upvotes: number;
  total_downvotes: number;
  idempotency_key: string | null;
  request_fingerprint: string | null;
  content_hash: string;
  created_at: string;
  updated_at: string;
}

export function cardFromRow(r: CardRow): Card {
  return {
    id: r.id,
    authorId: r.author_id,
    content: r.content,
    cardHtml: r.card_html,
    link: r.link,
    private: r.private === 1,
    hiddenByFile: r.hidden_by_file === 1,
    tags: JSON.parse(r.tags) as string[],
    fileId: r.file_id,
    fileName: r.file_name,
    filePrivate: r.file_private === 1,
    ocFilePath: r.oc_file_path,
    vectorPointId: r.vector_point_id,
    verificationScore: r.verification_score,
    verifiedAt: r.verified_at ? new Date(r.verified_at) : null,
    collisionOf: r.collision_of,
    totalUpvotes: r.total_upvotes,
    totalDownvotes: r.total_downvotes,
    idempotencyKey: r.idempotency_key,
    requestFingerprint: r.request_fingerprint,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

export interface CollectionRow {
  id: string;
  author_id: string;
  name: string;
  description: string;
  is_public: number;
  file_id: string | null;
  idempotency_key: string | null;
  request_fingerprint: string | null;
  created_at: string;
  updated_at: string;
}

export function collectionFromRow(r: CollectionRow): Collection {
  return {
    id: r.id,
    authorId: r.author_id,
    name: r.name,
    description: r.description,
    isPublic: r.is_public === 1,
    fileId: r.file_id,
    idempotencyKey: r.idempotency_key,
    requestFingerprint: r.request_fingerprint,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

/** "?, ?, ?" for an IN list. */
export const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** SQLite caps bound parameters; IN lists are run in slices of this size. */
export const IN_CHUNK = 500;

export function chunks<T>(items: readonly T[], size = IN_CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
