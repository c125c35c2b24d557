import { ClientError, Status } from 'nice-grpc';
import { UnavailableError, type GrpcClient } from '@cards/platform';
import type { files } from '@cards/proto';
import type { FileDirectory, VisibleFile } from '../../domain/ports';

const HIDDEN = new Set([Status.NOT_FOUND, Status.PERMISSION_DENIED, Status.INVALID_ARGUMENT]);

/** The files service's GetFile: a file that is missing or private to someone else has no name for us. */
export class GrpcFileDirectory implements FileDirectory {
  constructor(private readonly client: GrpcClient<typeof files.FileServiceDefinition>) {}

  async visibleFile(fileId: string, callerId: string): Promise<VisibleFile | null> {
    try {
      const file = await this.client.getFile({ fileId, callerId }, { idempotent: true });
      if (file.private && file.userId !== callerId) return null;
      return { name: file.fileName, private: file.private, ownerId: file.userId };
    } catch (err) {
      if (err instanceof ClientError && HIDDEN.has(err.code)) return null;
      throw new UnavailableError('The files service cannot check file_uuid right now, try again');
    }
  }
}
