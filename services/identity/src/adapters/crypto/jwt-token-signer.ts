import { createSecretKey, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { TokenSigner } from '../../domain/ports';

/** HS256 JWT whose jti is the session id; the session row decides whether it is still valid. */
export class JwtTokenSigner implements TokenSigner {
  // jsonwebtoken turns a string secret into a KeyObject on every call (~0.5 ms here); once is enough.
  private readonly key: KeyObject;

  constructor(secret: string) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  sign(sessionId: string, userId: string, expiresAt: Date): string {
    return jwt.sign({ sub: userId, jti: sessionId, exp: Math.floor(expiresAt.getTime() / 1000) }, this.key, { algorithm: 'HS256' });
  }

  verify(token: string): { sessionId: string; userId: string } | null {
    if (token.length > 4096) return null;
    try {
      const claims = jwt.verify(token, this.key, { algorithms: ['HS256'] });
      if (typeof claims !== 'object' || typeof claims.jti !== 'string' || typeof claims.sub !== 'string') return null;
      return { sessionId: claims.jti, userId: claims.sub };
    } catch {
      return null;
    }
  }
}
