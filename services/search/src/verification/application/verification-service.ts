import { createHash } from 'node:crypto';
import { Topics, newId, serviceCounter, type Logger } from '@cards/platform';
import { events } from '@cards/proto';
import type { ClaimedJob, VerificationJob } from '../domain/model';
import type { PageFetcher, PageScorer, VerificationStore } from '../domain/ports';

export interface VerificationServiceDeps {
  store: VerificationStore;
  fetcher: PageFetcher;
  scorer: PageScorer;
  logger: Logger;
  /**
   * Attempts per verification before scoring 0: transient fetch failures (timeouts, resets, 5xx) and runs cut off
   * before finishing (the process died, so the lease ran out) both count.
   */
  maxAttempts: number;
  /** First retry delay; doubles per attempt. */
  retryBaseMs: number;
  clock?: () => Date;
}

/** Verifications that ended: done (the page scored), failed (an unusable page, score 0, with why) or cancelled (link removed). */
const verifications = serviceCounter(
  'card_library_verifications_total',
  "Verification jobs that ended, by outcome: done (the page was scored), failed (the page could not be used: scored 0 with a failure), cancelled (the card's link was removed while the job waited or ran)",
  ['outcome'] as const,
);
for (const outcome of ['done', 'failed', 'cancelled']) verifications.inc({ outcome }, 0);

export type CardEventEffect = 'enqueued' | 'replayed' | 'cancelled' | 'ignored';

/**
 * Content verification: a card created with a link, or whose link or content changed, gets its page
 * fetched and compared with its content (token_set_ratio 0-100); the result is announced as
 * CardVerified (cards stores it as verification_score, notifications tells the author).
 * An unusable page (unreachable, refused, not HTML, too large) scores 0 and is announced too.
 */
export class VerificationService {
  private readonly clock: () => Date;
  private stopping = false;

  constructor(private readonly deps: VerificationServiceDeps) {
    this.clock = deps.clock ?? (() => new Date());
  }

  /** Decides what a card event asks for; idempotent per event id. */
  async onCardEvent(event: events.CardEvent): Promise<CardEventEffect> {
    const kind = event.kind;
    if (!kind || !event.eventId) return 'ignored';
    if (kind.$case === 'deleted') {
      // Nothing of a deleted card's verifications is needed any more (its text least of all): its jobs go.
      await this.deps.store.forgetCard(kind.value.cardId);
      return 'cancelled';
    }
    const card = kind.value.card;
    if (!card?.id || !card.authorId) return 'ignored';
    if (kind.$case === 'updated') {
      if (!kind.value.contentChanged && !kind.value.linkChanged) return 'ignored';
      // The link was removed: a verification still waiting for the old link is moot.
      if (!card.link.trim()) {
        const cancelled = await this.deps.store.cancelCard(card.id);
        if (cancelled > 0) verifications.inc({ outcome: 'cancelled' }, cancelled);
        return 'cancelled';
      }
    }
    if (!card.link.trim()) return 'ignored';
    const added = await this.deps.store.enqueue({
      id: newId(),
      sourceEventId: event.eventId,
      cardId: card.id,
      authorId: card.authorId,
      link: card.link.trim(),
      content: card.content,
      createdAt: this.clock(),
    });
    return added ? 'enqueued' : 'replayed';
  }

  /**
   * From now on, jobs in flight record nothing: the runner hands them back to the queue, to run again
   * after the restart, instead of announcing a failure that was only the shutdown.
   */
  stop(): void {
    this.stopping = true;
  }

