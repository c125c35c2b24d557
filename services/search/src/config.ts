import { z } from 'zod';
import { envBoolean, envInt, envPort } from '@cards/platform';
import { verificationConfigFields } from './verification/config';
import { searchIndexConfigFields } from './index-config';

export const searchConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  SEARCH_GRPC_HOST: z.string().default('127.0.0.1'),
  SEARCH_GRPC_PORT: envPort(50053),
  ...verificationConfigFields,
  ...searchIndexConfigFields,
  /** Prefix of the Elasticsearch indices (when ELASTICSEARCH_URL is set), so several deployments can share a cluster. */
  ELASTICSEARCH_INDEX_PREFIX: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, - and _').default('cards-search'),
  /** Refresh interval of those indices: each indexed card waits for the next refresh, so it bounds indexing throughput. */
  /**
   * At start, ask the cards service to tell every card again when the index was lost: created at this start while the
   * indexing consumer group had handled events before (docs/deploy.md, rebuilding the search index).
   */
  SEARCH_INDEX_REBUILD_WHEN_LOST: envBoolean(true),
  ELASTICSEARCH_REFRESH_INTERVAL: z.string().regex(/^0*[1-9]\d*(ms|s)$/, 'a positive duration such as 200ms or 1s (writes wait for this periodic refresh)').default('1s'),
});

export type SearchConfig = z.infer<typeof searchConfigSchema>;
