import { AddressGuard, RefusedAddressError, UnresolvableHostError } from '../src/verification/domain/address-guard';
import { isPublicAddress, parseAllowedHosts } from '../src/verification/domain/address-policy';
import type { HostResolver } from '../src/verification/domain/ports';

/** A resolver that answers from a table and records what it was asked: no DNS, no packets. */
function tableResolver(table: Record<string, string[]>): HostResolver & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async resolve(hostname) {
      asked.push(hostname);
      const answer = table[hostname];
      if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return answer;
    },
  };
}

const closed = { allowPrivate: false, allowedHosts: new Set<string>() };

describe('isPublicAddress', () => {
  it.each([
    ['10.0.0.1'],
    ['10.255.255.255'],
    ['172.16.0.1'],
    ['172.31.255.254'],
    ['192.168.1.1'],
    ['127.0.0.1'],
    ['127.8.9.10'],
    ['169.254.169.254'],
    ['169.254.1.1'],
    ['0.0.0.0'],
    ['100.64.0.1'],
    ['224.0.0.1'],
    ['255.255.255.255'],
    ['::1'],
    ['::'],
    ['fc00::1'],
    ['fd12:3456:789a::1'],
    ['fd00:ec2::254'],
    ['fe80::1'],
    ['ff02::1'],
    ['::ffff:127.0.0.1'],
    ['::ffff:10.1.2.3'],
    ['::ffff:a9fe:a9fe'],
    ['::ffff:192.168.0.1'],
    ['64:ff9b::a00:1'],
    ['2002:7f00:1::'],
    ['not an ip'],
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([['93.184.216.34'], ['8.8.8.8'], ['172.32.0.1'], ['172.15.255.255'], ['192.169.0.1'], ['11.0.0.1'], ['2606:4700::6810:84e5'], ['::ffff:8.8.8.8']])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('AddressGuard (injected resolver: nothing is contacted)', () => {
  it.each([
    ['ten.internal', '10.0.0.7'],
    ['one-seventy-two.internal', '172.20.1.1'],
    ['one-ninety-two.internal', '192.168.0.10'],
    ['metadata.internal', '169.254.169.254'],
    ['ula.internal', 'fd00::abcd'],
    ['mapped.internal', '::ffff:10.0.0.1'],
    ['mapped-loopback.internal', '::ffff:127.0.0.1'],
    ['loopback.internal', '127.0.0.1'],
  ])('refuses %s resolving to %s', async (host, address) => {
    const guard = new AddressGuard(tableResolver({ [host]: [address] }), closed);
    await expect(guard.addressFor(host, 80)).rejects.toBeInstanceOf(RefusedAddressError);
  });

  it('refuses a host when any one of its addresses is private (no round-robin luck)', async () => {
    const guard = new AddressGuard(tableResolver({ 'mixed.example': ['93.184.216.34', '10.0.0.1'] }), closed);
    await expect(guard.addressFor('mixed.example', 443)).rejects.toThrow(/10\.0\.0\.1/);
  });

  it('refuses literal private addresses without asking the resolver', async () => {
    const resolver = tableResolver({});
    const guard = new AddressGuard(resolver, closed);
    for (const literal of ['127.0.0.1', '[::1]', '::1', '169.254.169.254', '[fc00::1]', '[::ffff:192.168.1.1]']) {
      await expect(guard.addressFor(literal, 80)).rejects.toBeInstanceOf(RefusedAddressError);
    }
    expect(resolver.asked).toEqual([]);
  });

  it('answers the checked public address so the connection goes exactly there', async () => {
    const guard = new AddressGuard(tableResolver({ 'example.org': ['93.184.216.34', '2606:2800:220:1::1'] }), closed);
    await expect(guard.addressFor('Example.ORG.', 443)).resolves.toBe('93.184.216.34');
  });

  it('reports a name that does not resolve', async () => {
    const guard = new AddressGuard(tableResolver({ 'empty.example': [] }), closed);
    await expect(guard.addressFor('nowhere.example', 80)).rejects.toBeInstanceOf(UnresolvableHostError);
    await expect(guard.addressFor('empty.example', 80)).rejects.toBeInstanceOf(UnresolvableHostError);
  });

  it('VERIFY_ALLOW_HOSTS lets through exactly the listed host:port, nothing else', async () => {
    const guard = new AddressGuard(tableResolver({ 'pages.test': ['127.0.0.1'], localhost: ['127.0.0.1', '::1'] }), { allowPrivate: false, allowedHosts: parseAllowedHosts('127.0.0.1:8081, pages.test:9000,[::1]:8082') });
    await expect(guard.addressFor('127.0.0.1', 8081)).resolves.toBe('127.0.0.1');
    await expect(guard.addressFor('[::1]', 8082)).resolves.toBe('::1');
    await expect(guard.addressFor('pages.test', 9000)).resolves.toBe('127.0.0.1');
    await expect(guard.addressFor('127.0.0.1', 8080)).rejects.toBeInstanceOf(RefusedAddressError);
    await expect(guard.addressFor('pages.test', 9001)).rejects.toBeInstanceOf(RefusedAddressError);
    await expect(guard.addressFor('localhost', 8081)).rejects.toBeInstanceOf(RefusedAddressError);
  });

  it('VERIFY_ALLOW_PRIVATE lets private addresses through', async () => {
    const guard = new AddressGuard(tableResolver({ 'ten.internal': ['10.0.0.7'] }), { allowPrivate: true, allowedHosts: new Set() });
    await expect(guard.addressFor('ten.internal', 80)).resolves.toBe('10.0.0.7');
  });

  it('rejects malformed VERIFY_ALLOW_HOSTS entries', () => {
    expect(() => parseAllowedHosts('localhost')).toThrow(/host:port/);
    expect(() => parseAllowedHosts('a:70000')).toThrow(/host:port/);
    expect(parseAllowedHosts('')).toEqual(new Set());
  });
});
