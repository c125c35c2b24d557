import { join } from 'node:path';
import { connectMongo, createEventBus, createLogger, EngineReadinessMonitor, eventBusEngineChecks, grpcServerSettingsFrom, keptKeyExpiry, keepDataDirPrivate, loadConfig, lockServiceDataDir, redactUrl, refuseEmbeddedStores, mongoEngineCheck, MongoOutboxStore, OutboxRelay, readinessSettingsFrom, SqliteOutboxStore, startFailureLog, startGrpcServer, stopOnSignals, watchServiceDataDirSpace, type EngineCheck, type Logger, type OutboxStore, type RunningService } from '@cards/platform';
import { files } from '@cards/proto';
import { DiskObjectStore } from './adapters/disk/disk-object-store';
import { BoundedDocumentReader } from './adapters/documents/bounded-document-reader';
import { LibraryDocumentReader } from './adapters/documents/library-document-reader';
import { GrpcCardsClient } from './adapters/grpc/grpc-cards-client';
import { MinioObjectStore } from './adapters/minio/minio-object-store';
import { MongoFileRepository } from './adapters/mongo/mongo-file-repository';
import { SqliteFileRepository } from './adapters/sqlite/sqlite-file-repository';
import { FilesService } from './application/files-service';
import { subscribeToFileEvents } from './application/file-event-subscriptions';
import { IngestionScheduler } from './application/ingestion-scheduler';
import { IngestionWorker } from './application/ingestion-worker';
import { acceptedInternalTokens, filesConfigSchema, type FilesConfig } from './config';
import type { FileRepository, ObjectStore } from './domain/ports';
import { fileHandlers } from './grpc/file-handlers';
import { startInternalDownloadServer } from './http/internal-download-server';

/** The engines that, every one set, keep all of this service's data off DATA_DIR (the data dir's set-up is skipped then). */
const ENGINE_VARIABLES = ['MONGO_URL', 'S3_ENDPOINT', 'KAFKA_BROKERS'] as const;

export { FILE_CHANGES_GROUP, INGESTION_GROUP } from './application/file-event-subscriptions';

function objectStoreFrom(config: FilesConfig, logger: Logger): ObjectStore {
  if (config.S3_ENDPOINT) {
    logger.info({ endpoint: redactUrl(config.S3_ENDPOINT), bucket: config.S3_BUCKET }, 'S3_ENDPOINT set: storing file bytes with the MinIO/S3 adapter');
    return new MinioObjectStore({
      endpoint: config.S3_ENDPOINT,
      accessKey: config.S3_ACCESS_KEY ?? '',
      secretKey: config.S3_SECRET_KEY ?? '',
      bucket: config.S3_BUCKET,
      region: config.S3_REGION,
    });
  }
  const directory = join(config.DATA_DIR, 'files', 'objects');
  logger.info({ directory }, 'S3_ENDPOINT not set: storing file bytes in a local directory');
  return new DiskObjectStore(directory);
}

/** MongoDB when MONGO_URL is set (its own database "files"), else SQLite under DATA_DIR; the outbox lives beside the records. */
async function repositoryFrom(
  config: FilesConfig,
  logger: Logger,
  engines: EngineCheck[],
): Promise<{ repository: FileRepository; outbox: OutboxStore; closeIfUnreachable: () => Promise<boolean>; claimHolder?: string }> {
  const keyExpiry = keptKeyExpiry(config.IDEMPOTENCY_KEY_TTL_HOURS);
  if (config.MONGO_URL) {
    const connection = await connectMongo({ url: config.MONGO_URL, database: 'files', logger });
    engines.push(mongoEngineCheck(connection));
    return { repository: await MongoFileRepository.open(connection, keyExpiry), outbox: new MongoOutboxStore(connection.db), closeIfUnreachable: () => connection.closeIfUnreachable() };
  }
  logger.info('MONGO_URL not set: using the embedded SQLite store');
  const repository = new SqliteFileRepository(join(config.DATA_DIR, 'files', 'files.db'), keyExpiry);
  // One process opens the embedded store: its ingestion claims keep one name, so a restart takes back at once the files
  // it was ingesting when it stopped (with MongoDB each process claims under a new id; a dead one's claims run out).
  return { repository, outbox: new SqliteOutboxStore(repository.db), closeIfUnreachable: async () => false, claimHolder: 'embedded' };
}

