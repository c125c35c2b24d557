import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { PasswordHasher } from '../../domain/ports';

/** The most scrypt cost (N) identity takes: OWASP's recommendation for scrypt (N = 2^17, r = 8, p = 1), 128 MiB a hash. */
export const MAX_SCRYPT_COST = 2 ** 17;

/** scrypt's own rule for N: a power of two above 1. */
export function isScryptCost(n: number): boolean {
  return Number.isSafeInteger(n) && n > 1 && (n & (n - 1)) === 0;
}

/**
 * The memory scrypt may take for these parameters: what it needs (128 * N * r bytes, and a little more), with room,
 * and never less than 64 MiB. A fixed 64 MiB refused N = 65536 ("memory limit exceeded"), so a raised cost failed
 * every new hash: registrations and resets, and logins of unknown addresses (whose dummy hash is new) answered 500
 * while a wrong password of a known one answered 401.
 */
function maxmemFor(n: number, r: number): number {
  return Math.max(64 * 1024 * 1024, 2 * 128 * n * r);
}

function scryptAsync(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => scrypt(password, salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** scrypt with a per-password salt; the parameters are stored in the hash so they can be raised later. */
export class ScryptPasswordHasher implements PasswordHasher {
  constructor(private readonly cost = 16384) {}

  async hash(password: string): Promise<string> {
    const salt = randomBytes(16);
    const key = await scryptAsync(password, salt, 32, { N: this.cost, r: 8, p: 1, maxmem: maxmemFor(this.cost, 8) });
    return `scrypt$${this.cost}$8$1$${salt.toString('base64')}$${key.toString('base64')}`;
  }

  async verify(password: string, stored: string): Promise<boolean> {
    const [scheme, n, r, p, salt, key] = stored.split('$');
    if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key) return false;
    const expected = Buffer.from(key, 'base64');
    const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length, { N: Number(n), r: Number(r), p: Number(p), maxmem: maxmemFor(Number(n), Number(r)) });
    await this.padToCost(Number(n));
    return timingSafeEqual(actual, expected);
  }

  /** The hash was made with another cost (or r, p) than hash() uses now. */
  needsRehash(stored: string): boolean {
    const [scheme, n, r, p] = stored.split('$');
    return scheme === 'scrypt' && (Number(n) !== this.cost || r !== '8' || p !== '1');
  }

  /**
   * After checking a hash of cost `checked` below the current one, the rest of the current cost's work: scrypt's time
   * grows with N, and the powers of two from `checked` up to half the cost add up to cost - checked. A login of an
   * unknown address is checked against a hash made now (IdentityService's dummy hash), so without this a known address
   * whose hash is from before the cost was raised answered several times sooner (65536 over 16384: ~0.17 s against
   * ~0.5 s through the gateway), telling anyone which addresses have accounts.
   */
  private async padToCost(checked: number): Promise<void> {
    if (!isScryptCost(checked)) return;
    for (let n = checked; n < this.cost; n *= 2) await scryptAsync('', PADDING_SALT, 32, { N: n, r: 8, p: 1, maxmem: maxmemFor(n, 8) });
  }
}

const PADDING_SALT = Buffer.alloc(16);
