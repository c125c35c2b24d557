import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '@cards/platform';

/**
 * How long the gateway's HTTP server waits on a client, in milliseconds. Node checks the first two every
 * 30 s, from the moment a connection opens: a head that never completes (a client that sends nothing
 * at all included) is answered 408 and closed after 60-90 s.
 */
export interface ServerTimeouts {
  /** Complete request head (Node's headersTimeout). */
  headers: number;
  /** Complete request, body included: room for a MAX_FILE_BYTES upload on a slow line (requestTimeout). */
  request: number;
  /** Idle keep-alive connection between requests; above the 60 s idle timeout of common load balancers. */
  keepAlive: number;
}

export const SERVER_TIMEOUTS: ServerTimeouts = { headers: 60_000, request: 300_000, keepAlive: 65_000 };

const PARSER_ANSWERS: Record<string, [number, string]> = {
  // llhttp counts the request line and the headers together against the 16 KiB limit.
  HPE_HEADER_OVERFLOW: [431, 'The request URL or headers are too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'The chunk extensions are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request did not arrive in time'],
};

function rawJsonAnswer(status: number, message: string, extraHeaders = ''): string {
  const body = JSON.stringify({ message });
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extraHeaders}Connection: close\r\n\r\n${body}`;
}

/**
 * Requests Node's HTTP parser rejects (malformed, head over the size limit, too slow) never reach express
 * and would get Node's bare 400/408/431; they get the API's {"message"} instead, written only when no
 * answer has started on the connection, as Node's own handler does.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (err.code !== 'ECONNRESET' && socket.writable && (!inFlight || !inFlight.headersSent)) {
    const [status, message] = PARSER_ANSWERS[err.code ?? ''] ?? [400, 'Malformed HTTP request'];
    socket.write(rawJsonAnswer(status, message));
  }
  socket.destroy(err);
}

/**
 * CONNECT (a proxy tunnel) has no route here; without this Node drops the connection without a word. Its Allow is
 * what `OPTIONS *` lists, read from the same route table, so the two cannot disagree.
 */
function refuseConnect(serverMethods: () => readonly string[]) {
  return (_req: IncomingMessage, socket: Duplex): void => {
    socket.on('error', () => socket.destroy());
    socket.end(rawJsonAnswer(405, 'CONNECT is not supported: this server is not a proxy', `Allow: ${serverMethods().join(', ')}\r\n`));
  };
}

/** An `Expect` other than 100-continue (RFC 9110 §10.1.1); Node's own answer has an empty body. */
function refuseExpectation(_req: IncomingMessage, res: ServerResponse): void {
  const body = JSON.stringify({ message: 'Unsupported Expect header: only 100-continue is understood' });
  res.writeHead(417, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * `Expect: 100-continue` is answered 100 only once the app starts reading the body (a listener, a pipe), not before the
 * app runs as Node does by default: a request the app refuses unread (a body declared over the limit, an unknown route,
 * no session for an upload) gets its final answer alone, and the client never sends the body.
 */
function continueWhenBodyIsRead(server: Server) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    req.once('resume', () => {
      // Node resumes an unread body itself to drop it once the answer is sent: no 100 then.
      if (!res.headersSent && !res.writableEnded) res.writeContinue();
    });
    server.emit('request', req, res);
  };
}

/**
 * Applies the timeouts and the JSON answers to requests that never reach express; call before the first connection.
 * `serverMethods` lists every method the routes answer (RouteMethodIndex.serverMethods, what `OPTIONS *` answers).
 */
export function hardenServer(server: Server, timeouts: ServerTimeouts = SERVER_TIMEOUTS, serverMethods: () => readonly string[] = () => []): void {
  server.headersTimeout = timeouts.headers;
  server.requestTimeout = timeouts.request;
  server.keepAliveTimeout = timeouts.keepAlive;
  server.on('clientError', answerClientError);
  server.on('connect', refuseConnect(serverMethods));
  server.on('checkExpectation', refuseExpectation);
  server.on('checkContinue', continueWhenBodyIsRead(server));
}

/** How often at most the gateway warns that connections are being refused at the cap. */
const DROP_WARNING_INTERVAL_MS = 60_000;

/**
 * Connections over the cap that may be open at once while they are being answered 503; past them Node closes new
 * ones unread, so a flood costs at most this many file descriptors more than the cap.
 */
const REFUSALS_AT_ONCE = 100;

/** How long a refused connection may stay open after its 503 is written, for the client to read it and hang up. */
const REFUSAL_LINGER_MS = 1_000;

const OVERLOADED = Buffer.from(rawJsonAnswer(503, 'The server has too many open connections; try again shortly', 'Retry-After: 1\r\n'));

/**
 * Answers a connection over the cap 503 without parsing it, and reads and drops what the client sends until it
 * hangs up or REFUSAL_LINGER_MS have passed: closing with unread bytes would send a reset, which may reach the
 * client before the answer.
 */
function refuseOverCap(socket: Socket): void {
  socket.on('error', () => socket.destroy());
  // Counted from the answer, not an idle timeout: a client that keeps sending must not keep its refusal place.
  const linger = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS);
  socket.once('close', () => clearTimeout(linger));
  socket.resume();
  socket.end(OVERLOADED);
}

/**
 * Caps open HTTP connections (keep-alive ones included) at `maxConnections` (0: no cap): a new connection above
 * it is answered 503 with Retry-After and closed, before anything is read from it, so a flood of slow or idle
 * clients costs neither parsers nor memory beyond the cap. Up to REFUSALS_AT_ONCE connections being refused
 * may be open on top; past them Node closes new connections unanswered. Refusals are logged at most once a
 * minute, with their count.
 */
function capConnections(server: Server, maxConnections: number, logger: Logger): void {
  if (maxConnections <= 0) return;
  // Counts every accepted connection, the ones being refused included.
  server.maxConnections = maxConnections + REFUSALS_AT_ONCE;
  let refused = 0;
  let dropped = 0;
  let lastWarning = -Infinity;
  const counted = (kind: 'refused' | 'dropped') => {
    if (kind === 'refused') refused++;
    else dropped++;
    const now = performance.now();
    if (now - lastWarning < DROP_WARNING_INTERVAL_MS) return;
    logger.warn({ maxConnections, refusedSinceLastWarning: refused, droppedSinceLastWarning: dropped }, 'connection cap reached: new connections are answered 503 (HTTP_MAX_CONNECTIONS)');
    lastWarning = now;
    refused = 0;
    dropped = 0;
  };
  server.on('drop', () => counted('dropped'));

  // Node's HTTP handling of a connection is the server's own 'connection' listener: it runs only for those under the cap.
  const [parseHttp] = server.listeners('connection') as Array<(this: Server, socket: Socket) => void>;
  if (!parseHttp) throw new Error('the HTTP server has no connection listener to cap');
  server.removeListener('connection', parseHttp);
  let open = 0;
  server.on('connection', (socket: Socket) => {
    if (open >= maxConnections) {
      counted('refused');
      refuseOverCap(socket);
      return;
    }
    open++;
    socket.once('close', () => open--);
    parseHttp.call(server, socket);
  });
}

export interface GatewayServerOptions {
  maxConnections: number;
  logger: Logger;
  timeouts?: ServerTimeouts;
  /** Every method the app's routes answer (RouteMethodIndex.serverMethods): the Allow of the 405 to CONNECT. */
  serverMethods?: () => readonly string[];
}

/** The gateway's HTTP server around `app`: timeouts, JSON answers below express, the connection cap. */
export function createGatewayServer(app: RequestListener, options: GatewayServerOptions): Server {
  // The Host check is express's (http/host-header.ts), so its 400 is JSON like every other answer.
  const server = createServer({ requireHostHeader: false }, app);
  hardenServer(server, options.timeouts, options.serverMethods);
  capConnections(server, options.maxConnections, options.logger);
  return server;
}
