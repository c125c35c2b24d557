import { createServer as createHttpServer } from 'node:http';
import { Writable } from 'node:stream';
import { createLogger, enableInProcessCalls } from '@cards/platform';
import { cards, health } from '@cards/proto';
import { createServer, ServerError, Status, type Server } from 'nice-grpc';
import { createGatewayClients } from '../src/clients';
import { appWithoutServices, listening } from './app-without-services';

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

/**
 * Identity's session lookups as a gateway test's own server answers them: every token is the session of the user whose id
 * it is (one lookup and the batched one alike), so a test signs in as any user by sending its id as the cookie.
 */
export const tokenIsUser = {
  async resolveSession(req: { token: string }) {
    return { id: req.token, email: `${req.token}@example.com`, visibleEmail: false };
  },
  async resolveSessions(req: { tokens: string[] }) {
    return { resolutions: req.tokens.map((token) => ({ user: { id: token, email: `${token}@example.com`, visibleEmail: false } })) };
  },
};

/** The gateway over loopback with every client pointed at the gRPC server at `address`; its log lines (info and up) kept. */
export async function gatewayInFrontOf(address: string): Promise<{ base: string; logged: string[]; close(): void }> {
  const made = createGatewayClients({ identity: address, cards: address, search: address, files: address, notifications: address }, 10_000);
  const logged: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(String(chunk));
      done();
    },
  });
  const { server, base } = await listening(
    createHttpServer(appWithoutServices({ clients: made.clients, logger: createLogger('gateway-test', 'info', sink), accessLogLevel: 'silent' })),
  );
  return {
    base,
    logged,
    close() {
      server.close();
      Object.values(made.channels).forEach((c) => c.close());
    },
  };
}

/** The gateway of gatewayInFrontOf. */
export type GatewayInFront = Awaited<ReturnType<typeof gatewayInFrontOf>>;

/**
 * Declares `tests` twice, with the gateway in front of the gRPC server at `address()` calling it over the network and
 * with in-process calls: `gateway` is filled before the tests of each pass run and closed after them.
 */
export function describeBehindGateway(title: string, address: () => string, tests: (gateway: GatewayInFront, inProcess: boolean) => void): void {
  describe.each([
    ['over the network', false],
    ['in process', true],
  ])(`${title}, %s`, (_transport, inProcess) => {
    const gateway = {} as GatewayInFront;
    beforeAll(async () => {
      enableInProcessCalls(inProcess);
      Object.assign(gateway, await gatewayInFrontOf(address()));
    });
    afterAll(() => {
      enableInProcessCalls(false);
      gateway.close();
    });
    tests(gateway, inProcess);
  });
}

/** What better-sqlite3 throws when the data dir's file system is full: the service's store could not write. */
export const sqliteFullError = () => Object.assign(new Error('database or disk is full'), { name: 'SqliteError', code: 'SQLITE_FULL' });
