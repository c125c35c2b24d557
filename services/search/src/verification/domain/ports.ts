import type { OutgoingEvent } from '@cards/platform';
import type { ClaimedJob, JobClaim, NewVerificationJob, PageFetchResult, VerificationJob, VerificationOutcome } from './model';

/** Resolves a host name to every address it has (A and AAAA), so each one can be checked before connecting. */
export interface HostResolver {
  /** Every address of the host; an empty list or a rejection when it does not resolve. */
  resolve(hostname: string): Promise<string[]>;
}

/** Fetches the page behind a card's link, refusing addresses the policy forbids. Never throws: failures are results. */
export interface PageFetcher {
  fetchPage(link: string): Promise<PageFetchResult>;
}

/**
 * How well a fetched page backs a card: the similarity (token_set_ratio, an integer 0-100) of the card's text and the
 * page's visible text (no markup, no scripts or styles). Rejects when the page cannot be scored (e.g. too slow).
 */
export interface PageScorer {
  score(cardText: string, pageHtml: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * Durable queue and record of verifications. Jobs are keyed by the card event that asked for them,
 * so a redelivered event enqueues nothing; a job's result and its CardVerified event are stored together.
 */
export interface VerificationStore {
  /**
   * Adds a pending job unless one for the same event exists (returns false then). Pending jobs of the
   * same card that were asked for earlier are superseded: only the newest content and link matter.
   */
  enqueue(job: NewVerificationJob): Promise<boolean>;
  /**
   * Takes up to `limit` pending jobs whose time has come and marks them running until `leaseUntil`, each under a fresh
   * claim id, never two of one card at once (so results of one card are published in order). Fair across authors: each
   * next job is the oldest waiting one of the author with the fewest jobs running (in the whole queue, every runner's),
   * and an author with `maxPerAuthor` running gets none (default: no cap). Queue order is due time, then insertion: a
   * job put back for a retry waits behind the jobs already waiting when its retry came due.
   */
  claim(limit: number, now: Date, leaseUntil: Date, maxPerAuthor?: number): Promise<ClaimedJob[]>;
  /**
   * Puts a job still running under this claim back to pending after a transient failure, to run again at `dueAt`.
   * Returns false (changing nothing) when it is not: its lease ran out and it was requeued, claimed again or finished.
   */
  retryLater(claim: JobClaim, attempts: number, dueAt: Date, lastFailure: string): Promise<boolean>;
  /**
   * Records the outcome and the events announcing it in one transaction, drops the job's content (no longer needed) and
   * removes the card's older finished (done, superseded, cancelled) jobs: a card keeps its latest result and the jobs
   * after it. Returns false (recording nothing) when the
   * job is no longer running under this claim: its card was deleted meanwhile, or its lease ran out and it was requeued
   * (and perhaps claimed again or finished by another run).
   */
  complete(claim: JobClaim, outcome: VerificationOutcome, events: OutgoingEvent[]): Promise<boolean>;
  /**
   * The link the card's most recent job asks for (its latest created or changed link), null when it has none. A result
   * for another link is one the card no longer cites: cards drops it, so it is not announced either.
   */
  latestLink(cardId: string): Promise<string | null>;
  /**
   * Cancels the card's pending and running jobs (its link was removed): a running one is discarded when it completes.
   * A job keeps its content (the card's text) only while it may still run: a done, superseded or cancelled one keeps none.
   */
  cancelCard(cardId: string): Promise<number>;
  /**
   * The card was deleted: removes every job of it (a running one's result is then refused, as a cancelled one's). Returns
   * how many. On MongoDB a result whose events are not yet relayed goes once they are.
   */
  forgetCard(cardId: string): Promise<number>;
  /**
   * Hands a job still running under this claim back untouched, its attempts too (a graceful shutdown interrupted it), to
   * run again at once. Returns false (changing nothing) when it is no longer running under this claim.
   */
  release(claim: JobClaim): Promise<boolean>;
  /**
   * Running jobs whose lease ran out (their runner died or stalled) go back to pending, each counting one attempt: a page
   * that takes its process down must not be run forever. Their claims end: a stalled runner that wakes up later can
   * neither finish nor hand back the job. Returns how many.
   */
  requeueExpired(now: Date): Promise<number>;
  /**
   * Jobs waiting (pending) and running in the whole queue, each counted up to `cap` (a bounded index range read): what
   * /metrics shows at each scrape.
   */
  queueDepth(cap: number): Promise<{ pending: number; running: number }>;
  /** The stored outcome of one job, for tests and diagnostics. */
  find(jobId: string): Promise<VerificationJob | null>;
  close(): Promise<void>;
}
