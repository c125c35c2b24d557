import { InvalidArgumentError, TooLargeError } from '@cards/platform';
import type { files } from '@cards/proto';
import type { FilesService } from '../application/files-service';
import type { FileRecord } from '../domain/model';

/** Bytes per streamed message: far below gRPC's message limit. */
export const CHUNK_BYTES = 256 * 1024;

export function toProto(r: FileRecord): files.File {
  return {
    id: r.id,
    userId: r.userId,
    fileName: r.fileName,
    mimeType: r.mimeType,
    private: r.private,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    size: r.size,
    ocFilePath: r.ocFilePath ?? undefined,
    tags: r.tags,
    ingestionStatus: r.ingestionStatus,
    ingestionError: r.ingestionError ?? undefined,
  };
}

/** gRPC face of the files use cases; no rules here beyond reassembling the upload stream. */
export function fileHandlers(service: FilesService): files.FileServiceImplementation {
  return {
    async uploadFile(requests) {
      let header: files.UploadFileHeader | undefined;
      const chunks: Buffer[] = [];
      let received = 0;
      for await (const request of requests) {
        const part = request.part;
        if (!part) continue;
        if (part.$case === 'header') {
          if (header) throw new InvalidArgumentError('upload: the header must be sent once, first');
          header = part.value;
          if (header.size > service.maxFileBytes) throw new TooLargeError(`base64_docx_file: the file is ${header.size} bytes, above the limit of ${service.maxFileBytes}`);
          continue;
        }
        if (!header) throw new InvalidArgumentError('upload: the header must come before the bytes');
        received += part.value.length;
        if (received > service.maxFileBytes) throw new TooLargeError(`base64_docx_file: the file is above the limit of ${service.maxFileBytes} bytes`);
        chunks.push(part.value);
      }
      if (!header) throw new InvalidArgumentError('upload: no header was sent');
      if (header.size > 0 && header.size !== received) throw new InvalidArgumentError(`upload: expected ${header.size} bytes, received ${received}`);
      const record = await service.upload({
        callerId: header.callerId,
        fileName: header.fileName,
        mimeType: header.mimeType,
        private: header.private,
        tags: header.tags,
        bytes: Buffer.concat(chunks, received),
        idempotencyKey: header.idempotencyKey,
        requestFingerprint: header.requestFingerprint,
      });
      return toProto(record);
    },
    async getFile(req) {
      return toProto(await service.get(req.fileId, req.callerId, { checkContent: req.checkContent }));
    },
    async *readFile(req) {
      const { record, content } = await service.open(req.fileId, req.callerId, Number(req.offset), { resume: req.resume });
      try {
        yield { part: { $case: 'file', value: toProto(record) } };
        for await (const data of content) {
          const buffer = data as Buffer;
          for (let offset = 0; offset < buffer.length; offset += CHUNK_BYTES) {
            yield { part: { $case: 'chunk', value: buffer.subarray(offset, offset + CHUNK_BYTES) } };
          }
        }
      } finally {
        content.destroy();
      }
    },
    async deleteFile(req) {
      await service.delete(req.callerId, req.fileId);
      return {};
    },
    async setFilePrivacy(req) {
      await service.setPrivacy(req.callerId, req.fileId, req.private);
      return {};
    },
    async listUserFiles(req) {
      const page = await service.listUserFiles(req.userId, req.callerId, req.pageSize, req.pageToken);
      return { files: page.items.map(toProto), nextPageToken: page.next ?? '' };
    },
  };
}
