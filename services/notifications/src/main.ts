import { createLogger, loadConfig, startGrpcServer, stopOnSignals, type RunningService } from '@cards/platform';
import { notificationsConfigSchema } from './config';

/** Composition root of the notifications service. */
export async function startNotifications(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  const config = loadConfig(notificationsConfigSchema, env);
  const logger = createLogger('notifications');
  const grpc = await startGrpcServer({
    name: 'notifications',
    host: config.NOTIFICATIONS_GRPC_HOST,
    port: config.NOTIFICATIONS_GRPC_PORT,
    logger,
    register: () => {},
  });
  return {
    name: 'notifications',
    address: grpc.address,
    async stop() {
      await grpc.shutdown();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('notifications');
  startNotifications()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      logger.fatal({ err }, 'notifications failed to start');
      process.exit(1);
    });
}
