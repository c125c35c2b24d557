import { createServer } from 'node:net';

/** A port that was free a moment ago on loopback (another process may still take it before it is bound). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolvePort(port));
    });
  });
}

/**
 * Environment for running every service on loopback: each its own gRPC port, every peer's address and
 * the files service's internal HTTP port. Used by the all-in-one process and the multi-process test topology.
 */
export async function loopbackTopologyEnv(): Promise<Record<string, string>> {
  const [identity, cards, search, files, filesHttp, notifications] = await Promise.all(Array.from({ length: 6 }, freePort));
  const host = '127.0.0.1';
  return {
    IDENTITY_GRPC_HOST: host,
    IDENTITY_GRPC_PORT: String(identity),
    CARDS_GRPC_HOST: host,
    CARDS_GRPC_PORT: String(cards),
    SEARCH_GRPC_HOST: host,
    SEARCH_GRPC_PORT: String(search),
    FILES_GRPC_HOST: host,
    FILES_GRPC_PORT: String(files),
    FILES_HTTP_HOST: host,
    FILES_HTTP_PORT: String(filesHttp),
    NOTIFICATIONS_GRPC_HOST: host,
    NOTIFICATIONS_GRPC_PORT: String(notifications),
    IDENTITY_SERVICE_ADDR: `${host}:${identity}`,
    CARDS_SERVICE_ADDR: `${host}:${cards}`,
    SEARCH_SERVICE_ADDR: `${host}:${search}`,
    FILES_SERVICE_ADDR: `${host}:${files}`,
    FILES_HTTP_ADDR: `${host}:${filesHttp}`,
    NOTIFICATIONS_SERVICE_ADDR: `${host}:${notifications}`,
  };
}
