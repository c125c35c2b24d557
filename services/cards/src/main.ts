import { join } from 'node:path';
import { connectMongo, createEventBus, createGrpcClient, createLogger, EngineReadinessMonitor, eventBusEngineChecks, grpcServerSettingsFrom, loadConfig, refuseEmbeddedStores, mongoEngineCheck, MongoOutboxStore, OutboxRelay, readinessSettingsFrom, SqliteOutboxStore, startGrpcServer, stopOnSignals, type EngineCheck, type Logger, type OutboxStore, type RunningService } from '@cards/platform';
import { cards, files, identity, search } from '@cards/proto';
import { GrpcFileDirectory } from './adapters/grpc/grpc-file-directory';
import { GrpcNearDuplicateFinder } from './adapters/grpc/grpc-near-duplicate-finder';
import { GrpcUserDirectory } from './adapters/grpc/grpc-user-directory';
import { InProcessContentLock } from './adapters/in-process/in-process-content-lock';
import { openMongoCardsStore } from './adapters/mongo';
import { openCardsDatabase } from './adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from './adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from './adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from './adapters/sqlite/sqlite-vote-repository';
import { CardService } from './application/card-service';
import { CollectionService } from './application/collection-service';
import { subscribeToSearchEvents } from './application/event-consumers';
import { cardsConfigSchema, type CardsConfig } from './config';
import type { CardRepository, CollectionRepository, ContentLock, VoteRepository } from './domain/ports';
import { cardsHandlers } from './grpc/cards-handlers';

interface CardsStore {
  cards: CardRepository;
  votes: VoteRepository;
  collections: CollectionRepository;
  /** Serialises cards of one text: across processes on MongoDB; in process on SQLite, whose file one process owns. */
  contentLock: ContentLock;
  outbox: OutboxStore;
  /** The engine behind the store, probed for readiness (none for SQLite). */
  engines: EngineCheck[];
  /** For shutdown: closes at once while MongoDB does not answer, so the relay's drain under way fails instead of waiting for it. */
  closeIfUnreachable(): Promise<boolean>;
  close(): Promise<void>;
}

/** MongoDB when MONGO_URL is set (its own database "cards"), else SQLite under DATA_DIR; the outbox lives beside the data. */
async function openStore(config: CardsConfig, logger: Logger): Promise<CardsStore> {
  if (config.MONGO_URL) {
    const connection = await connectMongo({ url: config.MONGO_URL, database: 'cards', logger });
    const store = await openMongoCardsStore(connection).catch(async (err: unknown) => {
      await connection.close().catch(() => undefined);
      throw err;
    });
    return { ...store, outbox: new MongoOutboxStore(connection.db), engines: [mongoEngineCheck(connection)], closeIfUnreachable: () => connection.closeIfUnreachable(), close: () => connection.close() };
  }
  logger.info('MONGO_URL not set: using the embedded SQLite store');
  const db = openCardsDatabase(join(config.DATA_DIR, 'cards', 'cards.db'));
  return {
    cards: new SqliteCardRepository(db),
    votes: new SqliteVoteRepository(db),
    collections: new SqliteCollectionRepository(db),
    contentLock: new InProcessContentLock(),
    outbox: new SqliteOutboxStore(db),
    engines: [],
    closeIfUnreachable: async () => false,
    close: async () => {
      db.close();
    },
  };
}

/** Composition root of the cards service. */
export async function startCards(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  refuseEmbeddedStores(env, ['MONGO_URL', 'KAFKA_BROKERS']);
  const config = loadConfig(cardsConfigSchema, env);
  const serverSettings = grpcServerSettingsFrom(env);
  const logger = createLogger('cards');
  const store = await openStore(config, logger);
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
  const collectionRepository = store.collections;
  const cardService = new CardService({
    cards: cardRepository,
    votes: store.votes,
    collections: collectionRepository,
    contentLock: store.contentLock,
    nearDuplicates: new GrpcNearDuplicateFinder(peers.search.client, logger, config.NEAR_DUPLICATE_DEADLINE_MS),
    files: new GrpcFileDirectory(peers.files.client),
    users: new GrpcUserDirectory(peers.identity.client, logger),
    eventsWritten: () => relay.kick(),
    logger,
  });
  const collectionService = new CollectionService({ collections: collectionRepository, cards: cardRepository, cardService, eventsWritten: () => relay.kick() });
  relay.start();
  const subscription = await subscribeToSearchEvents(bus, cardService);
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
  return {
    name: 'cards',
    address: grpc.address,
    async stop() {
      await grpc.shutdown();
      for (const peer of Object.values(peers)) peer.channel.close();
      await store.closeIfUnreachable();
      await recheck;
      // Together: closing the bus abandons a publish stuck connecting to brokers that are down, the relay's or a dead
      // letter the subscription is sending, which relay.stop() and subscription.close() would wait out; the relay's
      // entries stay in the outbox and the event is not committed (delivered again after the next start).
      await Promise.all([subscription.close(), relay.stop(), bus.close()]);
      await store.close();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('cards');
  startCards()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      logger.fatal({ err }, 'cards failed to start');
      process.exit(1);
    });
}
