import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Topics, type EventBus, type Logger } from '@cards/platform';
import { events } from '@cards/proto';
import type { SearchIndexRebuildCursor, SearchIndexRebuildProgress } from '../domain/ports';
import { DEFAULT_REBUILD_BATCH_SIZE, DEFAULT_REBUILD_MAX_PENDING, rebuildSearchIndex, type SearchIndexRepublisherDeps } from './search-index-republisher';

/** Consumer group of search's rebuild requests: one cards replica answers each. */
export const SEARCH_INDEX_REBUILD_GROUP = 'cards-search-index-rebuild';

/**
 * How long a rebuild's holder may say nothing before another takes it over, unless told otherwise. A holder says it is
 * alive at every batch and every quarter of this meanwhile; one that stops gracefully releases it at once.
 */
export const DEFAULT_REBUILD_LEASE_MS = 60_000;

/** A holder of rebuilds as recorded (logged by whoever takes one over): the host, the process and a random part. */
export const rebuildHolder = (role: string) => `${role}@${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

export type SearchIndexRebuildDeps = Pick<SearchIndexRepublisherDeps, 'cards' | 'collections' | 'outbox' | 'waitNoticeMs' | 'pollMs'> & {
  logger: Logger;
  /** Where the rebuild's progress is recorded (the cards store). */
  progress: SearchIndexRebuildProgress;
  /** This process as a holder of rebuilds. Default: rebuildHolder('cards'). */
  holder?: string;
  /** Default DEFAULT_REBUILD_LEASE_MS; also how often an unfinished rebuild held by no one alive is looked for. */
  leaseMs?: number;
  /** Defaults: the rebuild-search-index command's. */
  batchSize?: number;
  maxPending?: number;
};

export interface SearchIndexRebuilds {
  /** Resolves once the rebuild under way, if any, and the one more asked for while it ran, have ended. */
  idle(): Promise<void>;
  /**
   * Stops reading requests and ends a rebuild under way before its next batch (what was queued stays queued), releasing
   * it: the next start (or another replica) resumes it where it stopped.
   */
  close(): Promise<void>;
}

/** A rebuild to run: its run id as recorded, and where it starts. */
interface Job {
  run: string;
  reason: string;
  from?: SearchIndexRebuildCursor;
}

class TakenOver extends Error {}

const ASKED = 'search asked to rebuild its index (it was lost): telling it every card and bookmark again, as rebuild-search-index does';

/**
 * Answers search's requests to rebuild its index (search.index-rebuild.v1: search found its index lost at start) by
 * running the rebuild-search-index command's code in the background, and resumes a rebuild cut short. The request is
 * committed once the rebuild is recorded (SearchIndexRebuildProgress), not when it ends: a rebuild of a large store may
 * outlast a Kafka consumer's session, which would hand the request to another replica, again and again. Each batch
 * appended is recorded, so a rebuild cut short by a stop (SIGTERM during a rolling update, kill -9, OOM) is resumed where
 * it stopped, by one replica (a conditional claim; each looks at start and every quarter of a lease) once its holder
 * has released it or said nothing for a lease. Without that, the index held some cards, search's next start did not ask again, and the rest
 * stayed unfindable until an operator ran the command.
 *
 * A request while a rebuild runs schedules one more full rebuild after it (several such requests: still one more): the
 * index may have been lost again meanwhile, and the batches already sent went into the lost one. That one more is
 * recorded at once, from the start, so a stop before it ends resumes it, not what remained of the first. A request
 * while an unfinished rebuild is recorded but not running here restarts it from the start (the index was lost again).
 * A rebuild begun again or taken over elsewhere (the operator's command records its runs too) stops here.
 */
export async function answerSearchIndexRebuildRequests(bus: EventBus, deps: SearchIndexRebuildDeps): Promise<SearchIndexRebuilds> {
  const holder = deps.holder ?? rebuildHolder('cards');
  const leaseMs = deps.leaseMs ?? DEFAULT_REBUILD_LEASE_MS;
  const stopping = new AbortController();
  let running: Promise<void> | undefined;
  /** The one more full rebuild asked for while a rebuild ran (recorded already): it starts when that one ends. */
  let again: Job | undefined;
  /** The run this process holds as recorded (the one running, or the one more owed after it): kept alive, released on close. */
  let held: string | undefined;
  /** Requests, resumes and the timer's work, one at a time. */
  let queue: Promise<unknown> = Promise.resolve();
  const serially = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work);
    queue = next.catch(() => undefined);
    return next;
  };

  const run = (job: Job) => {
    held = job.run;
    let takenOver = false;
    running = rebuildSearchIndex({
      cards: deps.cards,
      collections: deps.collections,
      outbox: deps.outbox,
      batchSize: deps.batchSize ?? DEFAULT_REBUILD_BATCH_SIZE,
      maxPending: deps.maxPending ?? DEFAULT_REBUILD_MAX_PENDING,
      waitNoticeMs: deps.waitNoticeMs,
      pollMs: deps.pollMs,
      signal: stopping.signal,
      from: job.from,
      progress: () => undefined,
      waiting: (pending) => deps.logger.info({ pending }, 'rebuilding the search index: waiting for the outbox relay to publish'),
      checkpoint: async (at) => {
        // One more full rebuild is recorded (from the start) and owed after this one: nothing of this one to record.
        if (again) return;
        if (!(await deps.progress.advance(job.run, at))) {
          takenOver = true;
          throw new TakenOver();
        }
      },
    })
      .then(async (done) => {
        if (!again) await deps.progress.finish(job.run);
        deps.logger.info({ cards: done.cards, bookmarks: done.bookmarks }, 'rebuilding the search index: every card and bookmark queued for search');
      })
      .catch((err: unknown) => {
        if (takenOver) deps.logger.info('rebuilding the search index: begun again or taken over elsewhere (the rebuild-search-index command, or another replica); stopping here');
        else if (stopping.signal.aborted) deps.logger.warn('rebuilding the search index stopped with the service before the end; the next start resumes it where it stopped');
        else deps.logger.error({ err }, 'rebuilding the search index failed; it is resumed within a lease (or run rebuild-search-index)');
      })
      .finally(() => {
        running = undefined;
        const next = again;
        again = undefined;
        if (next !== undefined && !stopping.signal.aborted) {
          deps.logger.info({ reason: next.reason }, ASKED);
          run(next);
        } else if (next === undefined && !stopping.signal.aborted) held = undefined;
        // Stopping: `held` stays, for close() to release.
      });
  };

  const request = (reason: string) =>
    serially(async () => {
      // Recorded before the request is committed: a stop from here on resumes it.
      const recorded = await deps.progress.begin(reason, holder);
      if (running) {
        deps.logger.info({ reason, alreadyScheduled: again !== undefined }, 'search asked again to rebuild its index while a rebuild runs: one more rebuild after it');
        again = { run: recorded, reason };
        held = recorded;
        return;
      }
      deps.logger.info({ reason }, ASKED);
      run({ run: recorded, reason });
    });

  const resume = () =>
    serially(async () => {
      if (running || held || stopping.signal.aborted) return;
      const claimed = await deps.progress.claimUnfinished(holder, leaseMs);
      if (!claimed) return;
      const at = `${claimed.phase}${claimed.after !== undefined ? ` after ${claimed.after}` : ' from the start'}`;
      deps.logger.warn(
        { reason: claimed.reason, phase: claimed.phase, after: claimed.after, previousHolder: claimed.previousHolder, previousHeartbeatAt: claimed.previousHeartbeatAt },
        `resuming the search index rebuild cut short at ${at}`,
      );
      run({ run: claimed.run, reason: claimed.reason, from: { phase: claimed.phase, after: claimed.after } });
    });

  const tick = () =>
    serially(async () => {
      if (held) await deps.progress.keepAlive(held);
    })
      .then(() => resume())
      .catch((err: unknown) => deps.logger.warn({ err }, 'recording the search index rebuild failed; trying again'));

  await resume().catch((err: unknown) => deps.logger.warn({ err }, 'looking for a search index rebuild cut short failed; trying again within a lease'));
  const timer = setInterval(() => void tick(), Math.max(1, Math.floor(leaseMs / 4)));
  timer.unref();
  const subscription = await bus.subscribe({
    group: SEARCH_INDEX_REBUILD_GROUP,
    topics: [Topics.indexRebuild],
    handler: async (event) => {
      await request(events.SearchIndexRebuildRequested.decode(event.payload).reason || 'search found its index lost');
    },
  });
  return {
    idle: async () => {
      // A rebuild's end may start the one more asked for meanwhile.
      while (running) await running;
    },
    async close() {
      clearInterval(timer);
      await subscription.close();
      stopping.abort();
      while (running) await running;
      await queue;
      // Let the next start (or another replica) resume at once instead of after the lease.
      if (held) await deps.progress.release(held).catch((err: unknown) => deps.logger.warn({ err }, 'releasing the search index rebuild failed; it is resumed after its lease'));
    },
  };
}
