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

/** A boolean environment variable: "true"/"1"/"yes" are true, "false"/"0"/"no" false. */
export const envBoolean = (defaultValue: boolean) =>
  z
    .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? defaultValue : ['true', '1', 'yes'].includes(v)));

/** A positive integer environment variable with a default. */
export const envInt = (defaultValue: number) =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined || v === '') return defaultValue;
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) {
        ctx.addIssue({ code: z.ZodIssueCode.custom, message: `expected a non-negative integer, got "${v}"` });
        return z.NEVER;
      }
      return n;
    });

/** An optional URL; empty counts as absent. */
export const envUrl = () =>
  z
    .string()
    .optional()
    .transform((v) => (v === '' ? undefined : v))
    .pipe(z.string().url().optional());

/** host:port of a peer service, or dns:///host:port (the same, named as the gRPC target of a headless Service). */
export const envAddress = (defaultValue?: string) =>
  z
    .string()
    .optional()
    .transform((v) => (v === undefined || v === '' ? defaultValue : v))
    .pipe(z.string().regex(/^(?:dns:\/\/\/)?[^\s:/]+:\d{1,5}$/, 'expected host:port or dns:///host:port'));
