import { createLogger, loadConfig, startGrpcServer, stopOnSignals, type RunningService } from '@cards/platform';
import { cardsConfigSchema } from './config';

/** Composition root of the cards service. */
export async function startCards(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  const config = loadConfig(cardsConfigSchema, env);
  const logger = createLogger('cards');
  const grpc = await startGrpcServer({
    name: 'cards',
    host: config.CARDS_GRPC_HOST,
    port: config.CARDS_GRPC_PORT,
    logger,
    register: () => {},
  });
  return {
    name: 'cards',
    address: grpc.address,
    async stop() {
      await grpc.shutdown();
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
