import type { Request, Router } from 'express';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { ClientError, Status } from 'nice-grpc';
import { z } from 'zod';
import { AdmissionRefusedError, BoundedAdmission, ClientShares, isStatusOfService, statusReasonOf, STORAGE_FULL, toApiTimestamp, TOO_LARGE } from '@cards/platform';
import type { files } from '@cards/proto';
import type { RouteDeps } from '../app';
import { HttpError, badRequest, ownShareTaken, serverBusy } from '../http/http-error';
import { UPLOAD_RETRY_AFTER_SECONDS } from '../http/upload-admission';
import { clientAddressKey } from '../http/rate-limits';
import { digestOf, idempotencyOf } from '../http/idempotency-key';
import { pagesOf, sendJsonArrayInPages } from '../http/json-array-in-pages';
import { sendUncompressed } from '../http/api-compression';
import { sendHeadOfJsonWithBase64UrlMember, sendJsonWithBase64UrlMember } from '../http/json-with-streamed-content';
import { requireUser } from '../http/session';
import { looseBoolean, nonBlankCharacterString, parseBody, refuseUnreadableBody, tagList, uuidParam, uuidString } from '../http/validation';
import { forKnownUser } from './known-user';
import { openResumableFileRead } from './resumable-file-read';

/** Files per page of the listing: a file may carry 20 KB of tags, so 200 stay below ~4.2 MB (the service's cap). */
const FILES_PAGE_SIZE = 200;
/** Bytes per upload message on the UploadFile stream, far below gRPC's message size limit. */
const UPLOAD_CHUNK_BYTES = 256 * 1024;
/** Header the files service's internal download endpoint expects when it is configured with a token. */
const INTERNAL_TOKEN_HEADER = 'x-files-internal-token';
const CALLER_HEADER = 'x-caller-id';
/** Seconds a reader refused for too many reads under way is asked to wait (Retry-After). */
export const FILE_READ_RETRY_AFTER_SECONDS = 5;
export const FILE_READS_BUSY_MESSAGE = 'Too many file reads are under way; read the file again in a few seconds';
export const OWN_FILE_READS_BUSY_MESSAGE = 'You have too many file reads under way; read the file again when one has finished';

/** Reads with content (GET /api/file/:id) under way at once, and how long each ReadFile call behind one may take. */
export interface FileReadLimits {
  /** Reads under way at most (FILE_READS_AT_ONCE); one more is answered 503 with Retry-After before any byte. */
  atOnce: number;
  /**
   * Reads one client has under way at most (FILE_READS_PER_CLIENT; the user when signed in, else the client address as
   * for rate limits); one more is answered 429 with Retry-After, so one client cannot take every read from the others.
   */
  perClient: number;
  /**
   * One ReadFile call's deadline (FILE_READ_CALL_MS): a read lasting longer goes on in a new call from the byte it
   * reached. Below the services' GRPC_MAX_CONNECTION_AGE_GRACE_MS, so a call is seldom cut at a connection's age.
   */
  callMs: number;
  /** How long a client may take none of the answer (FILE_READ_IDLE_MS) before its connection is cut, freeing its read. */
  idleMs: number;
}

export const DEFAULT_FILE_READS: FileReadLimits = { atOnce: 16, perClient: 4, callMs: 50_000, idleMs: 60_000 };
/**
 * Bytes per write of the answer (16 KiB of base64, whole 3-byte groups): the connection's idle timer restarts when a
 * write completes, so small writes let a slow client that still takes bytes count as taking them.
 */
const WRITE_PIECE_BYTES = 12 * 1024;

