import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePortsSync } from './engine-support';

// The engines' ports come from the platform's picker (freePort's), in a child process: below the kernel's ephemeral
// range, where no outgoing connection can take one before its engine binds it (as listen on 0 could).

function ephemeralStart(): number | undefined {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return undefined;
  }
}

describe('freePortsSync', () => {
  it('hands out distinct ports an engine can bind, below the ephemeral range, and none twice across calls', () => {
    const ports = [...freePortsSync(3), ...freePortsSync(2), ...freePortsSync(1), ...freePortsSync(7)];
    expect(ports).toHaveLength(13);
    expect(new Set(ports).size).toBe(ports.length);
    const start = ephemeralStart();
    if (start !== undefined && start > 11_000) for (const port of ports) expect(port).toBeLessThan(start);
    else console.log(`no Linux ephemeral range to stay below here (${start}); distinctness checked only`);
    return Promise.all(
      ports.map(
        (port) =>
          new Promise<void>((resolve, reject) => {
            const server = createServer();
            server.once('error', reject);
            server.listen(port, '127.0.0.1', () => server.close(() => resolve()));
          }),
      ),
    );
  });
});
