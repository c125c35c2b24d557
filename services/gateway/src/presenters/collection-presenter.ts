import { toApiTimestamp } from '@cards/platform';
import type { cards } from '@cards/proto';

/** A Collection as the interface shows it; file_id only in per-user listings. */
export function presentCollection(c: cards.Collection, { withFileId = false }: { withFileId?: boolean } = {}) {
  return {
    id: c.id,
    author_id: c.authorId,
    name: c.name,
    description: c.description,
    is_public: c.isPublic,
    created_at: toApiTimestamp(c.createdAt),
    updated_at: toApiTimestamp(c.updatedAt),
    ...(withFileId ? { file_id: c.fileId ?? null } : {}),
  };
}
