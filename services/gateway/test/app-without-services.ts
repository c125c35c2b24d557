import type { Express } from 'express';
import type { Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { createLogger } from '@cards/platform';
import type { GatewayClients } from '../src/clients';
import { createGatewayApp, type GatewayAppOptions } from '../src/app';
import { MemoryAttemptCounter } from '../src/adapters/memory/memory-attempt-counter';

/** The gateway app with no backing services (any gRPC call would fail): for what the HTTP layer answers itself. */
export function appWithoutServices(overrides: Partial<GatewayAppOptions> = {}): Express {
  return createGatewayApp({
    clients: {} as GatewayClients,
    logger: createLogger('gateway-test', 'silent'),
    filesHttpAddress: '127.0.0.1:1',
    maxFileBytes: 1024,
    rateLimits: { perIpPerMinute: 10, perEmailPerMinute: 10, counter: new MemoryAttemptCounter() },
    cookieSecure: false,
    jsonBodyLimit: '1mb',
    trustProxy: false,
    checkPeers: async () => [],
    ...overrides,
  });
}

/**
 * An in-memory attempt counter whose clock stays at the moment it was made, for a test that counts attempts up to a
 * limit: its windows are aligned to the clock (windowStartOf), so with the real clock a minute's :00 passing between a
 * test's first and last attempt would start the count again half-way and the attempt expected refused would pass.
 */
export function counterInOneWindow(): MemoryAttemptCounter {
  const at = Date.now();
  return new MemoryAttemptCounter(() => at);
}

/**
 * Servers listening() started that are still open, closed (with their connections) once the test file ends: a test that
 * failed or timed out before its own close (its `finally` never reached while it awaits) would otherwise leave a listener,
 * and a loop polling it, keeping jest from exiting — on a 2-core machine it runs a directory's suites in one process.
 */
const stillOpen = new Set<Server>();
/** Set once the test file has ended: until() stops waiting then. */
let fileEnded = false;
if (typeof afterAll === 'function') {
  afterAll(async () => {
    fileEnded = true;
    await Promise.all([...stillOpen].map((server) => closed(server)));
  });
}

/** The server listening on a free loopback port, and its base URL; closed when the test file ends if the test did not. */
export async function listening(server: Server): Promise<{ server: Server; base: string }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  stillOpen.add(server);
  server.once('close', () => stillOpen.delete(server));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * Resolves once `condition()` holds, asking again every few milliseconds; a condition a test waits for in vain
 * (it failed, or timed out) stops being asked when the test file ends, instead of keeping the process alive for good.
 */
export async function until(condition: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await condition())) {
    if (fileEnded) throw new Error('the test file ended before the condition waited for held');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Closes the server with its kept-alive connections. */
export function closed(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}

/** Writes `request` as is on a new connection and resolves with everything the server sent once it closed it (latin1). */
export function rawExchange(base: string, request: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
    socket.write(request);
  });
}
