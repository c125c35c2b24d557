import { STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

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
  HPE_HEADER_OVERFLOW: [431, 'The request headers are too large'],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, 'The chunk extensions are too large'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'The request did not arrive in time'],
};

function rawJsonAnswer(status: number, message: string): string {
  const body = JSON.stringify({ message });
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
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

/** Applies the timeouts and the JSON answer to parser-level errors; call before the first connection. */
export function hardenServer(server: Server, timeouts: ServerTimeouts = SERVER_TIMEOUTS): void {
  server.headersTimeout = timeouts.headers;
  server.requestTimeout = timeouts.request;
  server.keepAliveTimeout = timeouts.keepAlive;
  server.on('clientError', answerClientError);
}
