import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The shortest HS256 secret accepted, configured or kept in the data directory. */
export const MIN_JWT_SECRET_LENGTH = 32;

/**
 * The session-signing secret: JWT_SECRET when configured, else the one generated into `<dataDir>/identity/jwt-secret`
 * at the first start, so sessions survive restarts. A kept secret shorter than MIN_JWT_SECRET_LENGTH (an emptied,
 * truncated or hand-edited file) stops the start: signing with it would let anyone forge a session.
 */
export function jwtSecretFrom(dataDir: string, configured: string | undefined): string {
  if (configured) return configured;
  const directory = join(dataDir, 'identity');
  const path = join(directory, 'jwt-secret');
  if (!existsSync(path)) createSecretFile(directory, path);
  const secret = readFileSync(path, 'utf8').trim();
  if (secret.length < MIN_JWT_SECRET_LENGTH) {
    throw new Error(`${path} holds a secret shorter than ${MIN_JWT_SECRET_LENGTH} characters: delete the file to have a new one generated (every session ends) or set JWT_SECRET`);
  }
  return secret;
}

/** Written whole under another name, then linked into place: never half a secret, and a second process starting at once reads the first one's. */
function createSecretFile(directory: string, path: string): void {
  mkdirSync(directory, { recursive: true });
  const draft = join(directory, `.jwt-secret-${process.pid}-${randomBytes(4).toString('hex')}`);
  writeFileSync(draft, randomBytes(48).toString('base64url'), { mode: 0o600, flush: true });
  try {
    linkSync(draft, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    rmSync(draft, { force: true });
  }
}
