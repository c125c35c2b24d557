import { z } from 'zod';
import { envInt } from '@cards/platform';
import { verificationConfigFields } from './verification/config';
import { searchIndexConfigFields } from './index-config';

export const searchConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  SEARCH_GRPC_HOST: z.string().default('127.0.0.1'),
  SEARCH_GRPC_PORT: envInt(50053),
  ...verificationConfigFields,
  ...searchIndexConfigFields,
  /** Prefix of the Elasticsearch indices (when ELASTICSEARCH_URL is set), so several deployments can share a cluster. */
  ELASTICSEARCH_INDEX_PREFIX: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, - and _').default('cards-search'),
});

export type SearchConfig = z.infer<typeof searchConfigSchema>;
