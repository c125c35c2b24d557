import type { GrpcClient, Logger } from '@cards/platform';
import type { identity } from '@cards/proto';
import type { UserDirectory } from '../../domain/ports';

/** Join dates from the identity service; an unreachable identity leaves the tie-break for later. */
export class GrpcUserDirectory implements UserDirectory {
  constructor(
    private readonly client: GrpcClient<typeof identity.IdentityServiceDefinition>,
    private readonly logger: Logger,
  ) {}

  async joinDates(userIds: readonly string[]): Promise<Map<string, Date>> {
    if (userIds.length === 0) return new Map();
    try {
      const { users } = await this.client.getUsers({ ids: [...userIds] }, { idempotent: true });
      return new Map(users.filter((u) => u.createdAt).map((u) => [u.id, u.createdAt!]));
    } catch (err) {
      this.logger.warn({ err }, 'identity did not answer join dates; top users tie-break falls back to user id');
      return new Map();
    }
  }
}
