import addressparser from 'nodemailer/lib/addressparser';
import { z } from 'zod';
import { envBoolean, envInt, envPort, MAX_TIMER_MS, refuseEmbeddedStores, urlHasScheme } from '@cards/platform';
import { isScryptCost, MAX_SCRYPT_COST } from './adapters/crypto/scrypt-password-hasher';

/** The longest interval setInterval takes (2^31 - 1 ms), in whole minutes: Node runs a longer one after 1 ms instead. */
export const MAX_SWEEP_INTERVAL_MINUTES = Math.floor((2 ** 31 - 1) / 60_000);

export const identityConfigSchema = z.object({
  DATA_DIR: z.string().default('./data'),
  IDENTITY_GRPC_HOST: z.string().default('127.0.0.1'),
  IDENTITY_GRPC_PORT: envPort(50051),
  /** HS256 secret of the session cookie; generated and kept in DATA_DIR when absent. */
  JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  /**
   * The base of the links in e-mails: an http(s) URL, trailing slashes dropped. A query, a fragment or credentials are
   * refused at start: "https://cards.example/?a=1" made every link "https://cards.example/?a=1/auth/register/…".
   */
  PUBLIC_URL: z
    .string()
    .url()
    .default('http://localhost:8090')
    .superRefine((value, ctx) => {
      // zod runs this after a failed .url() too: new URL would throw a TypeError naming no variable ('cards.example.com').
      if (!URL.canParse(value)) return;
      const url = new URL(value);
      const problem =
        url.protocol !== 'http:' && url.protocol !== 'https:'
          ? 'must be an http or https URL'
          : url.search !== '' || url.hash !== '' || value.includes('?') || value.includes('#')
            ? 'must have no query (?) or fragment (#): the links in e-mails are written after it'
            : url.username !== '' || url.password !== ''
              ? 'must have no user name or password'
              : null;
      if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
    })
    .transform((u) => u.replace(/\/+$/, '')),
  /**
   * smtp:// or smtps:// with a host. Another value was taken as a URL and handed to nodemailer, which read
   * "smtp.example.com:587" as the host "587": identity started, and every invitation and reset mail then timed out (503).
   */
  SMTP_URL: z
    .string()
    .url()
    .refine((value) => urlHasScheme(value, ['smtp:', 'smtps:']), 'must be smtp://host:port or smtps://host:port (user and password in it, e.g. smtp://user:pass@mail.example.com:587)')
    .superRefine((value, ctx) => {
      const problem = smtpTimeoutProblem(value);
      if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
    })
    .optional()
    .or(z.literal('').transform(() => undefined)),
  /**
   * One sender, "Name <address>" or a bare address. Anything else is refused at start: a name without an address
   * ("Card Library") wrote mail without a From header (and SMTP servers refuse it: every invitation 503), two addresses
   * a From that RFC 5322 allows only with a Sender. Empty (a chart's `mailFrom: ""`) is the default, as SMTP_URL's is.
   */
  MAIL_FROM: z.preprocess(
    (value) => (typeof value === 'string' && value.trim() === '' ? undefined : value),
    z
      .string()
      .default('Card Library <no-reply@card-library.local>')
      .superRefine((value, ctx) => {
        const problem = mailFromProblem(value);
        if (problem) ctx.addIssue({ code: z.ZodIssueCode.custom, message: problem });
      }),
  ),
  /** With EMBEDDED_STORES=refuse and no SMTP_URL: write mail as .eml files under DATA_DIR/mail instead of refusing to start. */
  MAIL_TO_FILES: envBoolean(false),
  /** .eml files in DATA_DIR/mail older than this are deleted (at start and at every sweep); links in them expire after 1 h or 24 h. */
  MAIL_DIR_RETENTION_HOURS: envInt(72).pipe(z.number().min(1, 'must be at least 1 (hour)')),
  /**
   * How often expired sessions, invitations and reset links are deleted (and the .eml files pruned); also once at start.
   * At most MAX_SWEEP_INTERVAL_MINUTES: a longer interval does not fit Node's timers, which then run it every millisecond.
   */
  IDENTITY_SWEEP_INTERVAL_MINUTES: envInt(10).pipe(
    z
      .number()
      .min(1, 'must be at least 1 (minute)')
      .max(MAX_SWEEP_INTERVAL_MINUTES, `must be at most ${MAX_SWEEP_INTERVAL_MINUTES} (minutes, about 24 days: a longer interval overflows Node's timers, which then sweep every millisecond)`),
  ),
  /**
   * scrypt N; lower it only in tests. A power of two (scrypt's rule) up to MAX_SCRYPT_COST: another value started
   * identity, then failed every new hash (registrations, resets, and logins of unknown addresses: 500, not 401).
   */
  PASSWORD_HASH_COST: envInt(16384).pipe(
    z.number().refine((n) => isScryptCost(n) && n <= MAX_SCRYPT_COST, `must be a power of two from 2 to ${MAX_SCRYPT_COST} (scrypt's N: 16384 by default, ${MAX_SCRYPT_COST} as OWASP recommends)`),
  ),
  MONGO_URL: z.string().optional(),
});

