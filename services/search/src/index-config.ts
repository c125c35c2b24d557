import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { envInt, envUrl } from '@cards/platform';

const envNumberInRange = (defaultValue: number, min: number, max: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      // Only spaces is the default too: Number(' ') is 0, a duplicate threshold that made nearly every card a duplicate.
      if (v === undefined || v.trim() === '') return defaultValue;
      const n = Number(v);
      if (!Number.isFinite(n) || n < min || n > max) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected a number between ${min} and ${max}, got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

/** Configuration of the search index and the embedder (spread into the service's schema). */
export const searchIndexConfigFields = {
  /** OpenAI-compatible embeddings endpoint; absent = the bundled word-vector model. */
  EMBEDDINGS_URL: envUrl(),
  EMBEDDINGS_MODEL: z.string().default('text-embedding-3-small'),
  EMBEDDINGS_API_KEY: z.string().optional(),
  /** At least 1: 0 was taken, and every vector the endpoint answered was then refused as the wrong length (no card indexed). */
  EMBEDDINGS_DIMENSIONS: envInt(1536).pipe(z.number().min(1, 'must be at least 1 (the length of the vectors the endpoint answers)')),
  /** Near-duplicate cosine of the endpoint's model (DESIGN.md: 0.95, 0.92 under 200 characters, for OpenAI-class models). */
  EMBEDDINGS_DUPLICATE_THRESHOLD: envNumberInRange(0.95, -1, 1),
  EMBEDDINGS_SHORT_DUPLICATE_THRESHOLD: envNumberInRange(0.92, -1, 1),
  EMBEDDINGS_SHORT_TEXT_LENGTH: envInt(200),
  /** Where the bundled model's compact binary cache is built on first use; shared by every data directory. */
  WORD_VECTORS_CACHE_DIR: z.string().default(join(tmpdir(), 'card-library-word-vectors')),
  /** Scopes up to this many cards are ranked by exact cosine; larger ones by sign codes then exact re-ranking. */
  SEARCH_EXACT_SCAN_LIMIT: envInt(20_000),
  /**
   * Hours after which the index forgets its order markers (removed cards' tombstones, removed bookmarks); 0 keeps them.
   * At least the event retention (EVENT_LOG_UNCONSUMED_RETENTION_HOURS, 720; Kafka: the card and bookmark topics' retention.ms).
   */
  SEARCH_MARKER_RETENTION_HOURS: envInt(720),
  ELASTICSEARCH_URL: envUrl(),
  KAFKA_BROKERS: z.string().optional(),
};