  /**
   * Fetches and scores one claimed job; a transient failure puts it back with backoff until attempts run out. A job
   * whose attempts were used up by runs cut off before finishing ends without another fetch: a page that takes the
   * process down would otherwise crash-loop the search service. A run whose claim ended meanwhile (its lease ran out, as
   * when its process stalled) changes nothing and ends 'discarded': the job is another run's now.
   */
  async run(job: ClaimedJob): Promise<'done' | 'retry' | 'discarded' | 'interrupted'> {
    const { logger } = this.deps;
    if (this.stopping) return 'interrupted';
    if (job.attempts >= this.deps.maxAttempts) {
      const failure = stoppedBeforeFinishing(job);
      logger.error({ cardId: job.cardId, verificationId: job.id, linkHost: linkHost(job.link), attempts: job.attempts, failure }, 'verification given up: its runs were cut off before finishing');
      return this.record(job, { score: 0, failure, attempts: job.attempts });
    }
    const fetched = await this.deps.fetcher.fetchPage(job.link);
    if (this.stopping) return 'interrupted';
    const attempts = job.attempts + 1;
    if (!fetched.ok && fetched.transient && attempts < this.deps.maxAttempts) {
      const delay = this.deps.retryBaseMs * 2 ** (attempts - 1);
      if (!(await this.deps.store.retryLater(job, attempts, new Date(this.clock().getTime() + delay), fetched.failure))) {
        await this.explainDiscarded(job, { retryAfter: fetched.failure });
        return 'discarded';
      }
      logger.info({ cardId: job.cardId, linkHost: linkHost(job.link), failure: fetched.failure, attempts, retryInMs: delay }, 'verification fetch failed; will retry');
      return 'retry';
    }
    let score = 0;
    let failure = '';
    if (fetched.ok) {
      try {
        score = await this.deps.scorer.score(job.content, fetched.html);
      } catch (err) {
        failure = `could not score the page: ${err instanceof Error ? err.message : String(err)}`;
      }
    } else failure = fetched.failure;
    if (this.stopping) return 'interrupted';
    return this.record(job, { score, failure, attempts });
  }

  private async record(job: ClaimedJob, result: { score: number; failure: string; attempts: number }): Promise<'done' | 'discarded'> {
    const { score, failure } = result;
    const eventId = newId();
    const completedAt = this.clock();
    const payload = events.CardVerified.encode({
      eventId,
      occurredAt: completedAt,
      verificationId: job.id,
      cardId: job.cardId,
      authorId: job.authorId,
      score,
      link: job.link,
      failure,
      // What was compared with the page: cards keeps the result only while the card holds this content.
      contentSha256: createHash('sha256').update(job.content).digest('hex'),
    }).finish();
    // The card's link changed while this one was checked (a later job asks for another): cards keeps no result for an
    // old link, so none is announced (the author would be told of a score the card never shows). Recorded all the same.
    const stale = (await this.deps.store.latestLink(job.cardId)) !== job.link;
    const recorded = await this.deps.store.complete(job, { ...result, eventId, completedAt }, stale ? [] : [{ topic: Topics.verification, key: job.cardId, payload }]);
    if (!recorded) {
      await this.explainDiscarded(job, { score, failure: failure || undefined });
      return 'discarded';
    }
    verifications.inc({ outcome: failure ? 'failed' : 'done' });
    if (stale) this.deps.logger.info({ cardId: job.cardId, verificationId: job.id, linkHost: linkHost(job.link), score }, 'verification of a link the card no longer has: recorded, not announced');
    else this.deps.logger.info({ cardId: job.cardId, verificationId: job.id, score, failure: failure || undefined }, 'card verified');
    return 'done';
  }

  /**
   * The store refused this run's result or retry. For a deleted card that is expected; otherwise the run outlived its
   * lease (its process stalled) and the job is another run's now: worth a warning, since leases are meant to be ample.
   */
  private async explainDiscarded(job: ClaimedJob, dropped: Record<string, unknown>): Promise<void> {
    const now = await this.deps.store.find(job.id).catch(() => null);
    const fields = { cardId: job.cardId, verificationId: job.id, ...dropped };
    // No job any more: the card was deleted (forgetCard).
    if (!now || now.status === 'cancelled') this.deps.logger.info(fields, 'verification result discarded: the card was deleted meanwhile');
    else this.deps.logger.warn({ ...fields, status: now?.status }, 'stale verification result dropped: the run outlived its lease, so another run holds or finished the job');
  }
}

/**
 * Why a job that reached its attempts through a cut-off run ends unchecked. Only transient fetch failures record a
 * failure on a job still to run, so none means every attempt was cut off.
 */
function stoppedBeforeFinishing(job: VerificationJob): string {
  const times = job.attempts === 1 ? 'once' : `${job.attempts} times`;
  if (!job.failure) return `the check of this page was stopped before it finished ${times} (the verifier's process ended during it, as when a page makes it crash); not tried again`;
  return `the check of this page was stopped before it finished, after earlier tries failed (last: ${job.failure}); not tried again after ${job.attempts} attempts`;
}

/**
 * What the log says of a card's link: its host only. The whole link (path, query string) of a private card is the
 * user's data and may carry a token; the card id on the same line finds the rest.
 */
export function linkHost(link: string): string {
  try {
    return new URL(link).host || '(no host)';
  } catch {
    return '(not a URL)';
  }
}
