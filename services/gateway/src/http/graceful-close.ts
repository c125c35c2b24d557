import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** The answer's head is written and says `Connection: close`: Node closes the connection once it is sent. */
function closesConnection(res: ServerResponse): boolean {
  return res.headersSent && (res as ServerResponse & { _last?: boolean })._last === true;
}

/**
 * Returns how to stop `server` for a rolling update: no new connections; requests under way are answered and
 * their connection then closed (the last answer on it not yet started says `Connection: close`), so keep-alive
 * clients such as an ingress move on to another pod; idle connections are closed at once; whatever is still open
 * after `drainMs` is cut. Call once the app listens for requests, before the first connection.
 */
export function gracefulCloser(server: Server): (drainMs: number) => Promise<void> {
  const connections = new Set<Socket>();
  /**
   * Per connection, the answers not yet finished, in request order: with pipelining, requests read behind the one
   * being answered wait in Node's queue, and Node closes the connection after an answer saying `Connection: close`,
   * dropping the queued ones (whose handlers have already run). So only the last one may say it.
   */
  const unfinished = new Map<Socket, ServerResponse[]>();
  /** The keep-alive an answer had before the drain made it the connection's last, to give back when another follows it. */
  const keepAliveBefore = new WeakMap<ServerResponse, boolean>();
  let draining = false;
  const closeIdleSoon = () => setImmediate(() => server.closeIdleConnections());

  /** Makes `res` the one that closes its connection: `Connection: close` when it has not started, else closing once idle. */
  const closeAfter = (res: ServerResponse) => {
    if (res.headersSent) {
      // A keep-alive answer already under way (or waiting in the queue, its head written) stays keep-alive.
      res.once('close', closeIdleSoon);
      return;
    }
    keepAliveBefore.set(res, res.shouldKeepAlive);
    res.shouldKeepAlive = false;
  };

  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => {
      connections.delete(socket);
      unfinished.delete(socket);
    });
  });
  // The app's listeners are called from here: before them, so no answer to a request read during the drain has
  // started, and not at all for a request that can no longer be answered.
  const appListeners = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    let queue = unfinished.get(socket);
    if (!queue) unfinished.set(socket, (queue = []));
    const previous = queue.at(-1);
    // Node reads on after an answer that said `Connection: close` and would run the request, then drop its answer;
    // a server that sent close must not process further requests on the connection (RFC 9112 §9.6).
    if (previous && closesConnection(previous)) return;
    queue.push(res);
    res.once('close', () => {
      const index = queue.indexOf(res);
      if (index >= 0) queue.splice(index, 1);
    });
    if (draining) {
      // The answer that was to close the connection is no longer its last: it keeps the connection open for this one.
      if (previous && keepAliveBefore.has(previous) && !previous.headersSent) {
        previous.shouldKeepAlive = keepAliveBefore.get(previous)!;
        keepAliveBefore.delete(previous);
      }
      closeAfter(res);
    }
    for (const listener of appListeners) listener.call(server, req, res);
  });

  return (drainMs) =>
    new Promise<void>((resolve) => {
      draining = true;
      for (const socket of connections) {
        const last = unfinished.get(socket)?.at(-1);
        if (last) closeAfter(last);
      }
      const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
      server.close(() => {
        clearTimeout(deadline);
        resolve();
      });
      server.closeIdleConnections();
    });
}
