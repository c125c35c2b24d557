import { createLogger, loadConfig, startGrpcServer, stopOnSignals, type RunningService } from '@cards/platform';
import { filesConfigSchema } from './config';

/** Composition root of the files service. */
export async function startFiles(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  const config = loadConfig(filesConfigSchema, env);
  const logger = createLogger('files');
  const grpc = await startGrpcServer({
    name: 'files',
    host: config.FILES_GRPC_HOST,
    port: config.FILES_GRPC_PORT,
    logger,
    register: () => {},
  });
  return {
    name: 'files',
    address: grpc.address,
    async stop() {
      await grpc.shutdown();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('files');
  startFiles()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      logger.fatal({ err }, 'files failed to start');
      process.exit(1);
    });
}
