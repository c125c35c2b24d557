import type { Server } from 'node:http';
import { connectMongo, createLogger, loadConfig, startMetricsServer, stopOnSignals, type Logger, type MetricsServerHandle, type MongoConnection, type RunningService } from '@cards/platform';
import { health } from '@cards/proto';
import { createClient } from 'nice-grpc';
import { createGatewayApp, peerReadiness } from './app';
import { createGatewayClients } from './clients';
import { cookieSecureFrom, gatewayConfigSchema, type GatewayConfig } from './config';
import { MemoryAttemptCounter } from './adapters/memory/memory-attempt-counter';
import { MongoAttemptCounter } from './adapters/mongo/mongo-attempt-counter';
import { FailoverAttemptCounter } from './application/failover-attempt-counter';
import type { AttemptCounter } from './domain/attempt-counter';
import { gracefulCloser } from './http/graceful-close';
import { createMetrics } from './http/metrics';
import { createGatewayServer } from './http/node-server';
import { routeMethodIndex } from './http/unmatched';

/**
 * MongoDB when MONGO_URL is set (its own database "gateway"), so every replica counts the auth rate limits in one
 * place, falling back to this process's memory while it does not answer; else memory alone. The choice is logged.
 */
async function openAttemptCounter(config: GatewayConfig, logger: Logger): Promise<{ counter: AttemptCounter; connection?: MongoConnection }> {
  if (!config.MONGO_URL) {
    logger.info('MONGO_URL not set: auth rate limits counted in this process (each gateway replica counts alone)');
    return { counter: new MemoryAttemptCounter() };
  }
  const connection = await connectMongo({ url: config.MONGO_URL, database: 'gateway', logger });
  try {
    const shared = await MongoAttemptCounter.open(connection.db);
    logger.info('auth rate limits counted in MongoDB, shared by every gateway replica');
    return { counter: new FailoverAttemptCounter(shared, new MemoryAttemptCounter(), { logger }), connection };
  } catch (err) {
    await connection.close().catch(() => undefined);
    throw err;
  }
}

