import express, { Router, type Express } from 'express';
import cookieParser from 'cookie-parser';
import { LIVENESS_ANSWER, LIVENESS_PATH, READINESS_PATH, requestIdFrom, runWithRequestContext, type Logger, type ReadinessAnswer } from '@cards/platform';
import type { GatewayClients } from './clients';
import { errorHandler } from './http/error-handler';
import { notFound } from './http/http-error';
import { jsonBodyParser, requireJsonBodies } from './http/json-body';
import { createMetrics, type GatewayMetrics } from './http/metrics';
import { accessLog, type AccessLogLevel } from './http/access-log';
import { observeRequestEnds } from './http/request-end';
import { decodeUnreservedEscapes, refuseNonNormalGatewayPaths } from './http/api-paths';
import { requireOneHost } from './http/host-header';
import { refuseUnknownTransferCodings } from './http/transfer-coding';
import { recordMountPath } from './http/route-label';
import { securityHeaders } from './http/security-headers';
import { corsForConfiguredOrigins, originCheck } from './http/cross-origin';
import { serveApiDocs } from './openapi/serve-docs';
import type { RateLimitConfig } from './http/rate-limits';
import { batchingSessionResolver, SESSION_COOKIE, sessionMiddleware } from './http/session';
import { serveWebApp } from './http/web-app';
import { apiCompression } from './http/api-compression';
import { refuseUploadUnread, uploadAdmission, type UploadAdmissionLimits } from './http/upload-admission';
import { closeQueuedResponsesWithTheirConnection } from './http/queued-responses';
import { DEFAULT_REQUEST_ADMISSION, requestAdmission, type RequestAdmissionLimits } from './http/request-admission';
import { abandonWorkOfClientsGone } from './http/client-gone';
import { endRouteWorkWhenHandlersReturn } from './http/route-work';
import type { UploadBodyRate } from './http/upload-body-rate';
import { answerUnroutedApiRequest, routeMethodIndex, serverWideOptions, unmatchedApiRequest, unmatchedRequest } from './http/unmatched';
import { keepFixedSegmentsOutOfParams } from './http/fixed-segments';
import { isLogout, registerIdentityRoutes } from './routes/identity-routes';
import { registerCardRoutes } from './routes/card-routes';
import { registerVoteRoutes } from './routes/vote-routes';
import { registerUserRoutes } from './routes/user-routes';
import { registerSearchRoutes } from './routes/search-routes';
import { registerCollectionRoutes } from './routes/collection-routes';
import { registerFileRoutes, type FileReadLimits } from './routes/file-routes';
import { registerNotificationRoutes } from './routes/notification-routes';

/** What every route module receives. */
export interface RouteDeps {
  clients: GatewayClients;
  logger: Logger;
  /** host:port of the files service's internal HTTP endpoint (raw downloads). */
  filesHttpAddress: string;
  /** Sent to that endpoint, which refuses downloads without it when it listens beyond loopback. */
  filesInternalToken?: string;
  maxFileBytes: number;
}

export interface GatewayAppOptions extends RouteDeps {
  rateLimits: RateLimitConfig;
  cookieSecure: boolean;
  jsonBodyLimit: string;
  /** Express "trust proxy": false, true, a hop count, or the proxies' addresses (config TRUST_PROXY). */
  trustProxy: boolean | number | string[];
  /** Directory of the built web app served at `/` (SPA fallback for non-/api paths); none when undefined. */
  webDistDir?: string;
  /** Origins of other sites allowed to call the API with credentials (CORS) and to send state-changing requests with the cookie. */
  corsOrigins?: readonly string[];
  /** The gateway's public URL; its origin counts as the same site in the CSRF Origin check. */
  publicUrl?: string;
  /** Level of the access log (one line per request); `silent` or a level LOG_LEVEL filters out writes none. Default info. */
  accessLogLevel?: AccessLogLevel;
  /** API requests served at once and waiting (HTTP_REQUESTS_AT_ONCE, HTTP_HEAVY_REQUESTS_AT_ONCE, HTTP_REQUEST_QUEUE, HTTP_REQUEST_QUEUE_WAIT_MS, HTTP_REQUESTS_PER_CLIENT); 64, 8, 512, 5 s, 64 when unset. */
  requestAdmission?: RequestAdmissionLimits;
  /** Upload bodies held at once (UPLOADS_AT_ONCE, UPLOAD_QUEUE, UPLOAD_QUEUE_WAIT_MS); 1, 16, 15 s when unset. */
  uploads?: Omit<UploadAdmissionLimits, 'bodyLimitBytes'>;
  /** The slowest an admitted upload's body may arrive (UPLOAD_BODY_GRACE_MS, UPLOAD_MIN_BYTES_PER_SECOND, UPLOAD_BODY_RATE_WINDOW_MS); 10 s, 16 KiB/s over 10 s when unset. */
  uploadBodyRate?: UploadBodyRate;
  /** File reads with content: under way at once, each ReadFile call's deadline, a client's idle time (FILE_READS_AT_ONCE, FILE_READ_CALL_MS, FILE_READ_IDLE_MS); 16, 50 s, 60 s when unset. */
  fileReads?: FileReadLimits;
  /** Names the peers that do not answer SERVING; /healthz is 200 only when it resolves to none. */
  checkPeers(): Promise<readonly string[]>;
  /** /healthz's answer when it is shared with the metrics listener (one log of peer changes); default: peerReadiness(checkPeers). */
  readiness?: () => Promise<ReadinessAnswer>;
  /** The registry the requests are counted in; served at /metrics on this app unless `metricsElsewhere`. Default: a new one. */
  metrics?: GatewayMetrics;
  /** /metrics is served on a listener of its own (METRICS_PORT): here it is an unknown path. */
  metricsElsewhere?: boolean;
}

