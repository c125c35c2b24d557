import { createServer, type Server } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Status } from 'nice-grpc';
import { byteRangeOf, DomainError, ifRangeHolds, isEngineUnavailableError, isUuid, type ByteRangeAnswer, type Logger } from '@cards/platform';
import type { FilesService } from '../application/files-service';
import type { FileRecord } from '../domain/model';
import { notModified, preconditionFailed } from './conditional-get';
import { internalTokenCheck } from './internal-token-check';

export const INTERNAL_TOKEN_HEADER = 'x-files-internal-token';
export const CALLER_HEADER = 'x-caller-id';

export interface InternalDownloadServerOptions {
  host: string;
  port: number;
  /**
   * Tokens a request may carry in x-files-internal-token: the current one first, then any also accepted while a
   * rotation rolls out. Empty (FILES_INTERNAL_TOKEN unset): every request is refused, since any local process could
   * otherwise fetch any private file by naming its owner in x-caller-id; the all-in-one makes one per start.
   */
  acceptedTokens: readonly string[];
  service: FilesService;
  logger: Logger;
}

/**
 * A strong ETag of the file's bytes: they never change under a file's id (an upload makes a new file), so its size and
 * creation time name them; If-Range compares it to serve the rest of the bytes a client already holds part of.
 */
export function etagOf(record: Pick<FileRecord, 'size' | 'createdAt'>): string {
  return `"${record.size.toString(16)}-${record.createdAt.getTime().toString(16)}"`;
}

/** RFC 6266 / 5987: an ASCII fallback plus the exact UTF-8 name. */
export function contentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(fileName).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/**
 * The raw download endpoint the gateway proxies to: GET /files/<id> streams the stored bytes with
 * their MIME type and Content-Disposition. Not a public door: every request must present a shared token
 * (without one configured, none is served: loopback alone is not trusted), and it re-checks the caller's
 * visibility from the x-caller-id header the gateway sets after resolving the session.
 */
