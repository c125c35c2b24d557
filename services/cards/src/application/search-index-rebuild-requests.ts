import { Topics, type EventBus, type Logger } from '@cards/platform';
import { events } from '@cards/proto';
import { DEFAULT_REBUILD_BATCH_SIZE, DEFAULT_REBUILD_MAX_PENDING, rebuildSearchIndex, type SearchIndexRepublisherDeps } from './search-index-republisher';

/** Consumer group of search's rebuild requests: one cards replica answers each. */
export const SEARCH_INDEX_REBUILD_GROUP = 'cards-search-index-rebuild';

export type SearchIndexRebuildDeps = Pick<SearchIndexRepublisherDeps, 'cards' | 'collections' | 'outbox' | 'waitNoticeMs' | 'pollMs'> & {
  logger: Logger;
  /** Defaults: the rebuild-search-index command's. */
  batchSize?: number;
  maxPending?: number;
};

export interface SearchIndexRebuilds {
  /** Resolves once the rebuild under way, if any, and the one more asked for while it ran, have ended. */
  idle(): Promise<void>;
  /** Stops reading requests and ends a rebuild under way before its next batch (what was queued stays queued). */
  close(): Promise<void>;
}

/**
 * Answers search's requests to rebuild its index (search.index-rebuild.v1: search found its index lost at start) by
 * running the rebuild-search-index command's code in the background. The request is committed when the rebuild starts,
 * not when it ends: a rebuild of a large store may outlast a Kafka consumer's session, which would hand the request to
 * another replica, again and again. A request while a rebuild runs schedules one more full rebuild after it (several such
 * requests: still one more): the index may have been lost again meanwhile, and the batches already sent went into the
 * lost one. A rebuild cut short by a stop is not
 * resumed (the index then holds cards, so the next start does not ask again): docs/deploy.md says to run the command.
 */
export async function answerSearchIndexRebuildRequests(bus: EventBus, deps: SearchIndexRebuildDeps): Promise<SearchIndexRebuilds> {
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  /** The reason of a request that came while a rebuild ran: one more rebuild starts when that one ends. */
  let again: string | undefined;
  const start = (reason: string) => {
    if (running) {
      deps.logger.info({ reason, alreadyScheduled: again !== undefined }, 'search asked again to rebuild its index while a rebuild runs: one more rebuild after it');
      again = reason;
      return;
    }
    deps.logger.info({ reason }, 'search asked to rebuild its index (it was lost): telling it every card and bookmark again, as rebuild-search-index does');
    running = rebuildSearchIndex({
      cards: deps.cards,
      collections: deps.collections,
      outbox: deps.outbox,
      batchSize: deps.batchSize ?? DEFAULT_REBUILD_BATCH_SIZE,
      maxPending: deps.maxPending ?? DEFAULT_REBUILD_MAX_PENDING,
      waitNoticeMs: deps.waitNoticeMs,
      pollMs: deps.pollMs,
      signal: stopping.signal,
      progress: () => undefined,
      waiting: (pending) => deps.logger.info({ pending }, 'rebuilding the search index: waiting for the outbox relay to publish'),
    })
      .then((done) => deps.logger.info({ cards: done.cards, bookmarks: done.bookmarks }, 'rebuilding the search index: every card and bookmark queued for search'))
      .catch((err: unknown) => {
        if (stopping.signal.aborted) deps.logger.warn('rebuilding the search index stopped with the service before the end; run rebuild-search-index to finish it');
        else deps.logger.error({ err }, 'rebuilding the search index failed; run rebuild-search-index');
      })
      .finally(() => {
        running = undefined;
        const next = again;
        again = undefined;
        if (next !== undefined && !stopping.signal.aborted) start(next);
      });
  };
  const subscription = await bus.subscribe({
    group: SEARCH_INDEX_REBUILD_GROUP,
    topics: [Topics.indexRebuild],
    handler: async (event) => {
      start(events.SearchIndexRebuildRequested.decode(event.payload).reason || 'search found its index lost');
    },
  });
  return {
    idle: async () => {
      // A rebuild's end may start the one more asked for meanwhile.
      while (running) await running;
    },
    async close() {
      await subscription.close();
      stopping.abort();
      while (running) await running;
    },
  };
}
