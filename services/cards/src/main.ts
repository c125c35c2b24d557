import { join } from 'node:path';
import { createEventBus, createGrpcClient, createLogger, loadConfig, OutboxRelay, SqliteOutboxStore, startGrpcServer, stopOnSignals, type RunningService } from '@cards/platform';
import { cards, files, identity, search } from '@cards/proto';
import { GrpcFileDirectory } from './adapters/grpc/grpc-file-directory';
import { GrpcNearDuplicateFinder } from './adapters/grpc/grpc-near-duplicate-finder';
import { GrpcUserDirectory } from './adapters/grpc/grpc-user-directory';
import { openCardsDatabase } from './adapters/sqlite/sqlite-cards-database';
import { SqliteCardRepository } from './adapters/sqlite/sqlite-card-repository';
import { SqliteCollectionRepository } from './adapters/sqlite/sqlite-collection-repository';
import { SqliteVoteRepository } from './adapters/sqlite/sqlite-vote-repository';
import { CardService } from './application/card-service';
import { CollectionService } from './application/collection-service';
import { subscribeToSearchEvents } from './application/event-consumers';
import { cardsConfigSchema } from './config';
import { cardsHandlers } from './grpc/cards-handlers';

/** Composition root of the cards service. */
export async function startCards(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  const config = loadConfig(cardsConfigSchema, env);
  const logger = createLogger('cards');
  if (config.MONGO_URL) logger.warn('MONGO_URL is set but the MongoDB adapter is not built yet; using SQLite');
  else logger.info('MONGO_URL not set: using the embedded SQLite store');
  const db = openCardsDatabase(join(config.DATA_DIR, 'cards', 'cards.db'));
  const bus = createEventBus({ DATA_DIR: config.DATA_DIR, KAFKA_BROKERS: config.KAFKA_BROKERS }, logger);
  const relay = new OutboxRelay(new SqliteOutboxStore(db), bus, logger);
  const peers = {
    identity: createGrpcClient(identity.IdentityServiceDefinition, config.IDENTITY_SERVICE_ADDR, { deadlineMs: config.GRPC_DEADLINE_MS }),
    search: createGrpcClient(search.SearchServiceDefinition, config.SEARCH_SERVICE_ADDR, { deadlineMs: config.GRPC_DEADLINE_MS }),
    files: createGrpcClient(files.FileServiceDefinition, config.FILES_SERVICE_ADDR, { deadlineMs: config.GRPC_DEADLINE_MS }),
  };
  const cardRepository = new SqliteCardRepository(db);
  const collectionRepository = new SqliteCollectionRepository(db);
  const cardService = new CardService({
    cards: cardRepository,
    votes: new SqliteVoteRepository(db),
    collections: collectionRepository,
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
    register: (server) => server.add(cards.CardServiceDefinition, cardsHandlers(cardService, collectionService)),
  });
  return {
    name: 'cards',
    address: grpc.address,
    async stop() {
      await grpc.shutdown();
      await subscription.close();
      await relay.stop();
      for (const peer of Object.values(peers)) peer.channel.close();
      await bus.close();
      db.close();
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
