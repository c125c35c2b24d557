import { join } from 'node:path';
import { createEventBus, createLogger, loadConfig, startGrpcServer, stopOnSignals, type RunningService } from '@cards/platform';
import { notifications } from '@cards/proto';
import { SqliteNotificationRepository } from './adapters/sqlite/sqlite-notification-repository';
import { NotificationService } from './application/notification-service';
import { notificationsConfigSchema } from './config';
import { subscribeNotificationConsumers } from './events/notification-consumer';
import { notificationHandlers } from './grpc/notification-handlers';

/** Composition root of the notifications service. */
export async function startNotifications(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  const config = loadConfig(notificationsConfigSchema, env);
  const logger = createLogger('notifications');
  if (config.MONGO_URL) logger.warn('MONGO_URL is set but the MongoDB adapter is not built yet; using SQLite');
  else logger.info('MONGO_URL not set: using the embedded SQLite store');
  const repository = new SqliteNotificationRepository(join(config.DATA_DIR, 'notifications', 'notifications.db'));
  const service = new NotificationService(repository, logger);
  const bus = createEventBus(config, logger);
  const consumer = await subscribeNotificationConsumers(bus, service, logger);
  const grpc = await startGrpcServer({
    name: 'notifications.v1.NotificationService',
    host: config.NOTIFICATIONS_GRPC_HOST,
    port: config.NOTIFICATIONS_GRPC_PORT,
    logger,
    register: (server) => server.add(notifications.NotificationServiceDefinition, notificationHandlers(service)),
  });
  return {
    name: 'notifications',
    address: grpc.address,
    async stop() {
      await grpc.shutdown();
      await consumer.close();
      await bus.close();
      await repository.close();
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
