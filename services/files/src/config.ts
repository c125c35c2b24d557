import { z } from 'zod';
import { envAddress, envIdempotencyKeyTtlHours, envInt, envMs, envPort, envUrl } from '@cards/platform';

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** The most parser worker threads: each takes up to ~650 MB (docs/files.md), so 32 is ~21 GB; 100000 was taken. */
export const MAX_PARSER_WORKERS = 32;
/**
 * The most attempts per ingestion and file event. A file event's retries wait 0.1 s doubling up to 5 s, and its consumer
 * handles nothing else meanwhile: 50 attempts hold it about 4 minutes, under the 5 of the CardLibraryConsumerStuck alert;
 * 1000000 was taken and held it for ever.
 */
export const MAX_INGESTION_ATTEMPTS = 50;
/** The most CreateCard calls one ingestion has in flight. */
export const MAX_INGESTION_CONCURRENCY = 64;

export const filesConfigSchema = z
  .object({
    DATA_DIR: z.string().default('./data'),
    FILES_GRPC_HOST: z.string().default('127.0.0.1'),
    FILES_GRPC_PORT: envPort(50054),
    /** Internal raw-download endpoint the gateway proxies to. */
    FILES_HTTP_HOST: z.string().default('127.0.0.1'),
    FILES_HTTP_PORT: envPort(50064),
    /**
     * Shared secret the gateway presents to the download endpoint; required when it listens beyond loopback. Unset (on
     * loopback): the endpoint refuses every download, as any local process could otherwise name a file's owner.
     */
    FILES_INTERNAL_TOKEN: z
      .string()
      .optional()
      .transform((v) => (v === '' ? undefined : v))
      .pipe(z.string().min(16, 'must be at least 16 characters').optional()),
    /**
     * Comma-separated tokens accepted besides FILES_INTERNAL_TOKEN while it is rotated (docs/deploy.md): first the new
     * one before the gateway sends it, then the old one until no gateway sends it any more. The gateway never reads it.
     */
    FILES_INTERNAL_TOKEN_ALSO_ACCEPTED: z
      .string()
      .optional()
      .transform((v) => (v ?? '').split(',').map((token) => token.trim()).filter((token) => token !== ''))
      .superRefine((tokens, ctx) => {
        for (const [at, token] of tokens.entries()) {
          if (token.length < 16) ctx.addIssue({ code: 'custom', message: `token ${at + 1} of the list is shorter than 16 characters: each must be at least 16 characters` });
        }
      }),
    CARDS_SERVICE_ADDR: envAddress('127.0.0.1:50052'),
    /** At least 1: 0 was taken as a limit of 0 bytes (every upload refused), not as 'no limit'. */
    MAX_FILE_BYTES: envInt(20 * 1024 * 1024).pipe(z.number().min(1, 'must be at least 1 (bytes; 0 would refuse every upload)')),
    /** S3/MinIO object storage; the embedded directory store when unset. */
    S3_ENDPOINT: envUrl(),
    S3_ACCESS_KEY: z.string().optional(),
    S3_SECRET_KEY: z.string().optional(),
    S3_BUCKET: z.string().default('card-files'),
    S3_REGION: z.string().default('us-east-1'),
    KAFKA_BROKERS: z.string().optional(),
    MONGO_URL: z.string().optional(),
    /** How long the Idempotency-Key of a deleted file keeps refusing a repeat of its upload (409); then it uploads anew. */
    IDEMPOTENCY_KEY_TTL_HOURS: envIdempotencyKeyTtlHours(),
    /**
     * Attempts per ingestion and per file event before it fails (the dead letters), 1 to MAX_INGESTION_ATTEMPTS: 0 was
     * taken and acted as 1 (the first attempt counted as the last), a setting saying "no attempt" that did one.
     */
    INGESTION_MAX_ATTEMPTS: envInt(8).pipe(
      z
        .number()
        .min(1, 'must be at least 1 (the first attempt is one)')
        .max(MAX_INGESTION_ATTEMPTS, `must be from 1 to ${MAX_INGESTION_ATTEMPTS} (a failing file event's retries hold its consumer, up to 5 s each)`),
    ),
    /**
     * How long a deleted file's bytes are kept after its deletion, so a read of it under way (GET /api/file/:id over
     * several ReadFile calls, a raw download) completes from what was opened instead of being cut (0: removed at once).
     * 4 minutes: a 20 MiB file at ~90 KB/s; and under the chart's CardLibraryConsumerStuck threshold (300 s), which the
     * files-deleted-bytes group's oldest event, waiting its grace, would otherwise pass after every deletion.
     */
    FILE_DELETED_BYTES_GRACE_MS: envMs(4 * 60_000),
    /**
     * Hours a file's change (deletion, privacy) or ingestion waits for a cards service that does not have the method
     * yet (UNIMPLEMENTED: files released before cards, docs/deploy.md#upgrade-order), counted from the change or the
     * upload; past it the change goes to the dead letters and the ingestion fails, its owner told why. An ingestion
     * waits as long for a cards service that is down (UNAVAILABLE, unreachable), then its failures count.
     */
    FILES_UNRELEASED_RETRY_HOURS: z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined || v.trim() === '') return 24;
        const n = Number(v);
        if (!Number.isFinite(n) || n <= 0 || n > 8760) {
          ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected a positive number of hours, at most 8760 (a year), got "${v}"` });
          return z.NEVER;
        }
        return n;
      }),
    /**
     * Cards of one document created at once (CreateCard calls in flight per ingestion), 1 to MAX_INGESTION_CONCURRENCY:
     * 0 acted as 1, and 100000 sent every passage of a large document to the cards service at once.
     */
    INGESTION_CONCURRENCY: envInt(4).pipe(z.number().min(1, 'must be at least 1').max(MAX_INGESTION_CONCURRENCY, `must be at most ${MAX_INGESTION_CONCURRENCY} (cards created at once per document)`)),
    /**
     * How long a replica's claim of the file it ingests lasts unless renewed (every third of it while the attempt runs):
     * a file whose replica died is ingested by another after at most this (docs/files.md#fair-ingestion).
     */
    INGESTION_CLAIM_MS: envInt(30_000).pipe(z.number().min(1_000, 'must be at least 1000').max(3_600_000, 'must be at most 3600000 (an hour)')),
    /**
     * Documents read at once (upload checks and ingestions together): each may run a parser worker of up to 512 MB of
     * heap (~650 MB of RSS measured at its cap), so this times that must fit the memory limit (docs/files.md).
     */
    PARSER_WORKERS: envInt(2).pipe(z.number().min(1, 'must be at least 1').max(MAX_PARSER_WORKERS, `must be at most ${MAX_PARSER_WORKERS} (worker threads of up to ~650 MB each)`)),
    /** Uploads waiting for a parser worker at most; one more is answered UNAVAILABLE (HTTP 503) at once. */
    PARSER_QUEUE: envInt(4),
    /** How long an upload waits for a parser worker at most (within the gateway's GRPC_DEADLINE_MS with the 5 s check). */
    PARSER_QUEUE_WAIT_MS: envMs(4_000),
    /**
     * Upload checks one user has running or waiting for a parser worker at once at most; one more is answered
     * RESOURCE_EXHAUSTED (HTTP 429) at once, so one user's flood of uploads leaves the workers and the line to others.
     */
    PARSER_CHECKS_PER_USER: envInt(4).pipe(z.number().min(1, 'must be at least 1')),
  })
  .superRefine((c, ctx) => {
    if (!LOOPBACK.has(c.FILES_HTTP_HOST) && !c.FILES_INTERNAL_TOKEN) {
      ctx.addIssue({ code: 'custom', path: ['FILES_INTERNAL_TOKEN'], message: 'is required when FILES_HTTP_HOST is not a loopback address' });
    }
    if (c.FILES_INTERNAL_TOKEN_ALSO_ACCEPTED.length > 0 && !c.FILES_INTERNAL_TOKEN) {
      ctx.addIssue({ code: 'custom', path: ['FILES_INTERNAL_TOKEN_ALSO_ACCEPTED'], message: 'is only read with FILES_INTERNAL_TOKEN (the token the gateway sends): set that too' });
    }
    if (c.S3_ENDPOINT && (!c.S3_ACCESS_KEY || !c.S3_SECRET_KEY)) {
      ctx.addIssue({ code: 'custom', path: ['S3_ACCESS_KEY'], message: 'S3_ACCESS_KEY and S3_SECRET_KEY are required with S3_ENDPOINT' });
    }
  });

export type FilesConfig = z.infer<typeof filesConfigSchema>;

/** Every token the internal download endpoint accepts, the current one first; empty when none is configured. */
export function acceptedInternalTokens(config: Pick<FilesConfig, 'FILES_INTERNAL_TOKEN' | 'FILES_INTERNAL_TOKEN_ALSO_ACCEPTED'>): string[] {
  return config.FILES_INTERNAL_TOKEN ? [config.FILES_INTERNAL_TOKEN, ...config.FILES_INTERNAL_TOKEN_ALSO_ACCEPTED] : [];
}
