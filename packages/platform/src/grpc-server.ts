import { composeServerMiddleware, createServer, ServerError, Status, type CallContext, type ServerMiddleware, type ServerMiddlewareCall, type Server } from 'nice-grpc';
import { isAbortError } from 'abort-controller-x';
import { HealthDefinition, HealthServiceImpl, HealthState } from 'nice-grpc-server-health';
import type { Logger } from 'pino';
import { z } from 'zod';
import { GRPC_MAX_MESSAGE_BYTES } from './grpc-limits';
import { loadConfig, MAX_TIMER_MS } from './config';
import { DomainError, errorMessage, SERVICE_BUSY, STORAGE_FULL, STORAGE_FULL_MESSAGE, STORE_BUSY_MESSAGE } from './errors';
import { repeatedWarningLog } from './repeated-warning';
import { metricsMiddleware, startMetricsServer, type MetricsServerHandle } from './grpc-metrics';
import { localAddresses, serveInProcess, type TsProtoDefinition } from './in-process-calls';
import { internalCallTokenMiddleware, internalCallTokenRequired } from './internal-call-token';
import { isEngineUnavailableError, isStorageFullError, isStoreBusyError, type EngineReadinessMonitor, type ReadinessStatus } from './readiness';
import { CALL_BUDGET_METADATA_KEY, REQUEST_ID_METADATA_KEY, requestIdFrom, runWithRequestContext, storeWaitUntilFor } from './request-context';
import { markStatusOfService, markStatusReason } from './status-origin';

/**
 * Maps domain errors to gRPC statuses; anything unexpected becomes INTERNAL with a generic message and a logged stack.
 * An engine not answering is expected for as long as its outage lasts (the readiness monitor announces it): UNAVAILABLE,
 * logged as a warning without a stack, the first and then one a minute at most with the count since (repeatedWarningLog).
 */
export function errorMiddleware(logger: Logger) {
  const engineUnreachable = repeatedWarningLog(logger, 'an engine is unreachable: answering UNAVAILABLE');
  const storageFull = repeatedWarningLog(logger, 'storage is full (no space left on the data dir or the engine): answering UNAVAILABLE, nothing written');
  const storeBusy = repeatedWarningLog(logger, 'a store stayed locked by another connection past busy_timeout (a backup copying it?): answering UNAVAILABLE, nothing written');
  return async function* <Request, Response>(call: ServerMiddlewareCall<Request, Response>, context: CallContext) {
    try {
      return yield* call.next(call.request, context);
    } catch (error) {
      if (error instanceof ServerError || isAbortError(error)) throw error;
      if (error instanceof DomainError) {
        markStatusOfService(context.trailer);
        if (error.reason !== undefined) markStatusReason(context.trailer, error.reason);
        throw new ServerError(error.status, error.message);
      }
      // A full disk (SQLITE_FULL, ENOSPC, EDQUOT): the write was not made and succeeds once space is freed. Marked as the
      // service's own status with its reason, so the gateway answers 503 with this message, not its generic one.
      if (isStorageFullError(error)) {
        storageFull({ method: call.method.path, error: errorMessage(error).slice(0, 300) });
        markStatusOfService(context.trailer);
        markStatusReason(context.trailer, STORAGE_FULL);
        throw new ServerError(Status.UNAVAILABLE, STORAGE_FULL_MESSAGE);
      }
      // A store locked past busy_timeout (the backup command copying it): the service busy for a moment, so the gateway
      // answers 503 with this message and Retry-After, as for its other momentary bounds (SERVICE_BUSY).
      if (isStoreBusyError(error)) {
        storeBusy({ method: call.method.path, error: errorMessage(error).slice(0, 300) });
        markStatusOfService(context.trailer);
        markStatusReason(context.trailer, SERVICE_BUSY);
        throw new ServerError(Status.UNAVAILABLE, STORE_BUSY_MESSAGE);
      }
      if (isEngineUnavailableError(error)) {
        engineUnreachable({ method: call.method.path, error: errorMessage(error).slice(0, 300) });
        throw new ServerError(Status.UNAVAILABLE, 'Service temporarily unavailable: a storage engine cannot be reached; try again shortly');
      }
      logger.error({ err: error, method: call.method.path }, 'unexpected error in gRPC handler');
      throw new ServerError(Status.INTERNAL, 'Internal error');
    }
  };
}

