import { isIP } from 'node:net';
import bytes from 'bytes';
import { z } from 'zod';
import { envAddress, envBoolean, envInt, envMs, envPort, grpcServerConfigSchema, MAX_SHUTDOWN_DRAIN_MS, urlHasScheme } from '@cards/platform';
import { ACCESS_LOG_LEVELS } from './http/access-log';
import { DEFAULT_WEB_DIST_DIR } from './http/web-app';
import { DEFAULT_MAIL_PER_IP } from './http/rate-limits';

const PROXY_PRESETS = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * The most proxies TRUST_PROXY counts. A count above the proxies really in front makes express take an entry the client
 * wrote itself in X-Forwarded-For as its address (1000 trusted every hop as `true` does, unsaid), escaping the per-IP
 * limits; no deployment has more than a few proxies appending to it.
 */
export const MAX_TRUST_PROXY_HOPS = 10;

/**
 * The most each of the gateway's own counts may be set to, and why. Above these a value no longer sets a bound, it turns
 * one off while reading like a bound (an extra digit, a value meant for another variable): the start stops, naming the
 * variable and the range. Each is well beyond what one process can hold at once; the chart's values stay far below.
 */
export const GATEWAY_COUNT_LIMITS = {
  UPLOADS_AT_ONCE: { max: 64, why: 'upload bodies held at once, ~170 MB each at a MAX_FILE_BYTES of 20 MiB' },
  UPLOAD_QUEUE: { max: 10_000, why: 'uploads waiting, each on a connection of its own' },
  FILE_READS_AT_ONCE: { max: 4_096, why: 'file reads under way, ~4 MB each for a slow reader' },
  FILE_READS_PER_CLIENT: { max: 4_096, why: "one client's file reads under way" },
  HTTP_MAX_CONNECTIONS: { max: 1_000_000, why: 'open connections, each a file descriptor; 0 is no cap' },
  // The request counts go as high as the connection cap: a test or a benchmark sets them out of reach (1000000) on purpose.
  HTTP_REQUESTS_AT_ONCE: { max: 1_000_000, why: 'API requests served at once; HTTP_MAX_CONNECTIONS goes as high' },
  HTTP_HEAVY_REQUESTS_AT_ONCE: { max: 1_000_000, why: 'searches, password checks and card writes served at once; HTTP_MAX_CONNECTIONS goes as high' },
  HTTP_REQUEST_QUEUE: { max: 10_000, why: 'API requests waiting, each with its body read (up to JSON_BODY_LIMIT)' },
  HTTP_REQUESTS_PER_CLIENT: { max: 1_000_000, why: "one client's API requests served or waiting; HTTP_MAX_CONNECTIONS goes as high" },
} as const;

/** A count of the gateway's from `min` to its GATEWAY_COUNT_LIMITS maximum; the default when unset or empty. */
const envCount = (name: keyof typeof GATEWAY_COUNT_LIMITS, defaultValue: number, min: 0 | 1) => {
  const { max, why } = GATEWAY_COUNT_LIMITS[name];
  const atLeast = min === 1 ? z.number().min(1, 'must be at least 1') : z.number();
  return envInt(defaultValue).pipe(atLeast.max(max, `must be from ${min} to ${max} (${why})`));
};

/** A preset, an address, or a CIDR whose prefix fits its address (express refuses 10.0.0.0/33 only when the app is built). */
function isProxyAddress(proxy: string): boolean {
  if (PROXY_PRESETS.includes(proxy)) return true;
  const [address = '', prefix, ...rest] = proxy.split('/');
  const version = isIP(address);
  if (rest.length > 0 || version === 0) return false;
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128));
}

/**
 * TRUST_PROXY, express's "trust proxy": false (the peer's address is the client's), a hop count (1 behind one
 * ingress: X-Forwarded-For's last entry is the client, whatever the client wrote before it), or the proxies'
 * addresses/CIDRs. `true` trusts every hop, so a client names its own address and escapes the per-IP limits; a hop
 * count is at most MAX_TRUST_PROXY_HOPS.
 */
