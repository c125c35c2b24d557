import { createServer, type Server } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { Status } from 'nice-grpc';
import { DomainError, isEngineUnavailableError, isUuid, type Logger } from '@cards/platform';
import type { FilesService } from '../application/files-service';
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
    service
      .open(match[1], callerId)
      .then(async ({ record, content }) => {
        res.writeHead(200, {
          'content-type': record.mimeType,
          'content-length': String(record.size),
          'content-disposition': contentDisposition(record.fileName),
          'x-content-type-options': 'nosniff',
          'cache-control': 'private, no-store',
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
