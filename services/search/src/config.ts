import { z } from 'zod';
import { envBoolean, envInt, envPort } from '@cards/platform';
import { verificationConfigFields } from './verification/config';
import { searchIndexConfigFields } from './index-config';

const REFRESH_INTERVAL_UNIT_MS = { ms: 1, s: 1_000, m: 60_000 };

/**
 * The longest ELASTICSEARCH_REFRESH_INTERVAL. Indexing waits for the periodic refresh, so an interval of an hour (or of
 * 99999999999s, also taken) left every new or changed card out of search for over an hour while the indexing consumer
 * sat waiting, past the chart's CardLibraryConsumerStuck threshold (300 s). A minute keeps 1.5 intervals well below it.
 */
export const MAX_REFRESH_INTERVAL_MS = 60_000;

export const searchConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  SEARCH_GRPC_HOST: z.string().default('127.0.0.1'),
  SEARCH_GRPC_PORT: envPort(50053),
  ...verificationConfigFields,
  ...searchIndexConfigFields,
  /** Prefix of the Elasticsearch indices (when ELASTICSEARCH_URL is set), so several deployments can share a cluster. */
  ELASTICSEARCH_INDEX_PREFIX: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, - and _').default('cards-search'),
  /**
   * At start, ask the cards service to tell every card again when the index was lost: created at this start while the
   * indexing consumer group had handled events before (docs/deploy.md, rebuilding the search index).
   */
  SEARCH_INDEX_REBUILD_WHEN_LOST: envBoolean(true),
  /**
   * Refresh interval of those indices, 1ms to MAX_REFRESH_INTERVAL_MS in ms, s or m (as the index adapter reads it); empty:
   * 1s. Each indexed card waits for the next refresh, so it bounds indexing throughput and how soon a card is found.
   */
  ELASTICSEARCH_REFRESH_INTERVAL: z
    .string()
    .optional()
    .transform((raw, ctx) => {
      const value = (raw ?? '').trim();
      if (value === '') return '1s';
      const parts = /^(\d+)(ms|s|m)$/.exec(value);
      const ms = parts ? Number(parts[1]) * REFRESH_INTERVAL_UNIT_MS[parts[2] as keyof typeof REFRESH_INTERVAL_UNIT_MS] : Number.NaN;
      if (ms >= 1 && ms <= MAX_REFRESH_INTERVAL_MS) return value;
      ctx.addIssue({
        code: z.ZodIssueCode.custom,
        message: `must be a whole number of ms, s or m from 1ms to 60s, such as 200ms or 1s (indexing waits for each refresh: a card is searchable about 1.5 intervals after its event), got "${raw}"`,
      });
      return z.NEVER;
    }),
});

export type SearchConfig = z.infer<typeof searchConfigSchema>;
