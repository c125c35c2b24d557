import { isIP } from 'node:net';
import { hostPortKey, isPublicAddress, normalizeHost } from './address-policy';
import type { HostResolver } from './ports';

/** Thrown when a link leads to an address the verification policy forbids (private, loopback, link-local, ...). */
export class RefusedAddressError extends Error {
  constructor(readonly host: string, readonly address: string) {
    super(`refused: ${host} resolves to non-public address ${address}`);
    this.name = 'RefusedAddressError';
  }
}

/** Thrown when a host name has no address. */
export class UnresolvableHostError extends Error {
  constructor(readonly host: string, cause?: unknown) {
    super(`host ${host} does not resolve`, { cause });
    this.name = 'UnresolvableHostError';
  }
}

export interface AddressPolicy {
  /** VERIFY_ALLOW_PRIVATE: every address may be contacted. */
  allowPrivate: boolean;
  /** VERIFY_ALLOW_HOSTS: exact host:port keys (see hostPortKey) let through whatever they resolve to. */
  allowedHosts: ReadonlySet<string>;
}

/**
 * Decides, after DNS resolution, which address a connection may go to. Every resolved address must
 * be public (one bad address refuses the host: a resolver may rotate), and the connection is then
 * made to exactly the checked address, so a second lookup cannot swap it (DNS rebinding).
 */
export class AddressGuard {
  constructor(
    private readonly resolver: HostResolver,
    private readonly policy: AddressPolicy,
  ) {}

  /** The address to connect to for host:port; throws RefusedAddressError or UnresolvableHostError. */
  async addressFor(host: string, port: number): Promise<string> {
    const hostname = normalizeHost(host);
    let addresses: string[];
    if (isIP(hostname)) addresses = [hostname];
    else {
      try {
        addresses = await this.resolver.resolve(hostname);
      } catch (err) {
        throw new UnresolvableHostError(hostname, err);
      }
    }
    if (addresses.length === 0) throw new UnresolvableHostError(hostname);
    if (!this.policy.allowPrivate && !this.policy.allowedHosts.has(hostPortKey(hostname, port))) {
      const refused = addresses.find((a) => !isPublicAddress(a));
      if (refused !== undefined) throw new RefusedAddressError(hostname, refused);
    }
    return addresses[0]!;
  }
}
