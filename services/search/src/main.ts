import { createLogger, loadConfig, startGrpcServer, stopOnSignals, type RunningService } from '@cards/platform';
import { searchConfigSchema } from './config';

/** Composition root of the search service. */
export async function startSearch(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  const config = loadConfig(searchConfigSchema, env);
  const logger = createLogger('search');
  const grpc = await startGrpcServer({
    name: 'search',
    host: config.SEARCH_GRPC_HOST,
    port: config.SEARCH_GRPC_PORT,
    logger,
    register: () => {},
  });
  return {
    name: 'search',
    address: grpc.address,
    async stop() {
      await grpc.shutdown();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('search');
  startSearch()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      logger.fatal({ err }, 'search failed to start');
      process.exit(1);
    });
}