const DEFAULT_UPLOADS = { uploadsAtOnce: 1, maxQueued: 16, maxWaitMs: 15_000 };
const DEFAULT_UPLOAD_BODY_RATE: UploadBodyRate = { graceMs: 10_000, minBytesPerSecond: 16 * 1024, windowMs: 10_000 };

/**
 * Logs the peers /healthz finds not answering once per change (a warning naming them, an info line when all answer
 * again), not at every probe.
 */
function peerHealthLog(logger: Logger): (down: readonly string[]) => void {
  let last = '';
  return (down) => {
    const now = [...down].sort().join(', ');
    if (now === last) return;
    if (now) logger.warn({ notAnswering: [...down].sort(), previously: last || undefined }, `peers not answering: ${now}`);
    else logger.info({ previously: last }, 'every peer answers again');
    last = now;
  };
}

/**
 * /healthz's answer: 200 while `checkPeers` names no peer, else 503 naming them (as every error answer, DESIGN.md:
 * probes read the status code, people the message). Changes are logged once (peerHealthLog), wherever it is asked.
 */
export function peerReadiness(checkPeers: () => Promise<readonly string[]>, logger: Logger): () => Promise<ReadinessAnswer> {
  const peerHealth = peerHealthLog(logger);
  return async () => {
    const down = await checkPeers().catch((err: unknown) => {
      logger.error({ err }, 'checking the peers failed');
      return ['(the check failed)'];
    });
    peerHealth(down);
    return down.length === 0 ? { status: 200, body: { status: 'ok' } } : { status: 503, body: { message: `A service behind the gateway is not answering: ${down.join(', ')}` } };
  };
}

/**
 * The 'close' listeners one answer may hold before Node warns of a leak: the gateway's own concerns and a streamed
 * answer's pipeline come to about a dozen; twice Node's default leaves room for them and still names a real leak.
 */
const ANSWER_CLOSE_LISTENERS = 20;