/** Composition root of the gateway. */
export async function startGateway(env: Record<string, string | undefined> = process.env): Promise<RunningService & { port: number }> {
  const config = loadConfig(gatewayConfigSchema, env);
  const logger = createLogger('gateway');
  const peers = {
    identity: config.IDENTITY_SERVICE_ADDR,
    cards: config.CARDS_SERVICE_ADDR,
    search: config.SEARCH_SERVICE_ADDR,
    files: config.FILES_SERVICE_ADDR,
    notifications: config.NOTIFICATIONS_SERVICE_ADDR,
  };
  const { counter, connection } = await openAttemptCounter(config, logger);
  const { clients, channels } = createGatewayClients(peers, config.GRPC_DEADLINE_MS);
  // Over the very channels the calls use: a channel of its own reconnected to a restarted peer while the calls' channel
  // still waited out its reconnect backoff, so /healthz said 200 while every call to that peer was answered 503.
  const healthClients = Object.entries(channels).map(([name, channel]) => ({ name, client: createClient(health.HealthDefinition, channel) }));
  async function checkPeers() {
    const answers = await Promise.all(
      healthClients.map(({ name, client }) =>
        client
          .check({ service: '' }, { signal: AbortSignal.timeout(1000) })
          .then((r) => (r.status === health.HealthCheckResponse_ServingStatus.SERVING ? undefined : name))
          .catch(() => name),
      ),
    );
    return answers.filter((name): name is string => name !== undefined);
  }
  // One /healthz, answered on PORT and on the metrics listener (where the all-in-one image's health check asks it).
  const readiness = peerReadiness(checkPeers, logger);
  const metrics = createMetrics();
  if (!config.FILES_INTERNAL_TOKEN) {
    // files refuses every download without one (loopback alone is not trusted): say so here too.
    logger.warn('FILES_INTERNAL_TOKEN is not set: the files service refuses the downloads passed to it; set the same FILES_INTERNAL_TOKEN (>= 16 characters) on gateway and files (the all-in-one makes one per start)');
  }
  const app = createGatewayApp({
    clients,
    metrics,
    metricsElsewhere: config.METRICS_PORT !== undefined,
    logger,
    filesHttpAddress: config.FILES_HTTP_ADDR,
    filesInternalToken: config.FILES_INTERNAL_TOKEN,
    maxFileBytes: config.MAX_FILE_BYTES,
    rateLimits: {
      perIpPerMinute: config.RATE_LIMIT_AUTH_PER_IP,
      perEmailPerMinute: config.RATE_LIMIT_AUTH_PER_EMAIL,
      mailPerIp: config.RATE_LIMIT_MAIL_PER_IP,
      mailWindowMs: config.RATE_LIMIT_MAIL_WINDOW_MS,
      counter,
    },
    cookieSecure: cookieSecureFrom(config),
    jsonBodyLimit: config.JSON_BODY_LIMIT,
    requestAdmission: {
      atOnce: config.HTTP_REQUESTS_AT_ONCE,
      heavyAtOnce: config.HTTP_HEAVY_REQUESTS_AT_ONCE,
      queue: config.HTTP_REQUEST_QUEUE,
      queueWaitMs: config.HTTP_REQUEST_QUEUE_WAIT_MS,
      perClient: config.HTTP_REQUESTS_PER_CLIENT,
      answerIdleMs: config.HTTP_ANSWER_IDLE_MS,
    },
    uploads: { uploadsAtOnce: config.UPLOADS_AT_ONCE, maxQueued: config.UPLOAD_QUEUE, maxWaitMs: config.UPLOAD_QUEUE_WAIT_MS },
    uploadBodyRate: { graceMs: config.UPLOAD_BODY_GRACE_MS, minBytesPerSecond: config.UPLOAD_MIN_BYTES_PER_SECOND, windowMs: config.UPLOAD_BODY_RATE_WINDOW_MS },
    fileReads: { atOnce: config.FILE_READS_AT_ONCE, perClient: config.FILE_READS_PER_CLIENT, callMs: config.FILE_READ_CALL_MS, idleMs: config.FILE_READ_IDLE_MS },
    trustProxy: config.TRUST_PROXY,
    corsOrigins: config.CORS_ORIGINS,
    publicUrl: config.PUBLIC_URL,
    webDistDir: config.WEB_DIST_DIR || undefined,
    accessLogLevel: config.ACCESS_LOG_LEVEL,
    checkPeers,
    readiness,
  });
  const server: Server = createGatewayServer(app, { maxConnections: config.HTTP_MAX_CONNECTIONS, logger, serverMethods: routeMethodIndex(app.router).serverMethods });
  await new Promise<void>((resolve, reject) => {
    // An unbound server must not be taken for a started one.
    server.once('error', reject);
    server.listen(config.PORT, config.HOST, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (err: unknown) => {
    // The all-in-one starts again on other ports after EADDRINUSE: leave no connection behind.
    await connection?.close().catch(() => undefined);
    throw err;
  });
  // Listening has just begun: no request has been read yet.
  const closeGracefully = gracefulCloser(server);
  const port = (server.address() as { port: number }).port;
  let metricsServer: MetricsServerHandle | undefined;
  if (config.METRICS_PORT !== undefined) {
    metricsServer = await startMetricsServer({ host: config.METRICS_HOST, port: config.METRICS_PORT, logger, registry: metrics.registry, readiness }).catch(async (err: unknown) => {
      await closeGracefully(0);
      await connection?.close().catch(() => undefined);
      throw err;
    });
  }
  logger.info({ port, metricsPort: metricsServer?.port }, 'gateway listening');
  return {
    name: 'gateway',
    address: `${config.HOST}:${port}`,
    port,
    async stop() {
      await closeGracefully(config.SHUTDOWN_DRAIN_MS);
      await metricsServer?.close();
      for (const channel of Object.values(channels)) channel.close();
      await connection?.close();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('gateway');
  startGateway()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      logger.fatal({ err }, 'gateway failed to start');
      process.exit(1);
    });
}
