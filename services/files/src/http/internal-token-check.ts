import { createHash, timingSafeEqual } from 'node:crypto';

const digestOf = (token: string) => createHash('sha256').update(token, 'utf8').digest();

/**
 * Whether a presented internal token is one of the accepted ones (the current token, and during a rotation the
 * others files also accepts). Equal-length digests are compared in constant time, every accepted one each time, so
 * neither a token's length nor which one matched shows in the answer's timing.
 */
export function internalTokenCheck(accepted: readonly string[]): (given: string | string[] | undefined) => boolean {
  const digests = accepted.map(digestOf);
  return (given) => {
    if (typeof given !== 'string') return false;
    const presented = digestOf(given);
    let matched = false;
    for (const digest of digests) matched = timingSafeEqual(digest, presented) || matched;
    return matched;
  };
}
