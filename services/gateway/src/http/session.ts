import type { NextFunction, Request, Response } from 'express';
import { ClientError, Status } from 'nice-grpc';
import type { identity } from '@cards/proto';
import type { GrpcClient } from '@cards/platform';
import { unauthorized } from './http-error';

export const SESSION_COOKIE = 'ai-editor';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** The logged-in caller, resolved from the ai-editor cookie through identity on every request. */
      user?: identity.User;
      sessionToken?: string;
    }
  }
}

/** Resolves the cookie on every request so a logout revokes at once; a bad cookie just means anonymous. */
export function sessionMiddleware(identityClient: GrpcClient<typeof identity.IdentityServiceDefinition>) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    const token: unknown = req.cookies?.[SESSION_COOKIE];
    if (typeof token !== 'string' || token.length === 0 || token.length > 4096) return next();
    try {
      req.user = await identityClient.resolveSession({ token }, { idempotent: true });
      req.sessionToken = token;
    } catch (err) {
      if (!(err instanceof ClientError && err.code === Status.UNAUTHENTICATED)) return next(err);
    }
    next();
  };
}

/** The caller, or 401. */
export function requireUser(req: Request): identity.User {
  if (!req.user) throw unauthorized();
  return req.user;
}