/** Runs each call inside the request context carried in metadata, so logs and onward calls share the request id. */
export function requestContextMiddleware() {
  return async function* <Request, Response>(call: ServerMiddlewareCall<Request, Response>, context: CallContext) {
    const requestId = requestIdFrom(context.metadata.get(REQUEST_ID_METADATA_KEY));
    // The call's waits for a locked store end before its caller gives up on it (sqlite.ts, boundBusyWait).
    const storeWaitUntil = storeWaitUntilFor(context.metadata.get(CALL_BUDGET_METADATA_KEY));
    const callContext = storeWaitUntil === undefined ? { requestId } : { requestId, storeWaitUntil };
    // Generators cannot be wrapped in AsyncLocalStorage.run directly; entering the store per step keeps it for awaits inside.
    const inner = call.next(call.request, context);
    while (true) {
      const step = await runWithRequestContext(callContext, () => inner.next());
      if (step.done) return step.value;
      yield step.value;
    }
  };
}

/**
 * Ends every call still under way UNAVAILABLE when cutCalls() is called: grpc-js's forceShutdown() only destroys
 * the connections channelz tracks, so with channelz off (createServer below) it left calls running and answering
 * after the drain. The handler itself runs on; its answer is dropped.
 */
export function cutCallsMiddleware() {
  const underWay = new Set<(error: Error) => void>();
  const middleware = async function* <Request, Response>(call: ServerMiddlewareCall<Request, Response>, context: CallContext) {
    let cut: (error: Error) => void = () => undefined;
    const cutOff = new Promise<never>((_, reject) => {
      cut = reject;
    });
    underWay.add(cut);
    const inner = call.next(call.request, context);
    try {
      while (true) {
        const step = await Promise.race([inner.next(), cutOff]);
        if (step.done) return step.value;
        yield step.value;
      }
    } finally {
      underWay.delete(cut);
    }
  };
  const cutCalls = () => {
    for (const cut of underWay) cut(new ServerError(Status.UNAVAILABLE, 'Service shutting down; try again'));
  };
  return { middleware, cutCalls };
}

const HEALTH_PATH_PREFIX = '/grpc.health.v1.Health/';

/**
 * Health service name that is SERVING for as long as the process runs, whatever its engines do: the liveness
 * probe asks for it, so an engine outage makes the service not ready without getting it restarted.
 */
export const LIVENESS_HEALTH_SERVICE = 'liveness';

/** While an engine that gates requests is down, answers every call except health checks UNAVAILABLE at once. */
export function readinessGateMiddleware(readiness: Pick<EngineReadinessMonitor, 'unavailableReason'>) {
  return async function* <Request, Response>(call: ServerMiddlewareCall<Request, Response>, context: CallContext) {
    if (!call.method.path.startsWith(HEALTH_PATH_PREFIX)) {
      const reason = readiness.unavailableReason();
      if (reason) throw new ServerError(Status.UNAVAILABLE, `Service temporarily unavailable: ${reason}`);
    }
    return yield* call.next(call.request, context);
  };
}

