import pino, { type DestinationStream, type Logger } from 'pino';
import { ConfigError } from './config';
import { currentRequestContext } from './request-context';

export type { Logger };

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * LOG_LEVEL: a pino level in any case, `info` when unset, empty or only spaces. Another value stops the start naming
 * the variable: pino refused '' and ' info' with 'default level: must be included in custom levels', naming none.
 */
export function logLevelOf(env: Record<string, string | undefined> = process.env): string {
  const level = (env.LOG_LEVEL ?? '').trim().toLowerCase();
  if (level === '') return 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(level)) throw new ConfigError([`LOG_LEVEL: expected one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`]);
  return level;
}

/** JSON logger (to stdout unless `destination` is given); every line written inside a request carries its request id. Secrets are redacted. */
export function createLogger(name: string, level: string = logLevelOf(), destination?: DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    name,
    level,
    base: { service: name },
    redact: {
      paths: ['password', '*.password', 'password_confirmation', '*.password_confirmation', 'token', '*.token', 'req.headers.cookie', 'res.headers["set-cookie"]', 'secret', '*.secret'],
      censor: '[redacted]',
    },
    mixin() {
      const ctx = currentRequestContext();
      return ctx ? { reqId: ctx.requestId } : {};
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
