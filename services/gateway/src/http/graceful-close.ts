import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The answer node:http is writing on a connection (it keeps it on the socket); none while the connection is idle. */
function answerUnderWay(socket: Socket): ServerResponse | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage ?? undefined;
}

/**
 * Returns how to stop `server` for a rolling update: no new connections; requests under way are answered and
 * their connection then closed (an answer not yet started says `Connection: close`), so keep-alive clients such
 * as an ingress move on to another pod; idle connections are closed at once; whatever is still open after
 * `drainMs` is cut. Call before the first connection.
 */
export function gracefulCloser(server: Server): (drainMs: number) => Promise<void> {
  const connections = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  return (drainMs) =>
    new Promise<void>((resolve) => {
      const closeIdleSoon = () => setImmediate(() => server.closeIdleConnections());
      // Runs before the app, so no answer to a request read from now on has started.
      server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
        res.shouldKeepAlive = false;
      });
      for (const socket of connections) {
        const res = answerUnderWay(socket);
        if (!res) continue;
        if (!res.headersSent) res.shouldKeepAlive = false;
        // A keep-alive connection whose answer had already started stays open after it: close it once it is idle.
        res.once('close', closeIdleSoon);
      }
      const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
      server.close(() => {
        clearTimeout(deadline);
        resolve();
      });
      server.closeIdleConnections();
    });
}