export interface GrpcServerHandle {
  server: Server;
  port: number;
  address: string;
  health: HealthState;
  /** Port of the Prometheus listener, when metricsPort was given. */
  metricsPort?: number;
  /** NOT_SERVING, drain for up to timeoutMs (default: shutdownDrainMs), then force. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/** The longest SHUTDOWN_DRAIN_MS any service takes (ten minutes; the all-in-one's gateway and services read one value). */
export const MAX_SHUTDOWN_DRAIN_MS = 600_000;

/** The longest GRPC_MAX_CONNECTION_AGE_MS: grpc-js's timer of the age plus 10% jitter still fits Node's timers (MAX_TIMER_MS). */
export const MAX_CONNECTION_AGE_MS = Math.floor(MAX_TIMER_MS / 1.1);

/** SHUTDOWN_DRAIN_MS, METRICS_* and GRPC_MAX_CONNECTION_AGE_*, read by every gRPC service (each through grpcServerSettingsFrom). */
export const grpcServerConfigSchema = z.object({
  SHUTDOWN_DRAIN_MS: z.coerce.number().int().min(0).max(MAX_SHUTDOWN_DRAIN_MS).default(5000),
  METRICS_PORT: z.coerce.number().int().min(1).max(65_535).optional(),
  METRICS_HOST: z.string().default('127.0.0.1'),
  // At most MAX_CONNECTION_AGE_MS: grpc-js sets a timer of the age plus up to 10% jitter, which a longer age overflows,
  // and Node then ends every connection 1 ms after it opens (callers reconnecting without end).
  GRPC_MAX_CONNECTION_AGE_MS: z.coerce
    .number()
    .int()
    .refine((ms) => ms === 0 || ms >= 1000, 'expected 0 (never) or at least 1000')
    .refine((ms) => ms <= MAX_CONNECTION_AGE_MS, `must be at most ${MAX_CONNECTION_AGE_MS} (ms, about 22 days: with grpc-js's 10% jitter a longer age overflows Node's timers, which then end every connection at once); 0 never ends them`)
    .default(300_000),
  // Longer than any caller's deadline (the longest: the gateway's ReadFile calls, FILE_READ_CALL_MS 50 s; files' card creation 30 s), so no call is cut at the age.
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_TIMER_MS, `must be at most ${MAX_TIMER_MS} (ms, about 24.8 days: Node's timers close a longer grace after 1 ms)`)
    .default(60_000),
});

/** The server's shutdown drain, metrics listener and connection age from the environment; an invalid value stops the start with the variable named. */
export function grpcServerSettingsFrom(
  env: Record<string, string | undefined>,
): Pick<StartGrpcServerOptions, 'shutdownDrainMs' | 'metricsPort' | 'metricsHost' | 'maxConnectionAgeMs' | 'maxConnectionAgeGraceMs'> {
  const settings = loadConfig(grpcServerConfigSchema, {
    SHUTDOWN_DRAIN_MS: env.SHUTDOWN_DRAIN_MS?.trim() || undefined,
    METRICS_PORT: env.METRICS_PORT?.trim() || undefined,
    METRICS_HOST: env.METRICS_HOST?.trim() || undefined,
    GRPC_MAX_CONNECTION_AGE_MS: env.GRPC_MAX_CONNECTION_AGE_MS?.trim() || undefined,
    GRPC_MAX_CONNECTION_AGE_GRACE_MS: env.GRPC_MAX_CONNECTION_AGE_GRACE_MS?.trim() || undefined,
  });
  return {
    shutdownDrainMs: settings.SHUTDOWN_DRAIN_MS,
    metricsPort: settings.METRICS_PORT,
    metricsHost: settings.METRICS_HOST,
    maxConnectionAgeMs: settings.GRPC_MAX_CONNECTION_AGE_MS,
    maxConnectionAgeGraceMs: settings.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
  };
}

export interface StartGrpcServerOptions {
  name: string;
  host?: string;
  port?: number;
  logger: Logger;
  register(server: Server): void;
  /**
   * The service's engine monitor: health follows it (NOT_SERVING for "" and `name` while an engine that gates
   * requests is down, and for an engine's own health name while that engine is down, gating or not) and calls
   * are refused UNAVAILABLE while an engine that gates requests is down. Started here, stopped by shutdown().
   */
  readiness?: EngineReadinessMonitor;
  /** How long shutdown() lets calls under way finish before cutting them (default 5000). */
  shutdownDrainMs?: number;
  /** Serve Prometheus metrics (process + gRPC calls) at GET /metrics on this port (0: any free one); none when unset. */
  metricsPort?: number;
  metricsHost?: string;
  /**
   * After about this long (±10%) a connection is asked to go away (GOAWAY): its client connects again and resolves
   * the name again, so callers of a headless Service find pods added since. 0 or unset: never.
   */
  maxConnectionAgeMs?: number;
  /** How long calls under way on such a connection may still take before it is closed; unset: as long as they take. */
  maxConnectionAgeGraceMs?: number;
}

