import { lookup } from 'node:dns/promises';
import type { HostResolver } from '../../domain/ports';

/** The operating system's resolver (getaddrinfo: /etc/hosts, then DNS), every A and AAAA answer. */
export class DnsHostResolver implements HostResolver {
  async resolve(hostname: string): Promise<string[]> {
    const answers = await lookup(hostname, { all: true, verbatim: true });
    return answers.map((a) => a.address);
  }
}
