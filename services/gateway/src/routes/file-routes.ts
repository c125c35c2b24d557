import type { Request, Router } from 'express';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { ClientError, Status } from 'nice-grpc';
import { z } from 'zod';
import { isStatusOfService, toApiTimestamp } from '@cards/platform';
import type { files } from '@cards/proto';
import type { RouteDeps } from '../app';
import { HttpError, badRequest } from '../http/http-error';
import { UPLOAD_RETRY_AFTER_SECONDS } from '../http/upload-admission';
import { pagesOf, sendJsonArrayInPages } from '../http/json-array-in-pages';
import { sendJsonWithBase64UrlMember } from '../http/json-with-streamed-content';
import { requireUser } from '../http/session';
import { looseBoolean, nonBlankCharacterString, parseBody, tagList, uuidParam, uuidString } from '../http/validation';
import { forKnownUser } from './known-user';

/** Files per page of the listing: a file may carry 20 KB of tags, so 200 stay below ~4.2 MB (the service's cap). */
const FILES_PAGE_SIZE = 200;
/** Bytes per upload message on the UploadFile stream, far below gRPC's message size limit. */
const UPLOAD_CHUNK_BYTES = 256 * 1024;
/** Header the files service's internal download endpoint expects when it is configured with a token. */
const INTERNAL_TOKEN_HEADER = 'x-files-internal-token';
const CALLER_HEADER = 'x-caller-id';
/**
 * How long a file read with its content may take: the bytes are read no faster than the client takes the answer (a
 * MAX_FILE_BYTES file is ~27 MB of JSON: ~550 KB/s at least). Below the services' GRPC_MAX_CONNECTION_AGE_GRACE_MS
 * (60 s), so a read that crosses a connection's age is never cut; slower clients have the raw download route.
 */
const FILE_READ_DEADLINE_MS = 50_000;

const requiredString = (max: number) =>
  z.string({ required_error: 'is required', invalid_type_error: 'must be a string' }).min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const createFileBody = z.object({
  base64_docx_file: z.string({ required_error: 'is required', invalid_type_error: 'must be a string' }),
  // Counted as the files service counts it: code points, after trimming.
  file_name: nonBlankCharacterString(255, { trim: true }).openapi({ minLength: 1, maxLength: 255 }),
  file_mime_type: requiredString(255),
  private: looseBoolean,
  tag_set: tagList.nullish(),
});

export const setPrivacyBody = z.object({ file_id: uuidString, private: looseBoolean });