/** The HTTP face of the system: /api routes, /livez, /healthz, /metrics (unless served elsewhere); every error as {"message"}. */
export function createGatewayApp(options: GatewayAppOptions): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', options.trustProxy);
  app.set('query parser', 'simple');
  // API answers depend on the caller's cookie and are not revalidated; hashing every body for an ETag is waste.
  app.set('etag', false);
  const metrics = options.metrics ?? createMetrics();
  const routes = routeMethodIndex(app.router);

  // Each concern below listens once for its answer's 'close' (queued answers, access log and metrics, admission slot and
  // share, idle cut, client gone, graceful close) and a streamed answer's pipeline adds three more: 11 on a listing,
  // past Node's default of 10, and every list answer (each poll of the notifications) printed "MaxListenersExceededWarning:
  // Possible EventEmitter memory leak detected" to stderr. No leak: the listeners end with their answer.
  app.use((_req, res, next) => {
    res.setMaxListeners(ANSWER_CLOSE_LISTENERS);
    next();
  });
  // First: every 'close' listener below relies on it for pipelined requests whose client left (slots, shares, logs).
  app.use(closeQueuedResponsesWithTheirConnection());
  app.use((req, res, next) => {
    const requestId = requestIdFrom(req.get('x-request-id'));
    res.setHeader('x-request-id', requestId);
    runWithRequestContext({ requestId }, next);
  });
  app.use(observeRequestEnds([accessLog(options.logger, options.accessLogLevel ?? 'info'), metrics.observe]));
  app.use(securityHeaders({ contentSecurityPolicy: false, crossOriginEmbedderPolicy: false }));
  // Probes and metrics are readings of this moment: a cache in front (a CDN's heuristic freshness) must not replay one.
  app.use(['/livez', '/healthz', '/metrics'], (_req, res, next) => {
    res.setHeader('cache-control', 'no-store');
    next();
  });
  app.use(requireOneHost);
  app.use(refuseUnknownTransferCodings);
  app.use(serverWideOptions(routes));
  app.use(refuseNonNormalGatewayPaths(routes));
  // /api/card/%63ount is /api/card/count: escaped letters, digits and -._~ are routed as the characters.
  app.use(decodeUnreservedEscapes);

  // Liveness: this process answers HTTP at all (its event loop turns). Nothing else is asked, so a peer or engine
  // outage never restarts the gateway; a wedged process (a TCP connect still succeeds) fails it.
  // The same answer as every metrics listener's (startMetricsServer), where the chart's probes ask it when there is one.
  app.get(LIVENESS_PATH, (_req, res) => {
    res.json(LIVENESS_ANSWER);
  });
  // Readiness: every peer answers SERVING over the calls' own channels.
  const readiness = options.readiness ?? peerReadiness(options.checkPeers, options.logger);
  app.get(READINESS_PATH, async (_req, res) => {
    const { status, body } = await readiness();
    res.status(status).json(body);
  });
  app.get('/metrics', async (_req, res) => {
    if (options.metricsElsewhere) throw notFound("Not served here: this gateway's metrics are on its metrics port (METRICS_PORT)");
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });

  serveApiDocs(app);
  const crossOrigin = { allowedOrigins: options.corsOrigins ?? [], publicUrl: options.publicUrl, cookieName: SESSION_COOKIE };
  app.use('/api', corsForConfiguredOrigins(crossOrigin));
  // Answers carry the caller's own data (profile, private cards): no cache, shared or private, keeps them.
  app.use('/api', (_req, res, next) => {
    res.setHeader('cache-control', 'no-store');
    next();
  });
  // JSON answers of 1 KiB or more compressed for clients that accept it (a page of search results is ~61 KiB); file bytes never.
  app.use('/api', apiCompression());

  app.use('/api', answerUnroutedApiRequest(routes));
  app.use('/api', requireJsonBodies);
  // The caller is known before any body is read: an upload is refused before its body takes memory or a slot.
  app.use('/api', cookieParser());
  app.use('/api', originCheck(crossOrigin));
  // Past what the process serves, requests wait in a bounded line and are then answered 503 (one client's: 429). A
  // request whose line is full is refused before its session is looked up (the refusal is the same whoever asks, and
  // a flood resent at once would make identity work for every refusal); the client's share is taken once the user is
  // known, before the body is read, the slot once it has been: a slow body holds no slot.
  const admission = requestAdmission(options.requestAdmission ?? DEFAULT_REQUEST_ADMISSION, options.logger, metrics.registry);
  app.use('/api', admission.lineFull);
  // A logout with identity unreachable still runs its route, which clears the cookie (registerIdentityRoutes, DELETE /auth).
  app.use('/api', sessionMiddleware(batchingSessionResolver(options.clients.identity), { answersLookupFailure: isLogout }));
  app.use('/api', admission.share);
  // Uploads carry the document base64-encoded in JSON: a larger limit for that one route only.
  const fileBodyLimit = Math.ceil((options.maxFileBytes * 4) / 3) + 256 * 1024;
  // The admitted upload's body is read within the admission, which cuts it when it arrives below the minimum rate.
  app.post(
    '/api/file',
    refuseUploadUnread(fileBodyLimit),
    uploadAdmission(
      { bodyLimitBytes: fileBodyLimit, ...(options.uploads ?? DEFAULT_UPLOADS) },
      { parse: jsonBodyParser(fileBodyLimit), minRate: options.uploadBodyRate ?? DEFAULT_UPLOAD_BODY_RATE, logger: options.logger },
    ),
  );
  app.use('/api', jsonBodyParser(options.jsonBodyLimit));
  app.use('/api', admission.slot);
  // A read's or a search's gRPC calls end when its client goes away before the answer (client-gone.ts).
  app.use('/api', abandonWorkOfClientsGone());

  const api = Router();
  api.use(recordMountPath('/api'));
  registerIdentityRoutes(api, { clients: options.clients, rateLimits: options.rateLimits, cookieSecure: options.cookieSecure, crossOrigin });
  // Order matters where paths overlap: the specific /user/collections, /user/files and
  // /card_collection/search routes come before /user/:user_id/:page and /card_collection/:id.
  registerSearchRoutes(api, options);
  registerCollectionRoutes(api, options);
  registerFileRoutes(api, options);
  registerNotificationRoutes(api, options);
  registerCardRoutes(api, options);
  registerVoteRoutes(api, options);
  registerUserRoutes(api, options);
  // /card/count, /card_collection/search/1: a fixed segment is never taken for /card/:card_id's or /card_collection/:collection_id's parameter.
  keepFixedSegmentsOutOfParams(api);
  // A route's handler returning (or its promise settling) without answering ends its work: a write's slot is not held
  // for good by an early return (route-work.ts).
  endRouteWorkWhenHandlersReturn(api);
  api.use(unmatchedApiRequest(routes));
  app.use('/api', api);
  if (options.webDistDir) serveWebApp(app, options.webDistDir, options.logger, { cookieSecure: options.cookieSecure });
  // Anything else is a JSON 405 (POST /healthz) or 404, not express's HTML page.
  app.use(unmatchedRequest(routes));

  app.use(errorHandler(options.logger, routes));
  return app;
}