async function* inPieces(chunks: AsyncIterable<Uint8Array>, pieceBytes: number): AsyncGenerator<Uint8Array> {
  for await (const chunk of chunks) {
    for (let at = 0; at < chunk.byteLength; at += pieceBytes) yield chunk.subarray(at, at + pieceBytes);
  }
}

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
export function registerFileRoutes(router: Router, { clients, filesHttpAddress, filesInternalToken, maxFileBytes, logger, fileReads = DEFAULT_FILE_READS }: RouteDeps & { fileReads?: FileReadLimits }): void {
  // A reader that stopped reading holds ~4 MB (socket and HTTP/2 buffers, measured); no waiting line: reads may last
  // minutes, so a refused reader is told to ask again.
  const reads = new BoundedAdmission({ capacity: fileReads.atOnce, maxWaiting: 0, maxWaitMs: 0 });
  const readsPerClient = new ClientShares();

  router.post('/file', async (req, res) => {
    const user = requireUser(req);
    const body = parseBody(createFileBody, req);
    const bytes = decodeBase64Url(body.base64_docx_file);
    if (bytes.length > maxFileBytes) throw new HttpError(413, `base64_docx_file: the file is ${bytes.length} bytes, above the limit of ${maxFileBytes}`);
    if (bytes.length === 0) throw badRequest('base64_docx_file: the file is empty');
    const request = { fileName: body.file_name, mimeType: body.file_mime_type, private: body.private, tags: body.tag_set ?? [], size: bytes.length };
    const header: files.UploadFileHeader = { callerId: user.id, ...request, ...idempotencyOf(req, () => ({ ...request, fileName: request.fileName.trim(), bytes: digestOf(bytes) })) };
    const file = await clients.files.uploadFile(uploadMessages(header, bytes)).catch((err: unknown) => {
      if (!(err instanceof ClientError && isStatusOfService(err))) throw err;
      // The files service's own overload answer (its parser workers busy) says what to do; the generic 503 would not.
      // Its storage full is no overload: the error handler's 503 "Storage is full" with its longer Retry-After.
      if (err.code === Status.UNAVAILABLE && statusReasonOf(err) !== STORAGE_FULL) throw serverBusy(err.details, UPLOAD_RETRY_AFTER_SECONDS);
      // The user's share of its upload checks (PARSER_CHECKS_PER_USER) taken: 429, with Retry-After like every 429.
      if (err.code === Status.RESOURCE_EXHAUSTED && statusReasonOf(err) !== TOO_LARGE) throw ownShareTaken(err.details, UPLOAD_RETRY_AFTER_SECONDS);
      throw err;
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
        if (filesInternalToken) proxyReq.setHeader(INTERNAL_TOKEN_HEADER, filesInternalToken);
        if (req.user) proxyReq.setHeader(CALLER_HEADER, req.user.id);
      },
      proxyRes(proxyRes, _req, res) {
        // Hop-by-hop: the proxy's request to files asks `Connection: close` (it has no agent of its own), and passed
        // on, files' echo closed the client's connection after each download. Without it the client's own wish holds.
        delete proxyRes.headers.connection;
        delete proxyRes.headers['keep-alive'];
        // The caller's access was checked above, so a 401 from files means it refused the gateway's own token (a
        // misconfiguration or a rotation gone wrong): passed through, it would tell a signed-in user to sign in again.
        if (proxyRes.statusCode !== 401) return;
        proxyRes.resume();
        logger.error({ filesHttpAddress }, 'the files service refused the gateway\'s FILES_INTERNAL_TOKEN; downloads fail until both hold the same token (docs/deploy.md, rotation)');
        res.writeHead(502, { 'content-type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify({ message: 'The file service refused the gateway; the download is unavailable, try again later' }));
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

  /**
   * http-proxy sets the answer's Connection to the client's own (setConnection, after the proxyRes hook: `Connection:
   * Upgrade` on a 200). Left unset, Node names its own keep-alive or close (a removed header would make it name none).
   */
  const keepOwnConnectionHeader = (res: ServerResponse) => {
    const setHeader = res.setHeader;
    res.setHeader = function (this: ServerResponse, name: string, value: number | string | readonly string[]) {
      if (name.toLowerCase() === 'connection') return this;
      return setHeader.call(this, name, value);
    } as ServerResponse['setHeader'];
  };

  router.get(
    '/file/:file_id/download',
    async (req, res, next) => {
      sendUncompressed(res);
      const fileId = uuidParam(req, 'file_id');
      // Visibility first (404 for missing or someone else's private file), then the bytes pass through.
      await clients.files.getFile({ fileId, callerId: req.user?.id });
      // Node has answered the client's `Expect: 100-continue` already. Passed on, http-proxy sends the head to files at
      // once and skips `proxyReq`, so neither the token nor the caller would be set, nor the client's own removed.
      delete req.headers.expect;
      keepOwnConnectionHeader(res);
      next();
    },
    proxy,
  );

  router.get('/file/:file_id', async (req, res) => {
    sendUncompressed(res);
    const fileId = uuidParam(req, 'file_id');
    if (req.method === 'HEAD') {
      // The GET's head from the file's record (GetFile: the same visibility check, 404 alike, and with checkContent
      // 404 too when the stored bytes are missing, as ReadFile answers), with no ReadFile call: the content is not
      // asked for, no byte leaves the files service, and nothing is held while the client takes the answer, so no read
      // slot (nor the client's share of them) is taken (docs/decisions.md, "HEAD").
      const file = await clients.files.getFile({ fileId, callerId: req.user?.id, checkContent: true }, { idempotent: true });
      sendHeadOfJsonWithBase64UrlMember(res, presentFile(file), 'base64url_content', Number(file.size));
      return;
    }
    const releaseShare = readsPerClient.take(req.user ? `user:${req.user.id}` : `address:${clientAddressKey(req.ip)}`, 1, fileReads.perClient);
    if (!releaseShare) throw ownShareTaken(OWN_FILE_READS_BUSY_MESSAGE, FILE_READ_RETRY_AFTER_SECONDS);
    const release = await reads.acquire().catch((err: unknown) => {
      releaseShare();
      if (!(err instanceof AdmissionRefusedError)) throw err;
      throw serverBusy(FILE_READS_BUSY_MESSAGE, FILE_READ_RETRY_AFTER_SECONDS);
    });
    try {
      // The header comes first, after the visibility check: a missing or someone else's private file is an error
      // answer before anything is sent. The bytes follow and are encoded into the answer as they arrive, over as
      // many calls of bounded duration as the client's pace needs.
      const read = await openResumableFileRead(clients.files, { fileId, callerId: req.user?.id }, fileReads.callMs);
      if (!read) throw new HttpError(502, 'The file service sent no file header');
      try {
        // A client that takes nothing for this long would otherwise hold its read (a slot, a file handle) for good.
        res.setTimeout(fileReads.idleMs, () => res.destroy());
        await sendJsonWithBase64UrlMember(res, presentFile(read.file), 'base64url_content', Number(read.file.size), inPieces(read.content, WRITE_PIECE_BYTES));
      } finally {
        await read.close();
      }
    } finally {
      release();
      releaseShare();
    }
  });

  router.delete('/file/:file_id', async (req, res) => {
    const user = requireUser(req);
    const fileId = uuidParam(req, 'file_id');
    refuseUnreadableBody(req);
    await clients.files.deleteFile({ callerId: user.id, fileId });
    res.status(204).end();
  });
}