/** base64url (padding optional); the standard alphabet is tolerated too. 400 for anything else. */
export function decodeBase64Url(value: string): Buffer {
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9_\-+/]*={0,2}$/.test(compact)) throw badRequest('base64_docx_file: is not valid base64url (unexpected characters)');
  const unpadded = compact.replace(/=+$/, '');
  if (unpadded.length % 4 === 1) throw badRequest('base64_docx_file: is not valid base64url (impossible length)');
  if (compact.includes('=') && compact.length % 4 !== 0) throw badRequest('base64_docx_file: is not valid base64url (bad padding)');
  return Buffer.from(unpadded.replace(/\+/g, '-').replace(/\//g, '_'), 'base64url');
}

/**
 * The File object of the interface, plus ingestion_status/ingestion_error so the uploader can follow ingestion;
 * base64url_content, when there, comes last (the read route streams it after the other members).
 */
function presentFile(file: files.File, content?: Buffer): Record<string, unknown> {
  return {
    id: file.id,
    user_id: file.userId,
    file_name: file.fileName,
    mime_type: file.mimeType,
    private: file.private,
    created_at: toApiTimestamp(file.createdAt),
    updated_at: toApiTimestamp(file.updatedAt),
    size: Number(file.size),
    tag_set: file.tags.length > 0 ? file.tags.join(',') : null,
    // The interface types it as a string in file objects; uploads set no path.
    oc_file_path: file.ocFilePath ?? '',
    ingestion_status: file.ingestionStatus,
    ingestion_error: file.ingestionError ?? null,
    ...(content ? { base64url_content: content.toString('base64url') } : {}),
  };
}

async function* chunksOf(messages: AsyncIterator<files.ReadFileResponse>): AsyncGenerator<Uint8Array> {
  for (let message = await messages.next(); !message.done; message = await messages.next()) {
    if (message.value.part?.$case === 'chunk') yield message.value.part.value;
  }
}

async function* uploadMessages(header: files.UploadFileHeader, bytes: Buffer): AsyncIterable<files.UploadFileRequest> {
  yield { part: { $case: 'header', value: header } };
  for (let offset = 0; offset < bytes.length; offset += UPLOAD_CHUNK_BYTES) {
    yield { part: { $case: 'chunk', value: bytes.subarray(offset, offset + UPLOAD_CHUNK_BYTES) } };
  }
}

/**
 * Files: upload (bytes streamed to the files service in chunks), read with content, raw download
 * (passed through to the files service's internal HTTP endpoint, never buffered here), privacy,
 * delete, and the per-user listing.
 */
export function registerFileRoutes(router: Router, { clients, filesHttpAddress, maxFileBytes, logger }: RouteDeps): void {
  const internalToken = process.env.FILES_INTERNAL_TOKEN || undefined;

  router.post('/file', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(createFileBody, req);
    const bytes = decodeBase64Url(body.base64_docx_file);
    if (bytes.length > maxFileBytes) throw new HttpError(413, `base64_docx_file: the file is ${bytes.length} bytes, above the limit of ${maxFileBytes}`);
    if (bytes.length === 0) throw badRequest('base64_docx_file: the file is empty');
    const header: files.UploadFileHeader = {
      callerId: user.id,
      fileName: body.file_name,
      mimeType: body.file_mime_type,
      private: body.private,
      tags: body.tag_set ?? [],
      size: bytes.length,
    };
    const file = await clients.files.uploadFile(uploadMessages(header, bytes)).catch((err: unknown) => {
      // The files service's own overload answer (its parser workers busy) says what to do; the generic 503 would not.
      if (!(err instanceof ClientError && err.code === Status.UNAVAILABLE && isStatusOfService(err))) throw err;
      res.setHeader('retry-after', String(UPLOAD_RETRY_AFTER_SECONDS));
      throw new HttpError(503, err.details);
    });
    res.json(presentFile(file, bytes));
  });

  router.put('/file', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(setPrivacyBody, req);
    await clients.files.setFilePrivacy({ callerId: user.id, fileId: body.file_id, private: body.private });
    res.status(204).end();
  });

  router.get('/user/files/:user_id', async (req, res) => {
    const userId = uuidParam(req, 'user_id');
    const readPage = async (pageToken: string) => {
      const page = await clients.files.listUserFiles({ userId, callerId: req.user?.id, pageSize: FILES_PAGE_SIZE, pageToken }, { idempotent: true });
      return { items: page.files.map((f) => presentFile(f)), nextPageToken: page.nextPageToken };
    };
    const first = readPage('');
    await forKnownUser(clients, userId, first);
    await sendJsonArrayInPages(res, pagesOf(readPage, first));
  });

  const proxy = createProxyMiddleware<Request, ServerResponse>({
    target: `http://${filesHttpAddress}`,
    changeOrigin: true,
    proxyTimeout: 60_000,
    pathRewrite: (_path, req) => `/files/${encodeURIComponent(String(req.params.file_id).toLowerCase())}`,
    on: {
      proxyReq(proxyReq, req) {
        proxyReq.removeHeader('cookie');
        proxyReq.removeHeader('authorization');
        proxyReq.removeHeader(INTERNAL_TOKEN_HEADER);
        proxyReq.removeHeader(CALLER_HEADER);
        if (internalToken) proxyReq.setHeader(INTERNAL_TOKEN_HEADER, internalToken);
        if (req.user) proxyReq.setHeader(CALLER_HEADER, req.user.id);
      },
      error(err, _req, res) {
        logger.warn({ err }, 'file download proxy failed');
        const out = res as ServerResponse | Socket;
        if (!('writeHead' in out)) {
          out.destroy();
          return;
        }
        if (out.headersSent) {
          out.destroy();
          return;
        }
        out.writeHead(503, { 'content-type': 'application/json; charset=utf-8' });
        out.end(JSON.stringify({ message: 'The file service is unavailable, try again' }));
      },
    },
  });

  router.get(
    '/file/:file_id/download',
    async (req, _res, next) => {
      const fileId = uuidParam(req, 'file_id');
      // Visibility first (404 for missing or someone else's private file), then the bytes pass through.
      await clients.files.getFile({ fileId, callerId: req.user?.id });
      next();
    },
    proxy,
  );

  router.get('/file/:file_id', async (req, res) => {
    const fileId = uuidParam(req, 'file_id');
    const messages = clients.files.readFile({ fileId, callerId: req.user?.id }, { deadline: FILE_READ_DEADLINE_MS })[Symbol.asyncIterator]();
    try {
      // The header comes first, after the visibility check: a missing or someone else's private file is an error
      // answer before anything is sent. The bytes follow and are encoded into the answer as they arrive.
      const first = await messages.next();
      const file = !first.done && first.value.part?.$case === 'file' ? first.value.part.value : undefined;
      if (!file) throw new HttpError(502, 'The file service sent no file header');
      await sendJsonWithBase64UrlMember(res, presentFile(file), 'base64url_content', Number(file.size), chunksOf(messages));
    } finally {
      await messages.return?.();
    }
  });

  router.delete('/file/:file_id', async (req, res) => {
    const user = requireUser(req);
    const fileId = uuidParam(req, 'file_id');
    await clients.files.deleteFile({ callerId: user.id, fileId });
    res.status(204).end();
  });
}