/**
 * createServer().use(request context).use(errors) + health + the service's own registrations, then listen. The
 * unary methods are also offered to clients in this process (in-process-calls.ts), behind the same middleware.
 */
export async function startGrpcServer(options: StartGrpcServerOptions): Promise<GrpcServerHandle> {
  const { readiness } = options;
  // Only services with an engine on the request path pay for one more middleware per call, and only the all-in-one's
  // (requireInternalCallToken) for the secret's check.
  const cutting = cutCallsMiddleware();
  const chain: ServerMiddleware[] = [metricsMiddleware(), ...(internalCallTokenRequired() ? [internalCallTokenMiddleware()] : []), cutting.middleware, requestContextMiddleware(), errorMiddleware(options.logger), ...(readiness?.gatesRequests ? [readinessGateMiddleware(readiness)] : [])];
  const middleware = chain.reduce((outer, inner) => composeServerMiddleware(outer, inner));
  const served = createServer({
    'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': GRPC_MAX_MESSAGE_BYTES,
    'grpc.enable_channelz': 0,
    ...(options.maxConnectionAgeMs ? { 'grpc.max_connection_age_ms': options.maxConnectionAgeMs } : {}),
    ...(options.maxConnectionAgeMs && options.maxConnectionAgeGraceMs !== undefined ? { 'grpc.max_connection_age_grace_ms': options.maxConnectionAgeGraceMs } : {}),
  }).use(middleware);
  const added: [TsProtoDefinition, object][] = [];
  const recording: Server = Object.assign(Object.create(served) as Server, {
    add(definition: Parameters<Server['add']>[0], implementation: Parameters<Server['add']>[1]) {
      served.add(definition, implementation);
      if ('methods' in definition) added.push([definition as unknown as TsProtoDefinition, implementation]);
    },
  });
  const health = HealthState();
  recording.add(HealthDefinition, HealthServiceImpl(health));
  options.register(recording);
  const host = options.host ?? '127.0.0.1';
  const port = await served.listen(`${host}:${options.port ?? 0}`);
  const withdrawals = added.map(([definition, implementation]) => serveInProcess(localAddresses(host, port), definition, implementation, middleware));
  const setHealth = ({ ready, engines }: ReadinessStatus) => {
    health.setStatus(ready ? 'healthy' : 'unhealthy');
    health.setStatus(ready ? 'healthy' : 'unhealthy', options.name);
    for (const [name, up] of engines) health.setStatus(up ? 'healthy' : 'unhealthy', name);
  };
  health.setStatus('healthy', LIVENESS_HEALTH_SERVICE);
  setHealth(readiness?.status ?? { ready: true, engines: new Map() });
  readiness?.onChange(setHealth);
  readiness?.start();
  options.logger.info({ port }, 'gRPC server listening');
  let metrics: MetricsServerHandle | undefined;
  if (options.metricsPort !== undefined) {
    try {
      metrics = await startMetricsServer({ host: options.metricsHost ?? '127.0.0.1', port: options.metricsPort, logger: options.logger });
    } catch (err) {
      readiness?.stop();
      served.forceShutdown();
      for (const withdraw of withdrawals) withdraw();
      throw err;
    }
  }
  return {
    server: served,
    port,
    address: `${host}:${port}`,
    health,
    metricsPort: metrics?.port,
    async shutdown(timeoutMs = options.shutdownDrainMs ?? 5000) {
      for (const withdraw of withdrawals) withdraw();
      readiness?.stop();
      health.setStatus('unhealthy');
      health.setStatus('unhealthy', options.name);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        served.shutdown(),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            cutting.cutCalls();
            served.forceShutdown();
            resolve();
          }, timeoutMs);
        }),
      ]);
      if (timer) clearTimeout(timer);
      await metrics?.close();
    },
  };
}
