import { connect, type Socket } from 'node:net';

export interface PacedAnswer {
  status: number;
  headers: Record<string, string>;
  json: any;
  /** Body bytes written before the answer came (or the connection ended). */
  sentBytes: number;
}

export interface PacedUpload {
  /** The answer, once it is whole; status 0 when the connection ended without one. */
  answer: Promise<PacedAnswer>;
  /** Ends the connection (a client still sending, or one that went quiet). */
  close(): void;
}

export interface Pace {
  /** Bytes written each tick. */
  bytesPerTick: number;
  tickMs: number;
  /** Stop writing (the connection stays open, idle) once this many body bytes are written. */
  goQuietAfter?: number;
  /** Content-Length declared; the body's own length when unset. */
  declaredBytes?: number;
}

/**
 * A POST whose body is written at a set pace over a raw connection, as a slow (or stalled) client sends it, with
 * Content-Length up front; the answer is read as it arrives, even while the body is still being sent.
 */
export function pacedUpload(baseUrl: string, path: string, headers: Record<string, string>, body: Buffer, pace: Pace): PacedUpload {
  const { hostname, port } = new URL(baseUrl);
  const socket: Socket = connect(Number(port), hostname);
  socket.setNoDelay(true);
  let sent = 0;
  let ticker: NodeJS.Timeout | undefined;
  const stopSending = () => clearInterval(ticker);
  const answer = new Promise<PacedAnswer>((resolve) => {
    let received = Buffer.alloc(0);
    const finish = (parsed: PacedAnswer) => {
      stopSending();
      resolve(parsed);
    };
    const parse = (): PacedAnswer | undefined => {
      const headEnd = received.indexOf('\r\n\r\n');
      if (headEnd < 0) return undefined;
      const [statusLine = '', ...lines] = received.subarray(0, headEnd).toString('latin1').split('\r\n');
      const responseHeaders: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        responseHeaders[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = Number(responseHeaders['content-length'] ?? 0);
      const content = received.subarray(headEnd + 4);
      if (content.length < length) return undefined;
      const text = content.subarray(0, length).toString('utf8');
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      return { status: Number(statusLine.split(' ')[1]), headers: responseHeaders, json, sentBytes: sent };
    };
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const parsed = parse();
      if (parsed) finish(parsed);
    });
    // Writes after the server closed fail (EPIPE, ECONNRESET): what matters is the answer read before.
    socket.on('error', () => undefined);
    socket.on('close', () => finish(parse() ?? { status: 0, headers: {}, json: undefined, sentBytes: sent }));
  });
  socket.once('connect', () => {
    const head = [`POST ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, `Content-Length: ${pace.declaredBytes ?? body.length}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    socket.write(`${head.join('\r\n')}\r\n\r\n`);
    ticker = setInterval(() => {
      const until = Math.min(body.length, pace.goQuietAfter ?? body.length, sent + pace.bytesPerTick);
      if (until <= sent || socket.destroyed) return stopSending();
      socket.write(body.subarray(sent, until));
      sent = until;
    }, pace.tickMs);
  });
  return {
    answer,
    close: () => {
      stopSending();
      socket.destroy();
    },
  };
}
