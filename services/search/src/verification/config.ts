import { z } from 'zod';
import { envBoolean, envInt, envMs } from '@cards/platform';

/**
 * The most attempts per page: the retry waits double each time (VERIFY_RETRY_BASE_MS * 2^(attempt - 1)), and at 2^31 ms
 * times 2^18 the last still falls on a date (up to 100 attempts made it past the last date, a RangeError at each retry).
 */
export const MAX_VERIFY_ATTEMPTS = 20;

/** The most verifications at once (pages of up to VERIFY_MAX_BYTES held together; scoring runs on at most 2 threads). */
export const MAX_VERIFY_CONCURRENCY = 64;

/**
 * The most VERIFY_MAX_PER_AUTHOR: one author's verifications running at once over the whole queue (every replica's with
 * MongoDB), so MAX_VERIFY_CONCURRENCY for each of 16 replicas. Above, it is no bound at all, read as one.
 */
export const MAX_VERIFY_PER_AUTHOR = 16 * MAX_VERIFY_CONCURRENCY;

/** Verification settings; merged into the search service's config schema. */
export const verificationConfigFields = {
  /** Let verification fetch private, loopback and link-local addresses (never in production). */
  VERIFY_ALLOW_PRIVATE: envBoolean(false),
  /** Comma-separated host:port pairs fetched whatever they resolve to (e.g. a test's own page server). */
  VERIFY_ALLOW_HOSTS: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      for (const raw of (v ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
        if (!/^(\[[^\]]+\]|[^:[\]\s]+):\d{1,5}$/.test(raw)) ctx.addIssue({ code: z.ZodIssueCode.custom, message: `"${raw}" is not host:port` });
      }
    }),
  /** Whole fetch budget of a page, 100 ms to MAX_TIMER_MS: 0 (or longer than a timer holds) timed every fetch out at once. */
  VERIFY_TIMEOUT_MS: envMs(10_000, { min: 100 }),
  /** At least 1: 0 was taken and refused every page as 'larger than 0 bytes' (each card scored 0). */
  VERIFY_MAX_BYTES: envInt(5 * 1024 * 1024).pipe(z.number().min(1, 'must be at least 1 (bytes; 0 would refuse every page)')),
  /**
   * Verifications fetched and scored at once, 1 to MAX_VERIFY_CONCURRENCY (each holds a page of up to VERIFY_MAX_BYTES):
   * 0 acted as 1, and 100000 fetched every queued page at once.
   */
  VERIFY_CONCURRENCY: envInt(4).pipe(z.number().min(1, 'must be at least 1').max(MAX_VERIFY_CONCURRENCY, `must be at most ${MAX_VERIFY_CONCURRENCY} (pages fetched and scored at once)`)),
  /**
   * Most verifications of one author running at once, counted over the whole queue (with MongoDB: every replica's);
   * 0 or unset: half of VERIFY_CONCURRENCY, rounded up. Jobs are claimed fairly across authors whatever it is.
   */
  VERIFY_MAX_PER_AUTHOR: envInt(0).pipe(z.number().max(MAX_VERIFY_PER_AUTHOR, `must be from 0 (half of VERIFY_CONCURRENCY) to ${MAX_VERIFY_PER_AUTHOR} (one author's verifications at once over every replica)`)),
  /**
   * Attempts per page: transient fetch failures (timeouts, resets, 5xx, 429) and runs cut off before finishing (the
   * process died) both count; then the page scores 0 (cut off: unfetched, so a page that crashes the process ends).
   */
  VERIFY_MAX_ATTEMPTS: envInt(3).pipe(z.number().min(1, 'must be at least 1 (the first attempt is one; 0 acted as 1)').max(MAX_VERIFY_ATTEMPTS, `must be at most ${MAX_VERIFY_ATTEMPTS}`)),
  /** The wait before the first retry, doubled at each next one; with MAX_VERIFY_ATTEMPTS the last wait stays a date. */
  VERIFY_RETRY_BASE_MS: envMs(1000),
  /** Longest time one page may take to score (token_set_ratio is quadratic in text length). */
  VERIFY_SCORE_TIMEOUT_MS: envMs(60_000, { min: 100 }),
  /** MongoDB keeps the verification queue (database "search", shared by replicas); absent: SQLite under DATA_DIR/search. */
  MONGO_URL: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
};

export const verificationConfigSchema = z.object(verificationConfigFields);
export type VerificationConfig = z.infer<typeof verificationConfigSchema>;
