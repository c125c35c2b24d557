import { cards, health } from '@cards/proto';
import { createServer, ServerError, Status, type Server } from 'nice-grpc';

/** One gRPC server standing in for every peer of the gateway: SERVING health and CountCards; any other method is UNIMPLEMENTED. */
export async function startFakePeer(address: string, totalCount: number): Promise<Server> {
  const server = createServer();
  server.add(health.HealthDefinition, {
    async check() {
      return { status: health.HealthCheckResponse_ServingStatus.SERVING };
    },
    async *watch() {
      yield { status: health.HealthCheckResponse_ServingStatus.SERVING };
    },
  });
  const countOnly = new Proxy({ countCards: async () => ({ totalCount }) } as Record<string, unknown>, {
    get: (target, key) =>
      target[key as string] ??
      (async () => {
        throw new ServerError(Status.UNIMPLEMENTED, 'not used');
      }),
  });
  server.add(cards.CardServiceDefinition, countOnly as never);
  await server.listen(address);
  return server;
}

/** Every method of a definition refusing ("not used"), but the ones given: a gRPC service stub for a test's own server. */
export function stub<T extends object>(definition: { methods: Record<string, unknown> }, methods: Partial<T>): T {
  const unimplemented = async () => {
    throw new Error('not used');
  };
  return { ...Object.fromEntries(Object.keys(definition.methods).map((key) => [key, unimplemented])), ...methods } as T;
}
