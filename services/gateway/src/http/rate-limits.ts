import type { Request, RequestHandler } from 'express';
import { rateLimit, type IncrementResponse, type Options, type Store } from 'express-rate-limit';
import type { AttemptCounter } from '../domain/attempt-counter';

export interface RateLimitConfig {
  perIpPerMinute: number;
  perEmailPerMinute: number;
  /** Where attempts are counted: this process's memory, or a store every gateway replica shares. */
  counter: AttemptCounter;
}

/**
 * The e-mail a request is about: the path's `:email` (GET /password/:email) or the body's `email`, in the one form
 * identity gives every spelling of an address (trimmed, lower-cased, NFC), so spellings share one count.
 */
function emailOf(req: Request): string | undefined {
  const raw: unknown = typeof req.params.email === 'string' ? req.params.email : (req.body as Record<string, unknown> | undefined)?.email;
  return typeof raw === 'string' ? raw.trim().toLowerCase().normalize('NFC').slice(0, 254) : undefined;
}

const tooMany = (message: string): RequestHandler => (_req, res) => {
  res.status(429).json({ message });
};

/** express-rate-limit's view of an AttemptCounter; one per limiter, as express-rate-limit wants. */
class AttemptCounterStore implements Store {
  private windowMs = 60_000;
  // Keys of this store can be counted by other stores (other replicas): tells express-rate-limit not to treat them as local.
  readonly localKeys = false;

  constructor(private readonly counter: AttemptCounter) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
  }

  async increment(key: string): Promise<IncrementResponse> {
    const { attempts, windowEndsAt } = await this.counter.record(key, this.windowMs);
    return { totalHits: attempts, resetTime: windowEndsAt };
  }

  decrement(key: string): Promise<void> {
    return this.counter.takeBack(key, this.windowMs);
  }

  resetKey(key: string): Promise<void> {
    return this.counter.forget(key);
  }
}

/**
 * Per-IP and per-e-mail limits for one sensitive action (login, invitation, reset). Create them once per action and
 * put the same handlers on every route of that action, so that the routes share one count.
 */
export function authRateLimits(name: string, config: RateLimitConfig): RequestHandler[] {
  const message = 'Too many attempts, try again in a minute';
  const common = { windowMs: 60_000, standardHeaders: 'draft-7', legacyHeaders: false, handler: tooMany(message) } as const;
  return [
    rateLimit({ ...common, limit: config.perIpPerMinute, store: new AttemptCounterStore(config.counter), keyGenerator: (req) => `${name}:ip:${req.ip}` }),
    rateLimit({
      ...common,
      limit: config.perEmailPerMinute,
      store: new AttemptCounterStore(config.counter),
      skip: (req) => emailOf(req) === undefined,
      keyGenerator: (req) => `${name}:email:${emailOf(req) ?? ''}`,
    }),
  ];
}
