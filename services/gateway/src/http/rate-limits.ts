import type { Request, RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';

export interface RateLimitConfig {
  perIpPerMinute: number;
  perEmailPerMinute: number;
}

function emailOf(req: Request, from: 'body' | 'param'): string | undefined {
  const raw: unknown = from === 'body' ? (req.body as Record<string, unknown> | undefined)?.email : req.params.email;
  return typeof raw === 'string' ? raw.trim().toLowerCase().slice(0, 254) : undefined;
}

const tooMany = (message: string): RequestHandler => (_req, res) => {
  res.status(429).json({ message });
};

/** Per-IP and per-e-mail limits for one sensitive route (login, invitation, reset). */
export function authRateLimits(name: string, config: RateLimitConfig, emailFrom: 'body' | 'param'): RequestHandler[] {
  const message = 'Too many attempts, try again in a minute';
  return [
    rateLimit({ windowMs: 60_000, limit: config.perIpPerMinute, standardHeaders: 'draft-7', legacyHeaders: false, handler: tooMany(message), keyGenerator: (req) => `${name}:ip:${req.ip}` }),
    rateLimit({
      windowMs: 60_000,
      limit: config.perEmailPerMinute,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      handler: tooMany(message),
      skip: (req) => emailOf(req, emailFrom) === undefined,
      keyGenerator: (req) => `${name}:email:${emailOf(req, emailFrom) ?? ''}`,
    }),
  ];
}
