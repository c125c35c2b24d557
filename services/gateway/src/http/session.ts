import type { NextFunction, Request, Response } from 'express';
import DataLoader from 'dataloader';
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
      /**
       * Why the cookie is not known to be a session or not: identity could not be asked (identityCouldNotAnswer). Set only
       * on a route that answers that itself (sessionMiddleware's answersLookupFailure: the logout); elsewhere it fails the request.
       */
      sessionLookupError?: ClientError;
    }
  }
}

type IdentityClient = GrpcClient<typeof identity.IdentityServiceDefinition>;

/** The caller behind a token, or null when it is not a live session. */
export type SessionResolver = (token: string) => Promise<identity.User | null>;

/**
 * Resolves session tokens through identity, batching the requests that arrive in one turn of the event loop
 * into one ResolveSessions call: under load one gRPC round trip serves many requests, while each request is
 * still checked by identity when it arrives (nothing is cached, so a logout revokes at once). An identity one
 * version behind (no ResolveSessions yet) answers UNIMPLEMENTED: then each token gets its own ResolveSession.
 */
export function batchingSessionResolver(identityClient: IdentityClient, maxBatchSize = 100): SessionResolver {
  let batchingSupported = true;
  const one = async (token: string): Promise<identity.User | null> => {
    try {
      return await identityClient.resolveSession({ token }, { idempotent: true });
    } catch (err) {
      if (err instanceof ClientError && err.code === Status.UNAUTHENTICATED) return null;
      throw err;
    }
  };
  const loader = new DataLoader<string, identity.User | null>(
    async (tokens) => {
      if (batchingSupported && tokens.length > 1) {
        try {
          const { resolutions } = await identityClient.resolveSessions({ tokens: [...tokens] }, { idempotent: true });
          return tokens.map((_, i) => resolutions[i]?.user ?? null);
        } catch (err) {
          if (!(err instanceof ClientError && err.code === Status.UNIMPLEMENTED)) throw err;
          batchingSupported = false;
        }
      }
      return Promise.all(tokens.map((token) => one(token).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))))));
    },
    // No cache: every request asks identity. setImmediate gathers the requests parsed in the same poll phase.
    { cache: false, maxBatchSize, batchScheduleFn: (callback) => setImmediate(callback) },
  );
  return (token) => loader.load(token);
}

/** Identity could not be asked or could not answer (gRPC UNAVAILABLE, its storage full among them, or a deadline): expected in an outage. */
export function identityCouldNotAnswer(err: unknown): err is ClientError {
  return err instanceof ClientError && (err.code === Status.UNAVAILABLE || err.code === Status.DEADLINE_EXCEEDED);
}

export interface SessionMiddlewareOptions {
  /**
   * The requests whose route answers a lookup identity could not make itself (req.sessionLookupError): the logout, which
   * clears the cookie all the same. Any other request with a cookie fails closed with the error (503).
   */
  answersLookupFailure?: (req: Request) => boolean;
}

/** Session cookies of one request asked about at most: a browser holds one per domain and path it was set for. */
const MAX_SESSION_COOKIES = 4;

/**
 * Every `ai-editor` value in the request's Cookie header, in the order sent, decoded as cookie-parser decodes one
 * (quotes dropped, percent-escapes read); empty, over-long and repeated values left out.
 */
export function sessionTokensOf(cookieHeader: string | undefined): string[] {
  const tokens: string[] = [];
  for (const pair of (cookieHeader ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at < 0 || pair.slice(0, at).trim() !== SESSION_COOKIE) continue;
    let value = pair.slice(at + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1);
    try {
      value = decodeURIComponent(value);
    } catch {
      // As cookie-parser: a value with a broken escape is kept as sent.
    }
    if (value.length === 0 || value.length > 4096 || tokens.includes(value)) continue;
    tokens.push(value);
    if (tokens.length === MAX_SESSION_COOKIES) break;
  }
  return tokens;
}

/**
 * Resolves the cookie on every request so a logout revokes at once; a bad cookie just means anonymous. A browser sends
 * two `ai-editor` cookies when one was set for another path or a parent domain (a sibling subdomain can set one), the
 * more specific first: the first that is a live session counts. Only the first counted before, so such a cookie holding
 * anything signed the user out at every request, and GET /api/auth then cleared the user's own cookie.
 */
export function sessionMiddleware(resolve: SessionResolver, options: SessionMiddlewareOptions = {}) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    for (const token of sessionTokensOf(req.headers.cookie)) {
      try {
        const user = await resolve(token);
        if (user) {
          req.user = user;
          req.sessionToken = token;
          break;
        }
      } catch (err) {
        if (identityCouldNotAnswer(err) && options.answersLookupFailure?.(req)) {
          req.sessionLookupError = err;
          break;
        }
        return next(err);
      }
    }
    next();
  };
}

/** The caller, or 401. */
export function requireUser(req: Request): identity.User {
  if (!req.user) throw unauthorized();
  return req.user;
}
