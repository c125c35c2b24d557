/** A verification asked for by a card event: fetch `link`, compare its text with `content`. */
export interface NewVerificationJob {
  /** Also the verification id announced in CardVerified. */
  id: string;
  /** The card event that asked for it; one job per event. */
  sourceEventId: string;
  cardId: string;
  authorId: string;
  link: string;
  content: string;
  createdAt: Date;
}

export type VerificationStatus = 'pending' | 'running' | 'done' | 'superseded' | 'cancelled';

export interface VerificationJob extends NewVerificationJob {
  status: VerificationStatus;
  /** Attempts made so far: transient fetch failures and runs cut off before finishing (their lease ran out). */
  attempts: number;
  dueAt: Date;
  score: number | null;
  failure: string | null;
}

/**
 * A job as claim() hands it to one runner. `claimId` is fresh per claim and fences the job: once its lease ran out and
 * it was claimed again, what the earlier runner still does with it takes no effect.
 */
export interface ClaimedJob extends VerificationJob {
  claimId: string;
}

/** What complete, retryLater and release need to know of a claim: whose job, and which claim of it. */
export type JobClaim = Pick<ClaimedJob, 'id' | 'claimId'>;

export interface VerificationOutcome {
  /** token_set_ratio 0-100; 0 when the page could not be used. */
  score: number;
  /** Empty on success; otherwise why the page could not be used. */
  failure: string;
  /** Attempts the job made in all, this run's fetch included (a run that gives up without fetching adds none). */
  attempts: number;
  /** Id of the CardVerified event announcing it. */
  eventId: string;
  completedAt: Date;
}

export type PageFetchResult =
  | { ok: true; html: string; finalUrl: string }
  /** `transient`: worth trying again later (timeouts, resets, 5xx, 429); otherwise final. */
  | { ok: false; failure: string; transient: boolean };