/** Composition root of the files service. */
export async function startFiles(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  refuseEmbeddedStores(env, ENGINE_VARIABLES);
  const config = loadConfig(filesConfigSchema, env);
  const serverSettings = grpcServerSettingsFrom(env);
  const logger = createLogger('files');
  // DATA_DIR 0700 and the umask 077 before any store opens (docs/security.md, "The data dir is private").
  keepDataDirPrivate({ env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  // One process on the data dir's embedded store (docs/decisions.md): a second one refuses to start, naming the holder (it would
  // take back this one's ingestion claims, held under the one name `embedded`).
  const lock = !config.MONGO_URL ? lockServiceDataDir(config.DATA_DIR, 'files') : undefined;
  const engines: EngineCheck[] = [];
  const { repository, outbox, closeIfUnreachable, claimHolder } = await repositoryFrom(config, logger, engines);
  const objects = objectStoreFrom(config, logger);
  if (objects instanceof MinioObjectStore) {
    // An unreachable S3 server fails the start with a message naming S3_ENDPOINT. Only uploads and
    // downloads need it, so while it is down the other calls keep working and the service stays ready.
    await objects.ready();
    engines.push({ name: 'S3 (S3_ENDPOINT)', healthName: 'engine:s3', check: () => objects.ready(), gatesRequests: false });
  }
  const reader = new BoundedDocumentReader(new LibraryDocumentReader(), { workers: config.PARSER_WORKERS, maxQueued: config.PARSER_QUEUE, maxWaitMs: config.PARSER_QUEUE_WAIT_MS, perUser: config.PARSER_CHECKS_PER_USER });
  const cards = new GrpcCardsClient(config.CARDS_SERVICE_ADDR);
  const bus = createEventBus({ DATA_DIR: config.DATA_DIR, KAFKA_BROKERS: config.KAFKA_BROKERS }, logger);
  await bus.ready();
  const relay = new OutboxRelay(outbox, bus, logger, { name: 'files' });
  const service = new FilesService({ repository, objects, reader, maxFileBytes: config.MAX_FILE_BYTES, logger, onEventsWritten: () => relay.kick() });
  const worker = new IngestionWorker({ repository, objects, reader, cards, logger, maxAttempts: config.INGESTION_MAX_ATTEMPTS, deletedBytesGraceMs: config.FILE_DELETED_BYTES_GRACE_MS, concurrency: config.INGESTION_CONCURRENCY, unreleasedRetryMs: config.FILES_UNRELEASED_RETRY_HOURS * 3_600_000 });

  const scheduler = new IngestionScheduler({ repository, worker, logger, maxAttempts: config.INGESTION_MAX_ATTEMPTS, holder: claimHolder, claimMs: config.INGESTION_CLAIM_MS });

  relay.start();
  // Bytes of uploads cut short between their bytes and their record (killed in between) go, in the background.
  const sweeping = service
    .sweepUnfinishedUploads()
    .then((removed) => {
      if (removed > 0) logger.warn({ removed }, 'removed the stored bytes of uploads cut short before their record was stored (the process stopped in between)');
    })
    .catch((err: unknown) => logger.warn({ err }, 'sweeping unfinished uploads failed; the next start tries again'));
  await scheduler.start();
  const subscription = await subscribeToFileEvents(bus, worker, scheduler, config.INGESTION_MAX_ATTEMPTS);
  const grpc = await startGrpcServer({
    name: 'files.v1.FileService',
    host: config.FILES_GRPC_HOST,
    port: config.FILES_GRPC_PORT,
    logger,
    ...serverSettings,
    readiness: new EngineReadinessMonitor({ checks: [...engines, ...eventBusEngineChecks(bus)], logger, ...readinessSettingsFrom(env) }),
    register: (server) => server.add(files.FileServiceDefinition, fileHandlers(service)),
  });
  const http = await startInternalDownloadServer({ host: config.FILES_HTTP_HOST, port: config.FILES_HTTP_PORT, acceptedTokens: acceptedInternalTokens(config), service, logger });
  // The free space of DATA_DIR's file system (a gauge on /metrics, a warning below DATA_DIR_FREE_WARNING_MB) while this
  // service keeps something there; once per process however many services it runs (docs/deploy.md, a full disk).
  const space = watchServiceDataDirSpace({ role: 'files', env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  return {
    name: 'files',
    address: grpc.address,
    async stop() {
      space.stop();
      await grpc.shutdown();
      await http.close();
      // MongoDB gone: the relay's drain and the ingestion under way fail at once instead of waiting for a server.
      await closeIfUnreachable();
      // Together: closing the bus abandons a publish stuck connecting to brokers that are down, the relay's or a dead
      // letter the ingestion subscription is sending, which relay.stop() and subscription.close() would wait out; the
      // relay's entries stay in the outbox and the event is not committed (dead-lettered again after the next start).
      // The scheduler takes no more files and waits for the ingestion under way, as the bus's close waited for its handler.
      await Promise.all([scheduler.stop(), subscription.close(), relay.stop(), bus.close()]);
      cards.close();
      await sweeping;
      await objects.close();
      await repository.close();
      lock?.release();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('files');
  startFiles()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      // A full disk names itself and the data dir, instead of the raw SqliteError of whichever store wrote first.
      const { fields, msg } = startFailureLog(err, { otherwise: 'files failed to start' });
      logger.fatal(fields, msg);
      process.exit(1);
    });
}
