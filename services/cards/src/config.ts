import { z } from 'zod';
import { envAddress, envIdempotencyKeyTtlHours, envInt, envMs, envPort } from '@cards/platform';

/** The most worker threads cleaning card HTML: 100000 was taken, a thread started for each large card arriving at once. */
export const MAX_CARD_HTML_WORKERS = 32;

export const cardsConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  CARDS_GRPC_HOST: z.string().default('127.0.0.1'),
  CARDS_GRPC_PORT: envPort(50052),
  IDENTITY_SERVICE_ADDR: envAddress('127.0.0.1:50051'),
  SEARCH_SERVICE_ADDR: envAddress('127.0.0.1:50053'),
  FILES_SERVICE_ADDR: envAddress('127.0.0.1:50054'),
  /** Deadline of every gRPC call, 100 ms to MAX_TIMER_MS: 0 failed every call at once, and a longer one than a timer holds after 1 ms. */
  GRPC_DEADLINE_MS: envMs(10_000, { min: 100 }),
  /** How long card creation waits for the search service's near-duplicate verdict. */
  NEAR_DUPLICATE_DEADLINE_MS: envMs(3000, { min: 100 }),
  /** How long the Idempotency-Key of a deleted card or collection keeps refusing a repeat of its create (409); then it creates anew. */
  IDEMPOTENCY_KEY_TTL_HOURS: envIdempotencyKeyTtlHours(),
  /** Card HTML of at least this many characters is cleaned on a worker thread (~4 ms of markup on the service's thread below it). */
  CARD_HTML_WORKER_MIN_CHARS: envInt(16_384),
  /** Worker threads cleaning large card HTML at once at most (each ~70 MB, heap cap 256 MB), 1 to MAX_CARD_HTML_WORKERS. */
  CARD_HTML_WORKERS: envInt(2).pipe(z.number().min(1, 'must be at least 1').max(MAX_CARD_HTML_WORKERS, `must be at most ${MAX_CARD_HTML_WORKERS} (worker threads of up to 256 MB of heap each)`)),
  /** Large cards waiting for a worker at most, and how long; beyond: UNAVAILABLE (HTTP 503). */
  CARD_HTML_QUEUE: envInt(16),
  CARD_HTML_QUEUE_WAIT_MS: envMs(5_000),
  /** Large cards one user has being cleaned or waiting at once at most; one more: RESOURCE_EXHAUSTED (HTTP 429). */
  CARD_HTML_PER_USER: envInt(2).pipe(z.number().min(1, 'must be at least 1')),
  KAFKA_BROKERS: z.string().optional(),
  MONGO_URL: z.string().optional(),
});

export type CardsConfig = z.infer<typeof cardsConfigSchema>;
