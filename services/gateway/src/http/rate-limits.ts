import type { Request, RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';

export interface RateLimitConfig {
  perIpPerMinute: number;
  perEmailPerMinute: number;
}

/** The e-mail a request is about: the path's `:email` (GET /password/:email) or the body's `email`. */
function emailOf(req: Request): string | undefined {
  const raw: unknown = typeof req.params.email === 'string' ? req.params.email : (req.body as Record<string, unknown> | undefined)?.email;
  return typeof raw === 'string' ? raw.trim().toLowerCase().slice(0, 254) : undefined;
}

const tooMany = (message: string): RequestHandler => (_req, res) => {
  res.status(429).json({ message });
};

/**
 * Per-IP and per-e-mail limits for one sensitive action (login, invitation, reset). Create them once per action and
 * put the same handlers on every route of that action, so that the routes share one count.
 */
export function authRateLimits(name: string, config: RateLimitConfig): RequestHandler[] {
  const message = 'Too many attempts, try again in a minute';
  return [
    rateLimit({ windowMs: 60_000, limit: config.perIpPerMinute, standardHeaders: 'draft-7', legacyHeaders: false, handler: tooMany(message), keyGenerator: (req) => `${name}:ip:${req.ip}` }),
    rateLimit({
      windowMs: 60_000,
      limit: config.perEmailPerMinute,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      handler: tooMany(message),
      skip: (req) => emailOf(req) === undefined,
      keyGenerator: (req) => `${name}:email:${emailOf(req) ?? ''}`,
    }),
  ];
}
