import { z } from 'zod';

/** Thrown when the environment does not satisfy a service's config schema; names every bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** Parses the environment with a zod schema, failing fast with one message that names every bad variable. */
export function loadConfig<S extends z.ZodTypeAny>(schema: S, env: Record<string, string | undefined> = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`);
  throw new ConfigError(problems);
}

/**
 * A boolean environment variable: "true"/"1"/"yes" are true, "false"/"0"/"no" false, in any case and with spaces around
 * (a chart's `True`); empty is the default; anything else stops the start naming the variable. A default of undefined
 * leaves the choice to another setting when unset (COOKIE_SECURE: from PUBLIC_URL).
 */
export const envBoolean = <D extends boolean | undefined>(defaultValue: D) =>
  z
    .string()
    .optional()
    .transform((raw, ctx): boolean | D => {
      const v = (raw ?? '').trim().toLowerCase();
      if (v === '') return defaultValue;
      if (['true', '1', 'yes'].includes(v)) return true;
      if (['false', '0', 'no'].includes(v)) return false;
      ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected true or false (also 1/0, yes/no), got "${raw}"` });
      return z.NEVER;
    });

/** One boolean variable read on its own as envBoolean reads it (a ConfigError naming it when it is neither). */
export function booleanSetting(env: Record<string, string | undefined>, name: string, defaultValue: boolean): boolean {
  return (loadConfig(z.object({ [name]: envBoolean(defaultValue) }), { [name]: env[name] }) as Record<string, boolean>)[name]!;
}

/**
 * A non-negative integer environment variable with a default. Empty or only spaces is the default (Number(" ") is 0:
 * a chart's `value: " "` made a deadline of 0 ms or a cap of none); beyond Number.MAX_SAFE_INTEGER it is refused, as
 * such a number is no longer the one written.
 */
export const envInt = (defaultValue: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v.trim() === '') return defaultValue;
      const n = Number(v);
      if (!Number.isSafeInteger(n) || n < 0) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected a non-negative integer (at most ${Number.MAX_SAFE_INTEGER}), got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

/**
 * The longest delay Node's timers hold (2^31 - 1 ms, about 24.8 days): setTimeout or setInterval given more runs it
 * after 1 ms instead (a TimeoutOverflowWarning), so a deadline of 30 days expired at once and an interval ran every ms.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * A number of milliseconds that reaches a timer: an integer from `min` to `max` (at most MAX_TIMER_MS), the default when
 * unset or empty; anything else stops the start naming the variable and the range.
 */
export const envMs = (defaultValue: number, { min = 0, max = MAX_TIMER_MS }: { min?: number; max?: number } = {}) =>
  envInt(defaultValue).pipe(
    z
      .number()
      .min(min, `must be at least ${min} (ms)`)
      .max(Math.min(max, MAX_TIMER_MS), max >= MAX_TIMER_MS ? `must be at most ${MAX_TIMER_MS} (ms, about 24.8 days: Node's timers run a longer delay after 1 ms)` : `must be at most ${max} (ms)`),
  );

/**
 * A TCP port to listen on, 0 to 65535 (0: one the system picks). Above, the listener refused it only once the service
 * had opened its stores, with Node's RangeError 'options.port should be >= 0 and < 65536', naming no variable.
 */
export const envPort = (defaultValue: number) => envInt(defaultValue).pipe(z.number().max(65_535, 'must be a port from 0 to 65535'));

/** Whether `value` parses as a URL of one of `schemes` (as 'https:') with a host; false when it does not parse (zod runs a refine after a failed .url()). */
export function urlHasScheme(value: string, schemes: readonly string[]): boolean {
  try {
    const url = new URL(value);
    return schemes.includes(url.protocol.toLowerCase()) && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * An optional http(s) URL with a host (an engine's or an endpoint's); empty counts as absent. Another scheme was taken
 * as a URL ("localhost:9200" has the scheme "localhost:") and refused only by the client later, naming no variable.
 */
export const envUrl = () =>
  z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v))
    .pipe(
      z
        .string()
        .url()
        .refine((value) => urlHasScheme(value, ['http:', 'https:']), 'must be an http:// or https:// URL with a host, such as http://elasticsearch:9200')
        .optional(),
    );

/** host:port of a peer service, or dns:///host:port (the same, named as the gRPC target of a headless Service). */
export const envAddress = (defaultValue?: string) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === '' ? defaultValue : v))
    .pipe(z.string().regex(/^(?:dns:\/\/\/)?[^\s:/]+:\d{1,5}$/, 'expected host:port or dns:///host:port'));

/**
 * Whether a service keeps everything on its engines, so nothing under DATA_DIR: every one of its engine variables is
 * set (an empty list: the all-in-one, which always keeps its stores there). The data dir's set-up (privacy, free-space
 * watch) is skipped then.
 */
export function keepsNothingUnderDataDir(env: Record<string, string | undefined>, engineVariables: readonly string[]): boolean {
  return engineVariables.length > 0 && engineVariables.every((name) => env[name]?.trim());
}

/**
 * With EMBEDDED_STORES=refuse (the Helm chart sets it on every pod without a volume of its own), a service whose engine
 * variables are unset or empty stops at start naming them, instead of falling back to its embedded store (SQLite, the
 * local event log, a generated key) on a disk that dies with the pod. Unset or `allow`: the embedded defaults as ever.
 */
export function refuseEmbeddedStores(env: Record<string, string | undefined>, engineVariables: readonly string[]): void {
  const mode = env.EMBEDDED_STORES ?? '';
  if (mode === '' || mode === 'allow') return;
  if (mode !== 'refuse') throw new ConfigError([`EMBEDDED_STORES: expected "refuse" or "allow", got "${mode}"`]);
  const missing = engineVariables.filter((name) => !env[name]?.trim());
  if (missing.length > 0) throw new ConfigError(missing.map((name) => `${name}: required with EMBEDDED_STORES=refuse (empty or unset would keep this service's data on the pod's own disk)`));
}