function trustProxySetting() {
  return z
    .string()
    .optional()
    .transform((raw, ctx): boolean | number | string[] => {
      const value = (raw ?? '').trim();
      // Any case, as every other boolean setting is read (envBoolean): a chart's True is true.
      if (['', 'false', 'no'].includes(value.toLowerCase())) return false;
      if (['true', 'yes'].includes(value.toLowerCase())) return true;
      if (/^\d+$/.test(value)) {
        if (Number(value) <= MAX_TRUST_PROXY_HOPS) return Number(value);
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `a hop count must be at most ${MAX_TRUST_PROXY_HOPS} (the proxies in front that append to X-Forwarded-For; more lets a client name its own address), got "${value}"` });
        return z.NEVER;
      }
      const proxies = value.split(',').map((p) => p.trim());
      if (proxies.every(isProxyAddress)) return proxies;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected false, true, a hop count or comma-separated proxy addresses/CIDRs, got "${value}"` });
      return z.NEVER;
    });
}

export const gatewayConfigSchema = z.object({
  PORT: envPort(8090),
  HOST: z.string().default('0.0.0.0'),
  /**
   * http(s) with a host, as identity requires of the same variable: "cards.example.com:443" parsed as a URL of the
   * scheme "cards.example.com:", so the cookie lost Secure and the public origin the CSRF check allows was none.
   */
  PUBLIC_URL: z
    .string()
    .url()
    .refine((value) => urlHasScheme(value, ['http:', 'https:']), 'must be an http:// or https:// URL with a host, such as https://cards.example.com')
    .default('http://localhost:8090'),
  /** Secure cookie flag, read as every boolean (1/0, yes/no, any case); unset or empty: true when PUBLIC_URL is https. */
  COOKIE_SECURE: envBoolean(undefined),
  IDENTITY_SERVICE_ADDR: envAddress('127.0.0.1:50051'),
  CARDS_SERVICE_ADDR: envAddress('127.0.0.1:50052'),
  SEARCH_SERVICE_ADDR: envAddress('127.0.0.1:50053'),
  FILES_SERVICE_ADDR: envAddress('127.0.0.1:50054'),
  FILES_HTTP_ADDR: envAddress('127.0.0.1:50064'),
  /** The shared secret sent to the files service's download endpoint (its FILES_INTERNAL_TOKEN); unset: none sent, and files refuses every download. */
  FILES_INTERNAL_TOKEN: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
  NOTIFICATIONS_SERVICE_ADDR: envAddress('127.0.0.1:50055'),
  /** Deadline of every gRPC call, 100 ms to MAX_TIMER_MS: 0 failed every call at once, and a longer one than a timer holds after 1 ms. */
  GRPC_DEADLINE_MS: envMs(10_000, { min: 100 }),
  /**
   * After SIGTERM, how long requests under way may take to finish before their connections are cut; keep it
   * below terminationGracePeriodSeconds minus the preStop pause (chart: 30 s - 5 s).
   */
  SHUTDOWN_DRAIN_MS: envInt(20_000).pipe(z.number().max(MAX_SHUTDOWN_DRAIN_MS, `must be at most ${MAX_SHUTDOWN_DRAIN_MS} (ten minutes)`)),
  /**
   * Written as the body parser reads it (the `bytes` package): a number of bytes, or a number with kb, mb, gb, tb or pb.
   * Anything else it refuses while the app is built (a TypeError not naming the variable: 'abc') or reads by its leading
   * digits ('1MiB': 1 byte, every body 413), so it stops the start here, named.
   */
  JSON_BODY_LIMIT: z
    .string()
    .default('1mb')
    // And at least 1 byte as the parser reads it: '0.0001kb' passed the pattern and was 0 bytes (bytes floors it), every body 413.
    .refine((v) => /^(?:\d+|\d+(?:\.\d+)? *(?:kb|mb|gb|tb|pb))$/i.test(v) && (bytes.parse(v) ?? 0) >= 1, 'must be a size of at least 1 byte, such as 1mb, 512kb or 1048576 (bytes)'),
  /** At least 1: 0 was taken as a limit of 0 bytes (every upload 413), not as 'no limit'. */
  MAX_FILE_BYTES: envInt(20 * 1024 * 1024).pipe(z.number().min(1, 'must be at least 1 (bytes; 0 would refuse every upload with 413)')),
  /** Upload bodies of MAX_FILE_BYTES held at once (~170 MB each while handled; smaller ones count by their size; docs/files.md). */
  UPLOADS_AT_ONCE: envCount('UPLOADS_AT_ONCE', 1, 1),
  /** Uploads waiting, their bodies unread, at most; one more is answered 503 with Retry-After. */
  UPLOAD_QUEUE: envCount('UPLOAD_QUEUE', 16, 0),
  /** How long an upload waits at most before it is answered 503. */
  UPLOAD_QUEUE_WAIT_MS: envMs(15_000),
  /**
   * The slowest an admitted upload's body may arrive: after UPLOAD_BODY_GRACE_MS from admission, one that averages fewer
   * than UPLOAD_MIN_BYTES_PER_SECOND over the last UPLOAD_BODY_RATE_WINDOW_MS (or sends nothing) is answered 408 and its
   * slot freed, so a trickling client cannot hold the upload bound until the request timeout. 0 bytes/s: no minimum.
   */
  UPLOAD_BODY_GRACE_MS: envInt(10_000).pipe(z.number().max(300_000, 'must be at most 300000 (the request timeout)')),
  UPLOAD_MIN_BYTES_PER_SECOND: envInt(16 * 1024),
  UPLOAD_BODY_RATE_WINDOW_MS: envInt(10_000).pipe(z.number().min(100, 'must be at least 100').max(300_000, 'must be at most 300000 (the request timeout)')),
  /** GET /api/file/:id reads (content streamed) under way at most (~4 MB each for a slow reader, docs/files.md); one more is answered 503 with Retry-After. */
  FILE_READS_AT_ONCE: envCount('FILE_READS_AT_ONCE', 16, 1),
  /** File reads one client (user, else client address) has under way at most; one more is answered 429. */
  FILE_READS_PER_CLIENT: envCount('FILE_READS_PER_CLIENT', 4, 1),
  /**
   * Deadline of each ReadFile call behind such a read; a longer read goes on in a new call from the byte it reached.
   * Keep it below the services' GRPC_MAX_CONNECTION_AGE_GRACE_MS (60 s).
   */
  FILE_READ_CALL_MS: envMs(50_000, { min: 100 }),
  /** How long a GET /api/file/:id client may take none of the answer before its connection is cut and its read freed. */
  FILE_READ_IDLE_MS: envMs(60_000, { min: 100 }),
  // At least 1: express-rate-limit 7 reads 0 as "block every request" (every login, invitation and reset answered 429),
  // where 6 and older read it as "no limit"; neither is a limit an operator means.
  RATE_LIMIT_AUTH_PER_IP: envInt(600).pipe(z.number().min(1, 'must be at least 1 (0 would refuse every login, invitation and reset with 429)')),
  RATE_LIMIT_AUTH_PER_EMAIL: envInt(10).pipe(z.number().min(1, 'must be at least 1 (0 would refuse every login, invitation and reset with 429)')),
  /**
   * Requests that send e-mail to an address the caller names (invitations, reset mails), together, from one client address
   * (IPv6: its /64) per RATE_LIMIT_MAIL_WINDOW_MS; besides the per-minute limits above, which allow far more.
   */
  RATE_LIMIT_MAIL_PER_IP: envInt(DEFAULT_MAIL_PER_IP).pipe(z.number().min(1, 'must be at least 1')),
  // At most MAX_TIMER_MS: a window reaching past the last date a Date holds answered its 429 with Retry-After NaN.
  RATE_LIMIT_MAIL_WINDOW_MS: envMs(10 * 60_000, { min: 1000 }),
  /** MongoDB (its own database "gateway") where every gateway replica counts the auth rate limits; unset: this process's memory. */
  MONGO_URL: z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v)),
  TRUST_PROXY: trustProxySetting(),
  /** Comma-separated origins (https://app.example.com) allowed to call the API with the cookie from another site. */
  CORS_ORIGINS: z
    .string()
    .default('')
    .transform((v) => v.split(',').map((o) => o.trim()).filter((o) => o.length > 0))
    .refine((list) => list.every((o) => /^https?:\/\/[^/?#\s]+$/.test(o)), 'each entry must be an origin such as https://app.example.com (no path)'),
  /** Open HTTP connections at most (keep-alive ones included); a new one above it is answered 503 unread and closed. 0: no cap. */
  HTTP_MAX_CONNECTIONS: envCount('HTTP_MAX_CONNECTIONS', 10_000, 0),
  /**
   * API requests served at once (the heavy ones apart, HTTP_HEAVY_REQUESTS_AT_ONCE: searches, password checks, card creates and updates); beyond, a request
   * waits unread in a line of at most HTTP_REQUEST_QUEUE for at most HTTP_REQUEST_QUEUE_WAIT_MS, then is answered 503
   * with Retry-After. One client (user, else client address) has at most HTTP_REQUESTS_PER_CLIENT served or waiting; one more: 429.
   */
  HTTP_REQUESTS_AT_ONCE: envCount('HTTP_REQUESTS_AT_ONCE', 64, 1),
  HTTP_HEAVY_REQUESTS_AT_ONCE: envCount('HTTP_HEAVY_REQUESTS_AT_ONCE', 8, 1),
  HTTP_REQUEST_QUEUE: envCount('HTTP_REQUEST_QUEUE', 512, 0),
  HTTP_REQUEST_QUEUE_WAIT_MS: envMs(5_000),
  HTTP_REQUESTS_PER_CLIENT: envCount('HTTP_REQUESTS_PER_CLIENT', 64, 1),
  /**
   * How long an admitted /api answer may wait on a client that takes none of its bytes before its connection is cut and
   * its slot given back (Node has no timeout on an answer being sent). From 1 s (a client on a slow link still takes
   * some bytes a second) to 10 min (past it, a few dozen such clients hold every slot for good again).
   */
  HTTP_ANSWER_IDLE_MS: envMs(30_000, { min: 1_000, max: 600_000 }),
  /** Level of the one-line-per-request access log; `silent` turns it off whatever LOG_LEVEL says. */
  ACCESS_LOG_LEVEL: z.preprocess((v) => (v === '' ? undefined : v), z.enum(ACCESS_LOG_LEVELS).default('info')),
  /**
   * Serve /metrics on a listener of its own on this port, and not on PORT: an ingress that routes `/` to the gateway
   * then cannot expose it (the chart sets it). Unset: /metrics on PORT, as the all-in-one serves it.
   */
  METRICS_PORT: z.preprocess((v) => (v === '' ? undefined : v), grpcServerConfigSchema.shape.METRICS_PORT),
  METRICS_HOST: z.preprocess((v) => (v === '' ? undefined : v), grpcServerConfigSchema.shape.METRICS_HOST),
  /** The built web app served at `/`; an empty value serves none. */
  WEB_DIST_DIR: z.string().default(DEFAULT_WEB_DIST_DIR),
});

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;

export function cookieSecureFrom(config: GatewayConfig): boolean {
  return config.COOKIE_SECURE ?? config.PUBLIC_URL.startsWith('https:');
}
