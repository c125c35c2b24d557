import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { isAbortError } from 'abort-controller-x';
import { ServerError, Status, type CallContext, type ServerMiddlewareCall } from 'nice-grpc';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { eventPipelineMetrics } from './events/event-metrics';
import { LIVENESS_ANSWER, LIVENESS_PATH, READINESS_PATH, type ReadinessAnswer } from './liveness';
import { serviceMetrics } from './service-metrics';

/**
 * The gRPC calls this process served, by service, method and status: one registry per process, so the
 * all-in-one's gateway can serve it beside its own metrics. Names and labels follow go-grpc-prometheus,
 * so the usual dashboards and alerts apply.
 */
export const grpcServerMetrics = new Registry();

const handled = new Counter({
  name: 'grpc_server_handled_total',
  help: 'gRPC calls completed by the server, by service, method, type and status code',
  labelNames: ['grpc_type', 'grpc_service', 'grpc_method', 'grpc_code'] as const,
  registers: [grpcServerMetrics],
});

const handling = new Histogram({
  name: 'grpc_server_handling_seconds',
  help: 'Time from the start of a gRPC call to its answer (a stream: its end), by service, method and type',
  labelNames: ['grpc_type', 'grpc_service', 'grpc_method'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [grpcServerMetrics],
});

function callType(method: { requestStream: boolean; responseStream: boolean }): string {
  if (method.requestStream) return method.responseStream ? 'bidi_stream' : 'client_stream';
  return method.responseStream ? 'server_stream' : 'unary';
}

function statusOf(error: unknown): Status {
  if (error instanceof ServerError) return error.code;
  return isAbortError(error) ? Status.CANCELLED : Status.UNKNOWN;
}

/** Counts and times every call by the status it ends with; the outermost middleware, so it sees mapped errors. */
export function metricsMiddleware() {
  return async function* <Request, Response>(call: ServerMiddlewareCall<Request, Response>, context: CallContext) {
    const [, service = '', method = ''] = call.method.path.split('/');
    const labels = { grpc_type: callType(call.method), grpc_service: service, grpc_method: method };
    const stopTimer = handling.startTimer(labels);
    let code = Status.OK;
    try {
      return yield* call.next(call.request, context);
    } catch (error) {
      code = statusOf(error);
      throw error;
    } finally {
      stopTimer();
      handled.inc({ ...labels, grpc_code: Status[code] });
    }
  };
}

function defaultServiceRegistry(): Registry {
  const processMetrics = new Registry();
  collectDefaultMetrics({ register: processMetrics });
  return Registry.merge([processMetrics, grpcServerMetrics, eventPipelineMetrics, serviceMetrics]);
}

export interface MetricsServerHandle {
  port: number;
  close(): Promise<void>;
}

/**
 * The metrics listener's own bounds, fixed (not settings): its clients are a scraper and the kubelet's probes, each a
 * short GET, so a socket that has not sent its request within seconds, or sits idle, is a mistake or a slow-loris.
 * - `maxConnections`: sockets held at once. A scraper and three probes use a few. One more closes the oldest socket
 *   that is not being answered (one that has not sent a complete request, or kept alive idle), so a slow-loris
 *   re-opening half-sent requests cannot keep a probe's complete request unanswered (keepForCompleteRequests); only
 *   when every socket is being answered is the new one closed unanswered.
 * - `headersTimeoutMs`/`requestTimeoutMs`: a request not fully received by then is answered 408 and its socket closed
 *   (checked every `checkIntervalMs`; Node's defaults, 60 s and 300 s checked every 30 s, let one socket sit minutes).
 * - `keepAliveTimeoutMs`: an idle kept-alive socket is closed after this (Prometheus scrapes every 15 s or more and
 *   reconnects); `idleTimeoutMs`: any socket with no traffic either way this long (a client that stopped reading).
 */
export const METRICS_LISTENER_BOUNDS = Object.freeze({
  maxConnections: 16,
  headersTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  checkIntervalMs: 1_000,
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
});

/**
 * At most `max` sockets on `server`; one more closes the oldest socket not being answered (no request read whose answer
 * is still under way: it has sent no complete request yet, or is a kept-alive socket between requests), or, when every
 * socket is being answered, the new one. Node's own cap (server.maxConnections) closes the new one always: a client
 * re-opening 16 half-sent requests every few seconds (each cut by the headers timeout, 5 s) kept the kubelet's /livez
 * unanswered for as long as it liked, and a healthy pod was restarted. Here the probe's connection, the newest, is the
 * last one closed, and its request, complete at once, is answered before 16 more connections come; the half-sent ones
 * are closed oldest first.
 */
function keepForCompleteRequests(server: Server, max: number): void {
  /** Every open socket (oldest first: a Map keeps insertion order) and its requests being answered. */
  const sockets = new Map<Socket, { answering: number }>();
  server.on('connection', (socket: Socket) => {
    sockets.set(socket, { answering: 0 });
    socket.once('close', () => sockets.delete(socket));
    if (sockets.size <= max) return;
    for (const [held, { answering }] of sockets) {
      if (held === socket || answering > 0) continue;
      // Forgotten at once: more connections may come before its 'close'.
      sockets.delete(held);
      held.destroy();
      return;
    }
    sockets.delete(socket);
    socket.destroy();
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const state = sockets.get(req.socket);
    if (!state) return;
    state.answering += 1;
    res.once('close', () => (state.answering -= 1));
  });
}

/**
 * Prometheus text on GET /metrics of a listener of its own: `registry`, or by default the process's default metrics, the
 * gRPC calls it served, its event pipeline and its services' own metrics (serviceMetrics). It also answers GET /livez
 * (liveness.ts) as the gateway's HTTP port does: this listener is outside the gateway's connection cap and request
 * admission, so the probes asking it here are not refused with the gateway's port full. It has bounds of its own
 * (METRICS_LISTENER_BOUNDS), so a slow client cannot hold its sockets for good.
 */
export async function startMetricsServer(options: {
  host: string;
  port: number;
  logger: Logger;
  registry?: Registry;
  /**
   * Answers GET /healthz here too, as the gateway's port does (its peers' readiness): the all-in-one image's health
   * check asks it on this listener, out of reach of a flood of the gateway's port. Without it, /healthz is a 404 here.
   */
  readiness?: () => Promise<ReadinessAnswer>;
}): Promise<MetricsServerHandle> {
  const registry = options.registry ?? defaultServiceRegistry();
  const bounds = METRICS_LISTENER_BOUNDS;
  const server: Server = createServer(
    {
      headersTimeout: bounds.headersTimeoutMs,
      requestTimeout: bounds.requestTimeoutMs,
      keepAliveTimeout: bounds.keepAliveTimeoutMs,
      connectionsCheckingInterval: bounds.checkIntervalMs,
    },
    (req, res) => {
      const answer = (status: number, body: string, type = 'application/json') => res.writeHead(status, { 'content-type': type }).end(body);
      const path = (req.url ?? '').split('?')[0];
      const readiness = path === READINESS_PATH ? options.readiness : undefined;
      if (path !== '/metrics' && path !== LIVENESS_PATH && !readiness) {
        const served = `metrics are served at /metrics, liveness at ${LIVENESS_PATH}${options.readiness ? `, readiness at ${READINESS_PATH}` : ''}`;
        return answer(404, JSON.stringify({ message: `Not found: ${served}` }));
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.setHeader('allow', 'GET, HEAD');
        return answer(405, JSON.stringify({ message: `Method ${req.method} not allowed on ${path}` }));
      }
      // Readings of this moment, as on the gateway's port: a cache in front must not replay one.
      res.setHeader('cache-control', 'no-store');
      if (path === LIVENESS_PATH) return answer(200, req.method === 'HEAD' ? '' : JSON.stringify(LIVENESS_ANSWER), 'application/json; charset=utf-8');
      if (readiness) {
        readiness().then(
          ({ status, body }) => answer(status, req.method === 'HEAD' ? '' : JSON.stringify(body), 'application/json; charset=utf-8'),
          (err: unknown) => {
            options.logger.error({ err }, 'checking readiness failed');
            answer(503, JSON.stringify({ message: 'Checking readiness failed' }));
          },
        );
        return;
      }
      registry.metrics().then(
        (text) => answer(200, req.method === 'HEAD' ? '' : text, registry.contentType),
        (err: unknown) => {
          options.logger.error({ err }, 'collecting metrics failed');
          answer(500, JSON.stringify({ message: 'Internal error' }));
        },
      );
    },
  );
  keepForCompleteRequests(server, bounds.maxConnections);
  // No 'timeout' listener: Node destroys a socket idle this long.
  server.setTimeout(bounds.idleTimeoutMs);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  options.logger.info({ port }, 'metrics listening');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
