import { composeServerMiddleware, createServer, ServerError, Status, type CallContext, type ServerMiddleware, type ServerMiddlewareCall, type Server } from 'nice-grpc';
import { isAbortError } from 'abort-controller-x';
import { HealthDefinition, HealthServiceImpl, HealthState } from 'nice-grpc-server-health';
import type { Logger } from 'pino';
import { DomainError } from './errors';
import { localAddresses, serveInProcess, type TsProtoDefinition } from './in-process-calls';
import { isEngineUnavailableError, type EngineReadinessMonitor, type ReadinessStatus } from './readiness';
import { REQUEST_ID_METADATA_KEY, requestIdFrom, runWithRequestContext } from './request-context';

/** Maps domain errors to gRPC statuses; anything unexpected becomes INTERNAL with a generic message and a logged stack. */
export function errorMiddleware(logger: Logger) {
  return async function* <Request, Response>(call: ServerMiddlewareCall<Request, Response>, context: CallContext) {
    try {
      return yield* call.next(call.request, context);
    } catch (error) {
      if (error instanceof ServerError || isAbortError(error)) throw error;
      if (error instanceof DomainError) throw new ServerError(error.status, error.message);
      if (isEngineUnavailableError(error)) {
        logger.warn({ err: error, method: call.method.path }, 'an engine is unreachable: answering UNAVAILABLE');
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
    // Generators cannot be wrapped in AsyncLocalStorage.run directly; entering the store per step keeps it for awaits inside.
    const inner = call.next(call.request, context);
    while (true) {
      const step = await runWithRequestContext({ requestId }, () => inner.next());
      if (step.done) return step.value;
      yield step.value;
    }
  };
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
  /** NOT_SERVING, drain for up to timeoutMs, then force. */
  shutdown(timeoutMs?: number): Promise<void>;
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
}

/**
 * createServer().use(request context).use(errors) + health + the service's own registrations, then listen. The
 * unary methods are also offered to clients in this process (in-process-calls.ts), behind the same middleware.
 */
export async function startGrpcServer(options: StartGrpcServerOptions): Promise<GrpcServerHandle> {
  const { readiness } = options;
  // Only services with an engine on the request path pay for one more middleware per call.
  const chain: ServerMiddleware[] = [requestContextMiddleware(), errorMiddleware(options.logger), ...(readiness?.gatesRequests ? [readinessGateMiddleware(readiness)] : [])];
  const middleware = chain.reduce((outer, inner) => composeServerMiddleware(outer, inner));
  const served = createServer({
    'grpc.max_receive_message_length': 8 * 1024 * 1024,
    'grpc.max_send_message_length': 8 * 1024 * 1024,
    'grpc.enable_channelz': 0,
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
  return {
    server: served,
    port,
    address: `${host}:${port}`,
    health,
    async shutdown(timeoutMs = 5000) {
      for (const withdraw of withdrawals) withdraw();
      readiness?.stop();
      health.setStatus('unhealthy');
      health.setStatus('unhealthy', options.name);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        served.shutdown(),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            served.forceShutdown();
            resolve();
          }, timeoutMs);
        }),
      ]);
      if (timer) clearTimeout(timer);
    },
  };
}
