import { ClientError, Status } from 'nice-grpc';
import { UnavailableError, type GrpcClient, type Logger } from '@cards/platform';
import type { search } from '@cards/proto';
import type { SearchIndexStats } from '../../domain/ports';

/** Search cannot answer now (down, restarting, loading its index, too slow): asked again later. */
const NOT_NOW = new Set([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED]);

/** The search service's IndexStats; a search without it (UNIMPLEMENTED: an older version) cannot tell (null). */
export class GrpcSearchIndexStats implements SearchIndexStats {
  constructor(
    private readonly client: GrpcClient<typeof search.SearchServiceDefinition>,
    private readonly logger: Logger,
  ) {}

  async cardCount(): Promise<number | null> {
    try {
      return (await this.client.indexStats({})).cards;
    } catch (err) {
      if (err instanceof ClientError && err.code === Status.UNIMPLEMENTED) {
        this.logger.debug({ code: Status[err.code] }, 'search service has no IndexStats (an older version): not checking whether its index is empty');
        return null;
      }
      if (err instanceof ClientError && NOT_NOW.has(err.code)) throw new UnavailableError(`the search service cannot tell how many cards it holds now (${Status[err.code]})`);
      throw err;
    }
  }
}
