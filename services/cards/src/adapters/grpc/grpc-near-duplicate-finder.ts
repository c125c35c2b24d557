import { ClientError, Status } from 'nice-grpc';
import type { GrpcClient, Logger } from '@cards/platform';
import type { search } from '@cards/proto';
import type { NearDuplicateCandidate, NearDuplicateFinder, UnindexedRoot } from '../../domain/ports';

const ABSENT = new Set([Status.UNIMPLEMENTED, Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED]);

/** The search service's embedding-based duplicate lookup; its absence means "no candidates". */
export class GrpcNearDuplicateFinder implements NearDuplicateFinder {
  private warned = false;

  constructor(
    private readonly client: GrpcClient<typeof search.SearchServiceDefinition>,
    private readonly logger: Logger,
    private readonly deadlineMs = 3000,
  ) {}

  async find(content: string, callerId: string, limit: number, unindexed: readonly UnindexedRoot[] = []): Promise<NearDuplicateCandidate[]> {
    try {
      const { candidates } = await this.client.findNearDuplicates({ content, callerId, limit, unindexed: [...unindexed] }, { deadline: this.deadlineMs });
      return candidates.map((c) => ({ cardId: c.cardId, duplicate: c.duplicate, cosine: c.cosine }));
    } catch (err) {
      if (err instanceof ClientError && ABSENT.has(err.code)) {
        if (!this.warned) this.logger.warn({ code: Status[err.code] }, 'search service gave no near-duplicate candidates; only exact and shingle rules apply');
        this.warned = true;
        return [];
      }
      this.logger.warn({ err }, 'near-duplicate lookup failed; only exact and shingle rules apply');
      return [];
    }
  }
}
