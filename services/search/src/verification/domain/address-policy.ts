import { BlockList, isIP } from 'node:net';

/**
 * Addresses a verification fetch must never reach unless explicitly allowed: everything that is not
 * ordinary public unicast (IANA special-purpose registries). IPv4-mapped and IPv4-compatible IPv6
 * forms are matched against the IPv4 rules by BlockList itself.
 */
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, including 169.254.169.254 cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['::', 96], // IPv4-compatible (deprecated)
  ['64:ff9b::', 96], // NAT64: reaches whatever IPv4 it embeds
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 23], // IETF protocol assignments (Teredo, ORCHID, ...)
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4: reaches whatever IPv4 it embeds
  ['fc00::', 7], // unique local (includes fd00:ec2::254 metadata)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

/** True only for a syntactically valid IP address in public unicast space. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !NON_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Lower-cased host without IPv6 brackets or a trailing dot, as hosts are compared. */
export function normalizeHost(host: string): string {
  const lower = host.trim().toLowerCase();
  const unbracketed = lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
  return unbracketed.endsWith('.') ? unbracketed.slice(0, -1) : unbracketed;
}

/** "host:port" as written in VERIFY_ALLOW_HOSTS: IPv6 hosts in brackets. */
export function hostPortKey(host: string, port: number): string {
  const h = normalizeHost(host);
  return `${isIP(h) === 6 ? `[${h}]` : h}:${port}`;
}

/** Parses VERIFY_ALLOW_HOSTS ("host:port,host:port") into comparable keys; throws naming a bad entry. */
export function parseAllowedHosts(list: string | undefined): Set<string> {
  const keys = new Set<string>();
  for (const raw of (list ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    const match = /^(\[[^\]]+\]|[^:[\]\s]+):(\d{1,5})$/.exec(raw);
    const port = match ? Number(match[2]) : NaN;
    if (!match || port < 1 || port > 65535) throw new Error(`"${raw}" is not host:port`);
    keys.add(hostPortKey(match[1]!, port));
  }
  return keys;
}
