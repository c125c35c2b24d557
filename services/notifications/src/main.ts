import { join } from 'node:path';
import { connectMongo, createEventBus, createLogger, EngineReadinessMonitor, eventBusEngineChecks, grpcServerSettingsFrom, keepDataDirPrivate, loadConfig, lockServiceDataDir, refuseEmbeddedStores, mongoEngineCheck, readinessSettingsFrom, startFailureLog, startGrpcServer, stopOnSignals, watchServiceDataDirSpace, type EngineCheck, type Logger, type RunningService } from '@cards/platform';
import { notifications } from '@cards/proto';
import { MongoNotificationRepository } from './adapters/mongo/mongo-notification-repository';
import { SqliteNotificationRepository } from './adapters/sqlite/sqlite-notification-repository';
import { NotificationService } from './application/notification-service';
import { notificationsConfigSchema, type NotificationsConfig } from './config';
import type { NotificationRepository } from './domain/ports';
import { subscribeNotificationConsumers } from './events/notification-consumer';
import { notificationHandlers } from './grpc/notification-handlers';

/** The engines that, every one set, keep all of this service's data off DATA_DIR (the data dir's set-up is skipped then). */
const ENGINE_VARIABLES = ['MONGO_URL', 'KAFKA_BROKERS'] as const;

/** MongoDB when MONGO_URL is set (its own database "notifications"), else SQLite under DATA_DIR; the choice is logged. */
async function openRepository(config: NotificationsConfig, logger: Logger, engines: EngineCheck[]): Promise<NotificationRepository> {
  if (config.MONGO_URL) {
    const connection = await connectMongo({ url: config.MONGO_URL, database: 'notifications', logger });
    engines.push(mongoEngineCheck(connection));
    return MongoNotificationRepository.open(connection);
  }
  logger.info('MONGO_URL not set: using the embedded SQLite store');
  return new SqliteNotificationRepository(join(config.DATA_DIR, 'notifications', 'notifications.db'));
}

/** Composition root of the notifications service. */
export async function startNotifications(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  refuseEmbeddedStores(env, ENGINE_VARIABLES);
  const config = loadConfig(notificationsConfigSchema, env);
  const serverSettings = grpcServerSettingsFrom(env);
  const logger = createLogger('notifications');
  // DATA_DIR 0700 and the umask 077 before any store opens (docs/security.md, "The data dir is private").
  keepDataDirPrivate({ env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  // One process on the data dir's embedded store (docs/decisions.md): a second one refuses to start, naming the holder.
  const lock = !config.MONGO_URL ? lockServiceDataDir(config.DATA_DIR, 'notifications') : undefined;
  const engines: EngineCheck[] = [];
  const repository = await openRepository(config, logger, engines);
  const service = new NotificationService(repository, logger);
  const bus = createEventBus(config, logger);
  await bus.ready();
  const consumer = await subscribeNotificationConsumers(bus, service, logger);
  // Retention: at start, then hourly, off the request path; a failed pass is logged and tried at the next.
  const sweep = () => void service.removeExpired(config.NOTIFICATIONS_RETENTION_DAYS).catch((err: unknown) => logger.warn({ err }, 'notification retention pass failed; tried again in an hour'));
  sweep();
  const sweeper = setInterval(sweep, 60 * 60 * 1000);
  sweeper.unref();
  const grpc = await startGrpcServer({
    name: 'notifications.v1.NotificationService',
    host: config.NOTIFICATIONS_GRPC_HOST,
    port: config.NOTIFICATIONS_GRPC_PORT,
    logger,
    ...serverSettings,
    readiness: new EngineReadinessMonitor({ checks: [...engines, ...eventBusEngineChecks(bus)], logger, ...readinessSettingsFrom(env) }),
    register: (server) => server.add(notifications.NotificationServiceDefinition, notificationHandlers(service)),
  });
  // The free space of DATA_DIR's file system (a gauge on /metrics, a warning below DATA_DIR_FREE_WARNING_MB) while this
  // service keeps something there; once per process however many services it runs (docs/deploy.md, a full disk).
  const space = watchServiceDataDirSpace({ role: 'notifications', env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  return {
    name: 'notifications',
    address: grpc.address,
    async stop() {
      space.stop();
      clearInterval(sweeper);
      await grpc.shutdown();
      // Together: closing the bus abandons a dead letter the consumer is sending to brokers that are down, which
      // consumer.close() would wait out; the event is not committed (dead-lettered again after the next start).
      await Promise.all([consumer.close(), bus.close()]);
      await repository.close();
      lock?.release();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('notifications');
  startNotifications()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      // A full disk names itself and the data dir, instead of the raw SqliteError of whichever store wrote first.
      const { fields, msg } = startFailureLog(err, { otherwise: 'notifications failed to start' });
      logger.fatal(fields, msg);
      process.exit(1);
    });
}