/** The SMTP client's waits SMTP_URL's query may set (SMTP_TIMEOUTS). */
const SMTP_TIMEOUT_OPTIONS = ['dnsTimeout', 'connectionTimeout', 'greetingTimeout', 'socketTimeout'] as const;

/**
 * Why a wait in SMTP_URL's query (`?socketTimeout=30000`) cannot be the client's, or null: each must be 1 to MAX_TIMER_MS
 * ms. Above, Node's timers ran it after 1 ms (every mail failed at once); 0 is read by nodemailer as its own wait (2 to
 * 10 minutes), so a stalled server held each invitation past the gateway's deadline, what SMTP_TIMEOUTS are there to end.
 */
export function smtpTimeoutProblem(value: string): string | null {
  let query: URLSearchParams;
  try {
    query = new URL(value).searchParams;
  } catch {
    return null;
  }
  for (const name of SMTP_TIMEOUT_OPTIONS) {
    const raw = query.get(name);
    if (raw === null) continue;
    const ms = Number(raw);
    if (raw.trim() === '' || !Number.isInteger(ms) || ms < 1 || ms > MAX_TIMER_MS) return `${name} in its query must be 1 to ${MAX_TIMER_MS} (ms), got "${raw}"`;
  }
  return null;
}

/** Why MAIL_FROM cannot be the sender of the mail, or null. */
export function mailFromProblem(value: string): string | null {
  if (/[\r\n]/.test(value)) return 'must be on one line';
  const senders = addressparser(value, { flatten: true });
  if (senders.length !== 1) return `must name exactly one sender, such as "Card Library <no-reply@cards.example.com>" (found ${senders.length})`;
  if (!/^[^\s@]+@[^\s@]+$/.test(senders[0]!.address)) return `must hold an e-mail address, such as "Card Library <no-reply@cards.example.com>"`;
  return null;
}

export type IdentityConfig = z.infer<typeof identityConfigSchema>;

/**
 * With EMBEDDED_STORES=refuse (a pod without a volume of its own), stops at start naming each of identity's engine
 * variables left unset or empty. SMTP_URL is one of them: without it invitation and reset mail would go to .eml files on
 * the pod's disk, which nobody reads, so nobody could register or reset a password. MAIL_TO_FILES=true is the operator's
 * explicit choice of no mail delivery.
 */
export function refuseIdentityEmbeddedStores(env: Record<string, string | undefined>): void {
  const mailToFiles = identityConfigSchema.shape.MAIL_TO_FILES.safeParse(env.MAIL_TO_FILES);
  const smtpRequired = !(mailToFiles.success && mailToFiles.data);
  refuseEmbeddedStores(env, ['MONGO_URL', 'JWT_SECRET', ...(smtpRequired ? ['SMTP_URL'] : [])]);
}
