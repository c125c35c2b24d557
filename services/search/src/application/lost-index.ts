import { newId, serviceCounter, Topics, type EventBus, type Logger } from '@cards/platform';
import { events } from '@cards/proto';
import type { CardIndex } from '../domain/ports';

/** Rebuild requests search published because it found its index lost at start (card_library_search_index_rebuild_requests_total). */
const rebuildRequests = serviceCounter('card_library_search_index_rebuild_requests_total', 'Times search found its index lost at start and asked the cards service to tell it every card again', []);
rebuildRequests.inc(0);

export interface LostIndexCheck {
  index: Pick<CardIndex, 'createdAtStart' | 'lostIndexCheckSettled'>;
  bus: Pick<EventBus, 'hasCommitted'>;
  /** The indexing consumer group and its topics, asked before it subscribes at this start. */
  group: string;
  topics: readonly string[];
  logger: Logger;
}

/**
 * Whether the search index was lost: this start created it (its file or Elasticsearch index was absent) while the
 * indexing consumer group had handled events before, so the cards those events carried are gone from it and will not
 * come again. A new system (nothing committed) and a restart on an index that exists are not: the first builds its
 * index from the events it is still to read, the second has it. Ask before the group subscribes at this start.
 */
export async function indexWasLost(check: Omit<LostIndexCheck, 'logger' | 'index'> & { index: Pick<CardIndex, 'createdAtStart'> }): Promise<boolean> {
  if (!(await check.index.createdAtStart())) return false;
  return check.bus.hasCommitted(check.group, check.topics);
}

/** The request the cards service answers by telling search every card and bookmark again (rebuild-search-index). */
export function rebuildRequest(reason: string): { topic: string; key: string; payload: Uint8Array } {
  return {
    topic: Topics.indexRebuild,
    key: 'cards',
    payload: events.SearchIndexRebuildRequested.encode({ eventId: newId(), occurredAt: new Date(), reason }).finish(),
  };
}

/**
 * At start: when the index was lost (indexWasLost), logs one warning, counts it and answers the request to publish
 * (rebuildRequest), and the caller settles the check (index.lostIndexCheckSettled) once it is published; otherwise
 * settles a pending check itself and answers undefined. A start killed before the check settled leaves it pending in the
 * index, so the next start, finding the index there, still checks (and asks) instead of keeping a partial index.
 */
export async function rebuildRequestIfIndexLost(check: LostIndexCheck): Promise<ReturnType<typeof rebuildRequest> | undefined> {
  if (!(await indexWasLost(check))) {
    // Only a check still pending is settled (no write at every start on an index that was there).
    if (await check.index.createdAtStart()) await check.index.lostIndexCheckSettled();
    return undefined;
  }
  const reason = 'the search index was created at this start while its consumer group had handled events before';
  check.logger.warn({ group: check.group }, `${reason}: it was lost (deleted or emptied while search was stopped); asking the cards service to tell search every card and bookmark again, as rebuild-search-index does`);
  rebuildRequests.inc();
  return rebuildRequest(reason);
}

/**
 * The step that sends a lost index's rebuild request (rebuildRequestIfIndexLost) and then settles its check, for a
 * retrying loop (retryUntilDone): the request is published once, and a settle that fails (an Elasticsearch index
 * blocked read-only at its disk's flood stage refuses the _meta write) is tried again alone. Publishing again at each
 * try had the cards service tell search every card and bookmark again every retry, for as long as the settle failed.
 */
export function rebuildRequestSender(request: ReturnType<typeof rebuildRequest>, bus: Pick<EventBus, 'publish'>, index: Pick<CardIndex, 'lostIndexCheckSettled'>): () => Promise<void> {
  let published = false;
  return async () => {
    if (!published) {
      await bus.publish([request]);
      published = true;
    }
    // Only now: killed before this, the next start finds the check pending and asks again (docs/decisions.md).
    await index.lostIndexCheckSettled();
  };
}
