import { ClientError, Status } from 'nice-grpc';
import type { GrpcClient, Logger } from '@cards/platform';
import type { search } from '@cards/proto';
import type { NearDuplicateCandidate, NearDuplicateFinder, UnindexedRoot } from '../../domain/ports';

/** Search cannot answer now (down, restarting, loading its index or model, too slow): the lookup is owed, not skipped. */
const NOT_NOW = new Set([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED]);

/**
 * The search service's embedding-based duplicate lookup. A search without the lookup (UNIMPLEMENTED) or failing it
 * otherwise means "no candidates"; one that cannot answer now means null (the card owes its lookup, CardService).
 */
export class GrpcNearDuplicateFinder implements NearDuplicateFinder {
  /** Warned of search not answering, until it answers again (once per outage, not once per card). */
  private warned = false;
  private warnedUnimplemented = false;

  constructor(
    private readonly client: GrpcClient<typeof search.SearchServiceDefinition>,
    private readonly logger: Logger,
    private readonly deadlineMs = 3000,
  ) {}

  async find(content: string, callerId: string, limit: number, unindexed: readonly UnindexedRoot[] = []): Promise<NearDuplicateCandidate[] | null> {
    try {
      const { candidates } = await this.client.findNearDuplicates({ content, callerId, limit, unindexed: [...unindexed] }, { deadline: this.deadlineMs });
      if (this.warned) this.logger.info('search answers near-duplicate lookups again');
      this.warned = false;
      return candidates.map((c) => ({ cardId: c.cardId, duplicate: c.duplicate, cosine: c.cosine }));
    } catch (err) {
      if (err instanceof ClientError && NOT_NOW.has(err.code)) {
        if (!this.warned) this.logger.warn({ code: Status[err.code] }, 'search does not answer near-duplicate lookups now: new cards are stored as roots by the exact and shingle rules and owe the lookup, run once search indexes them');
        this.warned = true;
        return null;
      }
      if (err instanceof ClientError && err.code === Status.UNIMPLEMENTED) {
        if (!this.warnedUnimplemented) this.logger.warn({ code: Status[err.code] }, 'search service has no near-duplicate lookup; only exact and shingle rules apply');
        this.warnedUnimplemented = true;
        return [];
      }
      this.logger.warn({ err }, 'near-duplicate lookup failed; only exact and shingle rules apply');
      return [];
    }
  }
}
