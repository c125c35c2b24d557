import { createEventBus, createGrpcClient, createLogger, EngineReadinessMonitor, eventBusEngineChecks, grpcServerSettingsFrom, keepDataDirPrivate, loadConfig, lockServiceDataDir, refuseEmbeddedStores, OutboxRelay, readinessSettingsFrom, startFailureLog, startGrpcServer, retryUntilDone, stopOnSignals, watchServiceDataDirSpace, type RunningService } from '@cards/platform';
import { cards, files, identity, search } from '@cards/proto';
import { GrpcFileDirectory } from './adapters/grpc/grpc-file-directory';
import { GrpcNearDuplicateFinder } from './adapters/grpc/grpc-near-duplicate-finder';
import { GrpcUserDirectory } from './adapters/grpc/grpc-user-directory';
import { WorkerCardHtmlCleaner } from './adapters/worker-threads/worker-card-html-cleaner';
import { CardService } from './application/card-service';
import { CollectionService } from './application/collection-service';
import { subscribeToSearchEvents } from './application/event-consumers';
import { backfillFilePrivacy } from './application/file-privacy-backfill';
import { answerSearchIndexRebuildRequests } from './application/search-index-rebuild-requests';
import { openCardsStore } from './cards-store';
import { cardsConfigSchema } from './config';
import { cardsHandlers } from './grpc/cards-handlers';

/** The engines that, every one set, keep all of this service's data off DATA_DIR (the data dir's set-up is skipped then). */
const ENGINE_VARIABLES = ['MONGO_URL', 'KAFKA_BROKERS'] as const;

/** Composition root of the cards service. */
export async function startCards(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  refuseEmbeddedStores(env, ENGINE_VARIABLES);
  const config = loadConfig(cardsConfigSchema, env);
  const serverSettings = grpcServerSettingsFrom(env);
  const logger = createLogger('cards');
  // DATA_DIR 0700 and the umask 077 before any store opens (docs/security.md, "The data dir is private").
  keepDataDirPrivate({ env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  // One process on the data dir's embedded store (docs/decisions.md): a second one refuses to start, naming the holder.
  const lock = !config.MONGO_URL ? lockServiceDataDir(config.DATA_DIR, 'cards') : undefined;
  const store = await openCardsStore(config, logger);
  const bus = createEventBus({ DATA_DIR: config.DATA_DIR, KAFKA_BROKERS: config.KAFKA_BROKERS }, logger);
  // An unreachable Kafka fails the start with a message naming KAFKA_BROKERS instead of kafkajs' retries.
  await bus.ready();
  const relay = new OutboxRelay(store.outbox, bus, logger, { name: 'cards' });
  const peers = {
    identity: createGrpcClient(identity.IdentityServiceDefinition, config.IDENTITY_SERVICE_ADDR, { deadlineMs: config.GRPC_DEADLINE_MS }),
    search: createGrpcClient(search.SearchServiceDefinition, config.SEARCH_SERVICE_ADDR, { deadlineMs: config.GRPC_DEADLINE_MS }),
    files: createGrpcClient(files.FileServiceDefinition, config.FILES_SERVICE_ADDR, { deadlineMs: config.GRPC_DEADLINE_MS }),
  };
  const cardRepository = store.cards;
  const fileDirectory = new GrpcFileDirectory(peers.files.client);
  const collectionRepository = store.collections;
  const htmlCleaner = new WorkerCardHtmlCleaner(
    { minWorkerChars: config.CARD_HTML_WORKER_MIN_CHARS, workers: config.CARD_HTML_WORKERS, maxQueued: config.CARD_HTML_QUEUE, maxWaitMs: config.CARD_HTML_QUEUE_WAIT_MS, perUser: config.CARD_HTML_PER_USER },
    logger,
  );
  const cardService = new CardService({
    cards: cardRepository,
    votes: store.votes,
    collections: collectionRepository,
    contentLock: store.contentLock,
    nearDuplicates: new GrpcNearDuplicateFinder(peers.search.client, logger, config.NEAR_DUPLICATE_DEADLINE_MS),
    files: fileDirectory,
    users: new GrpcUserDirectory(peers.identity.client, logger),
    eventsWritten: () => relay.kick(),
    logger,
    htmlCleaner,
  });
  const collectionService = new CollectionService({ collections: collectionRepository, cards: cardRepository, cardService, files: fileDirectory, eventsWritten: () => relay.kick() });
  relay.start();
  const subscription = await subscribeToSearchEvents(bus, cardService);
  // Search asks for every card again when it finds its index lost at start; the relay (started above) publishes them.
  // A rebuild cut short by a stop (this replica's, another's, or the operator's command's) is resumed where it stopped.
  const rebuilds = await answerSearchIndexRebuildRequests(bus, { cards: cardRepository, collections: collectionRepository, outbox: store.eventOutbox, progress: store.searchIndexRebuild, logger });
  const grpc = await startGrpcServer({
    name: 'cards.v1.CardService',
    host: config.CARDS_GRPC_HOST,
    port: config.CARDS_GRPC_PORT,
    logger,
    ...serverSettings,
    readiness: new EngineReadinessMonitor({ checks: [...store.engines, ...eventBusEngineChecks(bus)], logger, ...readinessSettingsFrom(env) }),
    register: (server) => server.add(cards.CardServiceDefinition, cardsHandlers(cardService, collectionService)),
  });
  const recheck = cardService
    .recheckCutOffCollisions()
    .then((checked) => checked > 0 && logger.info({ checked }, 'checked the roots of collisions whose create was cut off'))
    .catch((err: unknown) => logger.error({ err }, 'checking the roots of collisions whose create was cut off failed; the next start tries again'));
  // The join dates of authors ranked while this service was down (or never asked), before top users needs them.
  void cardService.fillJoinDates();
  const backfill = retryUntilDone(
    async () => {
      const files = await backfillFilePrivacy({ cards: cardRepository, collections: collectionRepository, files: fileDirectory, tasks: store.oneTimeTasks, now: () => new Date() });
      if (files > 0) logger.info({ files }, 'recorded the privacy of every file carried by cards and collections, as the files service has it');
    },
    logger,
    'recording the privacy of the files carried by cards and collections',
  );
  // The free space of DATA_DIR's file system (a gauge on /metrics, a warning below DATA_DIR_FREE_WARNING_MB) while this
  // service keeps something there; once per process however many services it runs (docs/deploy.md, a full disk).
  const space = watchServiceDataDirSpace({ role: 'cards', env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  return {
    name: 'cards',
    address: grpc.address,
    async stop() {
      space.stop();
      await grpc.shutdown();
      await cardService.stopFillingJoinDates();
      await htmlCleaner.close();
      for (const peer of Object.values(peers)) peer.channel.close();
      await store.closeIfUnreachable();
      await recheck;
      await backfill.stop();
      // Together: closing the bus abandons a publish stuck connecting to brokers that are down, the relay's or a dead
      // letter the subscription is sending, which relay.stop() and subscription.close() would wait out; the relay's
      // entries stay in the outbox and the event is not committed (delivered again after the next start).
      await Promise.all([subscription.close(), rebuilds.close(), relay.stop(), bus.close()]);
      await store.close();
      lock?.release();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('cards');
  startCards()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      // A full disk names itself and the data dir, instead of the raw SqliteError of whichever store wrote first.
      const { fields, msg } = startFailureLog(err, { otherwise: 'cards failed to start' });
      logger.fatal(fields, msg);
      process.exit(1);
    });
}
