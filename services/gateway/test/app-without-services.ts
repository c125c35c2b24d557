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

/** The server listening on a free loopback port, and its base URL. */
export async function listening(server: Server): Promise<{ server: Server; base: string }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
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
