import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort, freePorts, loopbackTopologyEnv } from '../src/loopback-topology';

function ephemeralStart(): number | undefined {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return undefined;
  }
}

describe('freePort', () => {
  it('hands out distinct ports a service can bind, below the ephemeral range outgoing connections take theirs from', async () => {
    const ports = await Promise.all(Array.from({ length: 40 }, freePort));
    expect(new Set(ports).size).toBe(ports.length);
    const start = ephemeralStart();
    if (start !== undefined && start > 11_000) for (const port of ports) expect(port).toBeLessThan(start);
    else console.log(`no Linux ephemeral range to stay below here (${start}); distinctness checked only`);
    for (const port of ports.slice(0, 5)) {
      await new Promise<void>((resolve, reject) => {
        const server = createServer();
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
      });
    }
  });

  it('freePorts never gives a port named to avoid, as another process handed out, though it is free again', async () => {
    // Two processes' pickers (two module instances, nothing handed out in the second), trying the same port first.
    let other!: typeof import('../src/loopback-topology');
    jest.isolateModules(() => {
      other = require('../src/loopback-topology');
    });
    const random = jest.spyOn(Math, 'random');
    try {
      random.mockReturnValueOnce(0.5);
      const [first] = await freePorts(1);
      random.mockReturnValueOnce(0.5);
      const ports = await other.freePorts(3, [first!]);
      expect(new Set([first, ...ports]).size).toBe(4);
    } finally {
      random.mockRestore();
    }
  });

  it('gives a loopback topology six different service ports', async () => {
    const env = await loopbackTopologyEnv();
    const ports = ['IDENTITY_GRPC_PORT', 'CARDS_GRPC_PORT', 'SEARCH_GRPC_PORT', 'FILES_GRPC_PORT', 'FILES_HTTP_PORT', 'NOTIFICATIONS_GRPC_PORT'].map((name) => env[name]);
    expect(new Set(ports).size).toBe(6);
  });
});
