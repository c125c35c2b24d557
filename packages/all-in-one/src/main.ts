import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { booleanSetting, createLogger, enableInProcessCalls, keepDataDirPrivate, requireInternalCallToken, loopbackTopologyEnv, startFailureLog, stopOnSignals, watchServiceDataDirSpace, type RunningService } from '@cards/platform';
import { startGateway } from '@cards/gateway';
import { startIdentity } from '@cards/identity';
import { startCards } from '@cards/cards';
import { startSearch } from '@cards/search';
import { startFiles } from '@cards/files';
import { startNotifications } from '@cards/notifications';

export interface AllInOne {
  gatewayPort: number;
  stop(): Promise<void>;
}

/**
 * Every service in one process, each on its own loopback gRPC port, the gateway on PORT,
 * all data under DATA_DIR: the embedded default with zero setup. Unary calls between the services skip the
 * loopback network (docs/decisions.md, "In-process calls in the all-in-one") unless GRPC_IN_PROCESS=false.
 */
export async function startAllInOne(baseEnv: Record<string, string | undefined> = process.env): Promise<AllInOne> {
  // Internal ports are picked before binding (peers need each other's addresses up front), so another
  // process can take one in between: try again with new ports when that happens.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(baseEnv);
    } catch (err) {
      const inUse = err instanceof Error && /EADDRINUSE|No address added out of total/.test(`${err.message} ${String((err as { code?: string }).code)}`);
      if (!inUse || attempt >= 3) throw err;
    }
  }
}

/**
 * Where the e-mail links (register, reset) point: PUBLIC_URL when set, else this gateway on localhost at PORT. The
 * services' own default names port 8090, which left the links of an all-in-one started with only PORT=4141 dead.
 * PORT=0 (a port chosen at bind) is not known yet: the services' default then stands.
 */
export function publicUrlOf(env: Record<string, string | undefined>): string | undefined {
  if (env.PUBLIC_URL) return env.PUBLIC_URL;
  const port = Number(env.PORT || 8090);
  return Number.isInteger(port) && port > 0 && port < 65536 ? `http://localhost:${port}` : undefined;
}

/**
 * GRPC_IN_PROCESS as every boolean is read (envBoolean): true unless false, 0 or no in any case; another value stops the
 * start naming it. Only the exact "false" turned the in-process calls off before: FALSE, 0 or no left them on unsaid.
 */
export function inProcessCallsOf(env: Record<string, string | undefined>): boolean {
  return booleanSetting(env, 'GRPC_IN_PROCESS', true);
}

async function startOnce(baseEnv: Record<string, string | undefined>): Promise<AllInOne> {
  const env: Record<string, string | undefined> = {
    ...baseEnv,
    DATA_DIR: resolve(baseEnv.DATA_DIR ?? './data'),
    ...(await loopbackTopologyEnv()),
    // One process: the gateway's /metrics already shows its metrics and every service's gRPC calls, and five
    // services cannot share one metrics port. The gateway alone is given METRICS_PORT (below).
    METRICS_PORT: undefined,
    // The files service's download endpoint listens on loopback, where any local process could otherwise fetch any
    // private file by naming its owner (x-caller-id): one process holds both ends, so a fresh secret per start.
    FILES_INTERNAL_TOKEN: baseEnv.FILES_INTERNAL_TOKEN || randomBytes(32).toString('base64url'),
    PUBLIC_URL: publicUrlOf(baseEnv),
  };
  enableInProcessCalls(inProcessCallsOf(env));
  // The services' loopback gRPC ports take the caller's id from the request: only this process may call them.
  requireInternalCallToken(randomBytes(32).toString('base64url'));
  // DATA_DIR 0700 and the process's umask 077 before any store opens: mail, sessions, cards and files are this user's only.
  keepDataDirPrivate({ env, dataDir: env.DATA_DIR!, engineVariables: [], logger: createLogger('all-in-one') });
  // The free space of DATA_DIR's file system: a gauge on /metrics and a warning below DATA_DIR_FREE_WARNING_MB, from
  // before the first service opens its store; the services' own calls share this one watch (one per process).
  const space = watchServiceDataDirSpace({ role: 'all-in-one', env, dataDir: env.DATA_DIR!, engineVariables: [], logger: createLogger('all-in-one') });
  const started: RunningService[] = [];
  try {
    for (const start of [startIdentity, startCards, startSearch, startFiles, startNotifications]) started.push(await start(env));
    // METRICS_PORT moves the process's /metrics off PORT, as for the gateway alone: on a public PORT it is readable by
    // anyone, and its counters tell more than the API does (reset mails go only to addresses with an account).
    const gateway = await startGateway({ ...env, METRICS_PORT: baseEnv.METRICS_PORT });
    started.push(gateway);
    return {
      gatewayPort: gateway.port,
      async stop() {
        space.stop();
        for (const service of started.reverse()) await service.stop();
      },
    };
  } catch (err) {
    space.stop();
    for (const service of started.reverse()) await service.stop().catch(() => undefined);
    throw err;
  }
}

if (require.main === module) {
  const logger = createLogger('all-in-one');
  startAllInOne()
    .then((running) => {
      logger.info({ url: `http://localhost:${running.gatewayPort}` }, 'Card Library Service is up');
      stopOnSignals(() => running.stop(), logger);
    })
    .catch((err: unknown) => {
      // A full disk names itself and the data dir, instead of the raw SqliteError of whichever store wrote first.
      const { fields, msg } = startFailureLog(err);
      logger.fatal(fields, msg);
      process.exit(1);
    });
}
