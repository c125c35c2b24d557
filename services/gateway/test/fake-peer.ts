import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { Writable } from 'node:stream';
import { createLogger, enableInProcessCalls, startGrpcServer, type GrpcServerHandle } from '@cards/platform';
import { cards, files, health, identity, notifications, search } from '@cards/proto';
import { createServer, ServerError, Status, type Server } from 'nice-grpc';
import type { GatewayAppOptions } from '../src/app';
import { createGatewayClients } from '../src/clients';
import { appWithoutServices, closed, listening } from './app-without-services';

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

/** The peers' methods a test's gRPC server answers, by service: each given service is served by stub() (its other methods refuse). */
export interface StubServices {
  identity?: Partial<identity.IdentityServiceImplementation>;
  cards?: Partial<cards.CardServiceImplementation>;
  search?: Partial<search.SearchServiceImplementation>;
  files?: Partial<files.FileServiceImplementation>;
  notifications?: Partial<notifications.NotificationServiceImplementation>;
  /** Services of another shape (an older release's definition, without some methods), added as given. */
  register?(server: Server): void;
}

/**
 * One gRPC server standing in for every peer of the gateway (startGrpcServer, so health and the in-process path are as
 * a service's): the services given, each a stub() of its definition; a service not given is not served at all.
 */
export async function startStubPeers(services: StubServices, name = 'stub'): Promise<GrpcServerHandle> {
  return startGrpcServer({
    name,
    logger: createLogger(name, 'silent'),
    register(s) {
      if (services.identity) s.add(identity.IdentityServiceDefinition, stub<identity.IdentityServiceImplementation>(identity.IdentityServiceDefinition, services.identity));
      if (services.cards) s.add(cards.CardServiceDefinition, stub<cards.CardServiceImplementation>(cards.CardServiceDefinition, services.cards));
      if (services.search) s.add(search.SearchServiceDefinition, stub<search.SearchServiceImplementation>(search.SearchServiceDefinition, services.search));
      if (services.files) s.add(files.FileServiceDefinition, stub<files.FileServiceImplementation>(files.FileServiceDefinition, services.files));
      if (services.notifications) {
        s.add(notifications.NotificationServiceDefinition, stub<notifications.NotificationServiceImplementation>(notifications.NotificationServiceDefinition, services.notifications));
      }
      services.register?.(s);
    },
  });
}

/**
 * startStubPeers for the suite (or the describe) it is called in: started before its tests, shut down after them.
 * `address` (and `handle`) can be read once the tests run.
 */
export function stubPeersForSuite(services: StubServices, name?: string): { readonly address: string; readonly handle: GrpcServerHandle } {
  let handle: GrpcServerHandle | undefined;
  beforeAll(async () => {
    handle = await startStubPeers(services, name);
  });
  afterAll(async () => {
    await handle?.shutdown();
    handle = undefined;
  });
  const started = () => {
    if (!handle) throw new Error('the stub peers are read before their beforeAll ran');
    return handle;
  };
  return {
    get address() {
      return started().address;
    },
    get handle() {
      return started();
    },
  };
}

/** How gatewayInFrontOf makes its gateway: the calls' deadline (default 10 s) and the app's own options. */
export interface GatewayInFrontOptions {
  deadlineMs?: number;
  app?: Partial<GatewayAppOptions>;
}

/**
 * The gateway over loopback with every client pointed at the gRPC server at `address`; its log lines (info and up)
 * kept. close() ends its connections, kept-alive ones too, and closes its channels.
 */
export async function gatewayInFrontOf(
  address: string,
  options: GatewayInFrontOptions = {},
): Promise<{ server: HttpServer; base: string; logged: string[]; clients: GatewayClientsOf; close(): Promise<void> }> {
  const made = createGatewayClients({ identity: address, cards: address, search: address, files: address, notifications: address }, options.deadlineMs ?? 10_000);
  const logged: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(String(chunk));
      done();
    },
  });
  const { server, base } = await listening(
    createHttpServer(appWithoutServices({ clients: made.clients, logger: createLogger('gateway-test', 'info', sink), accessLogLevel: 'silent', ...options.app })),
  );
  return {
    server,
    base,
    logged,
    clients: made.clients,
    async close() {
      await closed(server);
      Object.values(made.channels).forEach((c) => c.close());
    },
  };
}

type GatewayClientsOf = ReturnType<typeof createGatewayClients>['clients'];

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
    afterAll(async () => {
      enableInProcessCalls(false);
      await gateway.close();
    });
    tests(gateway, inProcess);
  });
}

/** What better-sqlite3 throws when the data dir's file system is full: the service's store could not write. */
export const sqliteFullError = () => Object.assign(new Error('database or disk is full'), { name: 'SqliteError', code: 'SQLITE_FULL' });
