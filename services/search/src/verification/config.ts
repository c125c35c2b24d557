import { z } from 'zod';
import { envBoolean, envInt } from '@cards/platform';

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
  VERIFY_TIMEOUT_MS: envInt(10_000),
  VERIFY_MAX_BYTES: envInt(5 * 1024 * 1024),
  /** Verifications fetched and scored at once. */
  VERIFY_CONCURRENCY: envInt(4),
  /**
   * Most verifications of one author running at once, counted over the whole queue (with MongoDB: every replica's);
   * 0 or unset: half of VERIFY_CONCURRENCY, rounded up. Jobs are claimed fairly across authors whatever it is.
   */
  VERIFY_MAX_PER_AUTHOR: envInt(0),
  /**
   * Attempts per page: transient fetch failures (timeouts, resets, 5xx, 429) and runs cut off before finishing (the
   * process died) both count; then the page scores 0 (cut off: unfetched, so a page that crashes the process ends).
   */
  VERIFY_MAX_ATTEMPTS: envInt(3),
  VERIFY_RETRY_BASE_MS: envInt(1000),
  /** Longest time one page may take to score (token_set_ratio is quadratic in text length). */
  VERIFY_SCORE_TIMEOUT_MS: envInt(60_000),
  /** MongoDB keeps the verification queue (database "search", shared by replicas); absent: SQLite under DATA_DIR/search. */
  MONGO_URL: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
};

export const verificationConfigSchema = z.object(verificationConfigFields);
export type VerificationConfig = z.infer<typeof verificationConfigSchema>;
