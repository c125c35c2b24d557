import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * Returns how to stop `server` for a rolling update: no new connections; requests under way are answered and
 * their connection then closed (an answer not yet started says `Connection: close`), so keep-alive clients such
 * as an ingress move on to another pod; idle connections are closed at once; whatever is still open after
 * `drainMs` is cut. Call before the first connection.
 */
export function gracefulCloser(server: Server): (drainMs: number) => Promise<void> {
  const answering = new Set<ServerResponse>();
  let closing = false;
  server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
    answering.add(res);
    if (closing && !res.headersSent) res.shouldKeepAlive = false;
    res.on('close', () => {
      answering.delete(res);
      // A keep-alive connection whose answer had already started stays open after it: close it now that it is idle.
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  return (drainMs) =>
    new Promise<void>((resolve) => {
      closing = true;
      for (const res of answering) if (!res.headersSent) res.shouldKeepAlive = false;
      const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
      server.close(() => {
        clearTimeout(deadline);
        resolve();
      });
      server.closeIdleConnections();
    });
}
