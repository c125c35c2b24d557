import { domainToASCII } from 'node:url';
import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';
import { emailKey } from '@cards/card-rules';
import type { Request, RequestHandler } from 'express';
import { rateLimit, type IncrementResponse, type Options, type Store } from 'express-rate-limit';
import { serviceCounter } from '@cards/platform';
import type { AttemptCounter } from '../domain/attempt-counter';

export interface RateLimitConfig {
  perIpPerMinute: number;
  perEmailPerMinute: number;
  /**
   * Requests that send e-mail (invitations, reset mails) from one client address per `mailWindowMs`, counted together
   * over those routes and besides the per-minute limits (RATE_LIMIT_MAIL_PER_IP, RATE_LIMIT_MAIL_WINDOW_MS); 200 per
   * 10 minutes when unset.
   */
  mailPerIp?: number;
  mailWindowMs?: number;
  /** Where attempts are counted: this process's memory, or a store every gateway replica shares. */
  counter: AttemptCounter;
}

/**
 * The e-mail a request is about: the path's `:email` (GET /password/:email) or the body's `email`, in the one form
 * identity gives every spelling of an address (card-rules' emailKey, identity's account key: trimmed, lower-cased, NFC,
 * the domain in IDNA's ASCII form, "exämple.com" is "xn--exmple-cua.com", one final dot dropped), so spellings share one
 * count. Cut to 254 characters first, the longest address identity takes, so a long body costs no more.
 */
function emailOf(req: Request): string | undefined {
  const raw: unknown = typeof req.params.email === 'string' ? req.params.email : (req.body as Record<string, unknown> | undefined)?.email;
  if (typeof raw !== 'string') return undefined;
  return emailKey(raw.trim().slice(0, 254), domainToASCII);
}

export const DEFAULT_MAIL_PER_IP = 200;
export const DEFAULT_MAIL_WINDOW_MS = 10 * 60_000;

/**
 * The client a per-address limit counts: an IPv4 address as it is (also when written IPv4-mapped, `::ffff:1.2.3.4`),
 * an IPv6 address by its /64, which one subscriber gets whole and can rotate through without end.
 */
export function clientAddressKey(ip: string | undefined): string {
  if (ip === undefined || ip === '') return 'unknown';
  const address = ip.split('%')[0]!;
  if (isIPv4(address) || !isIPv6(address)) return address;
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  return `${parsed.parts.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** "in 1 second", "in 42 seconds", "in 2 minutes": the wait Retry-After gives, in words. */
export function waitInWords(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  if (s < 120) return `in ${s} second${s === 1 ? '' : 's'}`;
  return `in ${Math.ceil(s / 60)} minutes`;
}

/** Requests answered 429 by a limit: `login_ip`, `login_email`, `invitation_ip`, …, `mail_ip` (no address, no e-mail). */
const rateLimited = serviceCounter('card_library_rate_limited_total', 'Requests the gateway answered 429 by rate limit: <action>_ip, <action>_email (action: login, invitation, reset) and mail_ip', ['limit'] as const);

// The message names the wait the limiter's window still has (what Retry-After says), not a fixed "a minute".
const tooMany = (message: string, limit: string): RequestHandler => {
  // The series exists at 0 from the start, so a rate over it is defined before the first 429.
  rateLimited.inc({ limit }, 0);
  return (req, res) => {
    rateLimited.inc({ limit });
    const resetTime = (req as { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
    const wait = resetTime ? waitInWords((resetTime.getTime() - Date.now()) / 1000) : 'later';
    res.status(429).json({ message: `${message}, try again ${wait}` });
  };
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
  const message = 'Too many attempts';
  const common = { windowMs: 60_000, standardHeaders: 'draft-7', legacyHeaders: false } as const;
  return [
    rateLimit({ ...common, handler: tooMany(message, `${name}_ip`), limit: config.perIpPerMinute, store: new AttemptCounterStore(config.counter), keyGenerator: (req) => `${name}:ip:${clientAddressKey(req.ip)}` }),
    rateLimit({
      ...common,
      handler: tooMany(message, `${name}_email`),
      limit: config.perEmailPerMinute,
      store: new AttemptCounterStore(config.counter),
      skip: (req) => emailOf(req) === undefined,
      keyGenerator: (req) => `${name}:email:${emailOf(req) ?? ''}`,
    }),
  ];
}

/**
 * The per-address limit of the routes that send e-mail to an address the caller names (POST /invitation, GET /password/:email,
 * POST /password asking for the mail): create it once and put the same handler on each, so they share one count. Without it
 * one client could have the service mail RATE_LIMIT_AUTH_PER_IP strangers a minute.
 */
export function mailRateLimit(config: RateLimitConfig): RequestHandler {
  return rateLimit({
    windowMs: config.mailWindowMs ?? DEFAULT_MAIL_WINDOW_MS,
    limit: config.mailPerIp ?? DEFAULT_MAIL_PER_IP,
    standardHeaders: 'draft-7',
    legacyHeaders: false,
    handler: tooMany('Too many e-mails asked for from this address', 'mail_ip'),
    store: new AttemptCounterStore(config.counter),
    keyGenerator: (req) => `mail:ip:${clientAddressKey(req.ip)}`,
  });
}
