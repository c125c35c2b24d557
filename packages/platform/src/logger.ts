import pino, { type DestinationStream, type Logger } from 'pino';
import { currentRequestContext } from './request-context';

export type { Logger };

/** JSON logger (to stdout unless `destination` is given); every line written inside a request carries its request id. Secrets are redacted. */
export function createLogger(name: string, level: string = process.env.LOG_LEVEL ?? 'info', destination?: DestinationStream): Logger {
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