export async function startInternalDownloadServer(options: InternalDownloadServerOptions): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const { service, logger } = options;
  const tokenConfigured = options.acceptedTokens.length > 0;
  const tokenAccepted = internalTokenCheck(options.acceptedTokens);
  const server = createServer((req, res) => {
    const send = (status: number, message: string) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ message }));
    };
    if (!tokenConfigured) return send(401, 'No internal token configured (FILES_INTERNAL_TOKEN): downloads are refused');
    if (!tokenAccepted(req.headers[INTERNAL_TOKEN_HEADER])) return send(401, 'Missing or wrong internal token');
    const match = /^\/files\/([^/?]+)(?:\?.*)?$/.exec(req.url ?? '');
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'Only GET');
    if (!match || !isUuid(match[1])) return send(404, 'No such route');
    const caller = req.headers[CALLER_HEADER];
    const callerId = typeof caller === 'string' && isUuid(caller) ? caller.toLowerCase() : undefined;
    // RFC 9110 ranges on GET only (14.2: a HEAD's Range is ignored, so HEAD answers as the GET without one would).
    const rangeHeader = req.method === 'GET' ? req.headers.range : undefined;
    const ifRangeHeader = req.headers['if-range'];
    const ifRange = Array.isArray(ifRangeHeader) ? ifRangeHeader.join(', ') : ifRangeHeader;
    let answer: ByteRangeAnswer | { kind: 'not-modified' } | { kind: 'precondition-failed'; header: 'If-Match' | 'If-Unmodified-Since' } = { kind: 'whole' };
    service
      .open(match[1], callerId, 0, {
        range: (record) => {
          // The caller may read the file (open checked it first): only now may a 412 or a 304 say anything about it.
          const failed = preconditionFailed(req.method, req.headers, etagOf(record), record.createdAt);
          if (failed) {
            answer = { kind: 'precondition-failed', header: failed };
            return { start: 0, length: 0 };
          }
          if (notModified(req.method, req.headers, etagOf(record), record.createdAt)) {
            answer = { kind: 'not-modified' };
            return { start: 0, length: 0 };
          }
          answer = ifRangeHolds(ifRange, etagOf(record), record.createdAt) ? byteRangeOf(rangeHeader, record.size) : { kind: 'whole' };
          if (answer.kind === 'range') return { start: answer.start, length: answer.end - answer.start + 1 };
          // Nothing is read for an unsatisfiable range.
          return answer.kind === 'unsatisfiable' ? { start: 0, length: 0 } : null;
        },
      })
      .then(async ({ record, content }) => {
        const validators = {
          'accept-ranges': 'bytes',
          etag: etagOf(record),
          'last-modified': record.createdAt.toUTCString(),
          'x-content-type-options': 'nosniff',
          'cache-control': 'private, no-store',
        };
        const chosen = answer as ByteRangeAnswer | { kind: 'not-modified' } | { kind: 'precondition-failed'; header: 'If-Match' | 'If-Unmodified-Since' };
        if (chosen.kind === 'precondition-failed') {
          content.destroy();
          // RFC 9110 §13.2.2: If-Match or If-Unmodified-Since failed, before If-None-Match and Range are looked at.
          const why = chosen.header === 'If-Match' ? `the file is not the version named; its ETag is ${validators.etag}` : `the file was stored after that date; its Last-Modified is ${validators['last-modified']}`;
          res.writeHead(412, { ...validators, 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify({ message: `${chosen.header}: ${why}` }));
          return;
        }
        if (chosen.kind === 'not-modified') {
          // RFC 9110 §15.4.5: the 200's ETag and Cache-Control (and Last-Modified), no body and none of its metadata.
          content.destroy();
          res.writeHead(304, validators);
          res.end();
          return;
        }
        if (chosen.kind === 'unsatisfiable') {
          content.destroy();
          res.writeHead(416, { ...validators, 'content-type': 'application/json; charset=utf-8', 'content-range': `bytes */${record.size}` });
          res.end(JSON.stringify({ message: `Range: no byte of the range asked for is in the file (${record.size} bytes); ask for bytes from 0 to ${Math.max(0, record.size - 1)}` }));
          return;
        }
        res.writeHead(chosen.kind === 'range' ? 206 : 200, {
          'content-type': record.mimeType,
          'content-length': String(chosen.kind === 'range' ? chosen.end - chosen.start + 1 : record.size),
          ...(chosen.kind === 'range' ? { 'content-range': `bytes ${chosen.start}-${chosen.end}/${record.size}` } : {}),
          'content-disposition': contentDisposition(record.fileName),
          ...validators,
        });
        if (req.method === 'HEAD') {
          content.destroy();
          res.end();
          return;
        }
        await pipeline(content, res);
      })
      .catch((err: unknown) => {
        if (err instanceof DomainError) return send(err.status === Status.NOT_FOUND ? 404 : err.status === Status.UNAVAILABLE ? 503 : 400, err.message);
        if ((err as NodeJS.ErrnoException)?.code === 'ERR_STREAM_PREMATURE_CLOSE') return;
        if (isEngineUnavailableError(err)) {
          // The object store or the records' database is unreachable: a retryable 503, not a 500.
          logger.warn({ err, url: req.url }, 'download failed: an engine is unreachable');
          return send(503, 'A backing service is unavailable, try again');
        }
        logger.error({ err, url: req.url }, 'download failed');
        send(500, 'Internal error');
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  if (tokenConfigured) logger.info({ host: options.host, port, access: `internal token required (${options.acceptedTokens.length} accepted)` }, 'internal download server listening');
  else
    logger.warn(
      { host: options.host, port },
      'FILES_INTERNAL_TOKEN is not set: the internal download endpoint refuses every request, so file downloads fail; set the same FILES_INTERNAL_TOKEN (>= 16 characters) on files and gateway (the all-in-one makes one per start)',
    );
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
