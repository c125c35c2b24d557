import { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** Per connection, the answers not yet closed that it was still to carry (pipelined requests queued behind another). */
const awaiting = new WeakMap<Socket, Set<Response>>();

/**
 * Closes, with their connection, the answers to pipelined requests that were still queued behind an earlier answer.
 * Node (20) runs every pipelined request's handlers as soon as it is read, but gives its answer the connection only
 * once the answers before it are sent; when the client closes the connection first, the queued answers never emit
 * 'close' (they never had a socket to hear it from). Whatever waited for that 'close' waited for good: the request
 * bound's slot and the client's share (request-admission.ts), an upload's admission, a file read's slot, the access
 * log line. One client sending 64 pipelined GETs and closing its connection took every slot of HTTP_REQUESTS_AT_ONCE
 * for good: every later /api request waited its 5 s in line and was answered 503.
 *
 * Here such an answer is destroyed and emits 'close' when its connection closes, as an answer holding the connection
 * does. Register first, before anything that listens for the answer's 'close'.
 */
export function closeQueuedResponsesWithTheirConnection(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const socket = req.socket;
    // Holding the connection already (no request before it still answering): Node emits its 'close' itself.
    if (!socket || res.socket) return next();
    if (socket.destroyed) {
      closeUnanswered(res);
      return next();
    }
    let queued = awaiting.get(socket);
    if (!queued) {
      const set = new Set<Response>();
      awaiting.set(socket, set);
      queued = set;
      socket.once('close', () => {
        awaiting.delete(socket);
        for (const waiting of set) closeUnanswered(waiting);
        set.clear();
      });
    }
    queued.add(res);
    const answers = queued;
    res.once('close', () => answers.delete(res));
    next();
  };
}

function closeUnanswered(res: Response): void {
  // Given the connection meanwhile, or sent whole: Node emits its 'close'.
  if (res.socket || res.writableFinished) return;
  // Node's own destroy, not the one a write's request slot hooks (request-admission.ts whenWorkEnds: an answer its
  // route or the error handler destroys is the end of that route's work): the connection closed this answer, and the
  // route goes on. Counted as its end, a pipelined login whose client closed the connection gave its heavy slot back
  // while identity still checked its password, and the next login in line started beside it.
  ServerResponse.prototype.destroy.call(res);
  res.emit('close');
}
