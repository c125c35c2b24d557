import { ClientError, ServerError, Status } from 'nice-grpc';
import { identity } from '@cards/proto';
import { createGrpcClient } from '../src/grpc-client';
import { enableInProcessCalls } from '../src/in-process-calls';
import { startGrpcServer, type GrpcServerHandle } from '../src/grpc-server';
import { createLogger } from '../src/logger';
import { serviceWith } from './support/service-with';
import { InvalidArgumentError, NotFoundError } from '../src/errors';
import { IDEMPOTENCY_KEY_REUSED, IdempotencyKeyReusedError } from '../src/idempotency';
import { statusReasonOf } from '../src/status-origin';
import { currentRequestContext, runWithRequestContext } from '../src/request-context';

let server: GrpcServerHandle;
const seenRequestIds: (string | undefined)[] = [];
const attempts = new Map<string, number>();
const peers: string[] = [];
const cancelled: string[] = [];
/** Per token: the x-call-budget-ms each attempt arrived with. */
const budgets = new Map<string, number[]>();

beforeAll(async () => {
  server = await startGrpcServer({
    name: 'test',
    logger: createLogger('test', 'silent'),
    register: (s) =>
      s.add(identity.IdentityServiceDefinition, serviceWith(identity.IdentityServiceDefinition, {
        async resolveSession(req, context) {
          peers.push(context.peer);
          context.signal.addEventListener('abort', () => cancelled.push(req.token));
          if (req.token.startsWith('busy') || req.token.startsWith('flaky')) {
            budgets.set(req.token, [...(budgets.get(req.token) ?? []), Number(context.metadata.get('x-call-budget-ms'))]);
          }
          // A store another process keeps locked past the call's wait (what better-sqlite3 throws then).
          if (req.token.startsWith('busy')) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
          if (req.token.startsWith('flaky')) {
            attempts.set(req.token, (attempts.get(req.token) ?? 0) + 1);
            if (attempts.get(req.token)! <= 2) throw new ServerError(Status.UNAVAILABLE, 'warming up');
          }
          if (req.token === 'slow') await new Promise((r) => setTimeout(r, 1500));
          seenRequestIds.push(currentRequestContext()?.requestId);
          if (req.token === 'bad') throw new InvalidArgumentError('token: malformed');
          if (req.token === 'missing') throw new NotFoundError('no such session');
          if (req.token === 'reused') throw new IdempotencyKeyReusedError('Idempotency-Key: used for another request');
          if (req.token === 'boom') throw new Error('database password is hunter2');
          return { id: 'u1', email: 'a@b.co', visibleEmail: true };
        },
        async getUsers(req) {
          // Echoes what arrived, so a test sees the request as the server decoded it.
          return { users: req.ids.map((id) => ({ id, email: `${id}@example.com` })) };
        },
      })),
  });
});
afterAll(() => server.shutdown());

// The same behaviour over the loopback network and in process (a client in the process that serves the address).
describe.each([
  ['over the network', false],
  ['in process', true],
])('gRPC server and client helpers, %s', (transport, inProcess) => {
  beforeAll(() => enableInProcessCalls(inProcess));
  afterAll(() => enableInProcessCalls(false));
  const channels: { close(): void }[] = [];
  const open = (address: string) => {
    const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, address);
    channels.push(channel);
    return client;
  };
  const client = open('127.0.0.1:1');
  const connect = () => open(server.address);
  afterAll(() => channels.forEach((c) => c.close()));

  it('maps domain errors to their gRPC status with the message', async () => {
    const c = connect();
    await expect(c.resolveSession({ token: 'bad' })).rejects.toMatchObject({ code: Status.INVALID_ARGUMENT, details: 'token: malformed' });
    await expect(c.resolveSession({ token: 'missing' })).rejects.toMatchObject({ code: Status.NOT_FOUND });
  });

  it("hands the caller a domain error's reason beside its status, and none for errors without one", async () => {
    const c = connect();
    const reused = (await c.resolveSession({ token: 'reused' }).catch((e: unknown) => e)) as ClientError;
    expect(reused).toMatchObject({ code: Status.FAILED_PRECONDITION, details: 'Idempotency-Key: used for another request' });
    expect(statusReasonOf(reused)).toBe(IDEMPOTENCY_KEY_REUSED);
    expect(statusReasonOf((await c.resolveSession({ token: 'bad' }).catch((e: unknown) => e)) as ClientError)).toBeUndefined();
  });

  it('hides unexpected errors behind INTERNAL with a generic message', async () => {
    const error = await connect()
      .resolveSession({ token: 'boom' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).code).toBe(Status.INTERNAL);
    expect((error as ClientError).details).not.toContain('hunter2');
  });

  it('carries the request id to the server', async () => {
    await runWithRequestContext({ requestId: 'request-42' }, () => connect().resolveSession({ token: 'ok' }));
    expect(seenRequestIds).toContain('request-42');
  });

  it('fails with UNAVAILABLE, not a hang, when the peer is down', async () => {
    const error = (await client.getUsers({ ids: [] }, { deadline: 2000 }).catch((e: unknown) => e)) as ClientError;
    expect(error).toBeInstanceOf(ClientError);
    expect([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED]).toContain(error.code);
  });

  it('gives up with DEADLINE_EXCEEDED when the peer answers too late', async () => {
    // The peer answers 1500 ms after the call, on the same event loop as the 200 ms deadline: DEADLINE_EXCEEDED rather
    // than its answer is the client giving up first (no wall-clock bound asserted, which a test worker starved of CPU
    // for a second on a loaded machine would miss).
    const error = (await connect()
      .resolveSession({ token: 'slow' }, { deadline: 200 })
      .catch((e: unknown) => e)) as ClientError;
    expect(error).toBeInstanceOf(ClientError);
    expect(error.code).toBe(Status.DEADLINE_EXCEEDED);
  });

  it('retries an idempotent call the peer answers UNAVAILABLE, and not a non-idempotent one', async () => {
    const c = connect();
    const [a, b] = [`flaky-a-${transport}`, `flaky-b-${transport}`];
    await expect(c.resolveSession({ token: a }, { idempotent: true })).resolves.toMatchObject({ id: 'u1' });
    expect(attempts.get(a)).toBe(3);
    await expect(c.resolveSession({ token: b })).rejects.toMatchObject({ code: Status.UNAVAILABLE });
    expect(attempts.get(b)).toBe(1);
  });

  it('does not try again an idempotent call answered SERVICE_BUSY (a store kept locked): the callee waited its budget already, another attempt could only outlast the deadline (504 instead of 503)', async () => {
    const token = `busy-${transport}`;
    const error = (await connect()
      .resolveSession({ token }, { idempotent: true, deadline: 5000 })
      .catch((e: unknown) => e)) as ClientError;
    expect(error).toBeInstanceOf(ClientError);
    expect(error.code).toBe(Status.UNAVAILABLE);
    expect(statusReasonOf(error)).toBe('SERVICE_BUSY');
    expect(budgets.get(token)).toHaveLength(1);
  });

  it('tells each attempt the time left of the call (x-call-budget-ms): a retry has only what the attempts before it left', async () => {
    const token = `flaky-budget-${transport}`;
    await expect(connect().resolveSession({ token }, { idempotent: true, deadline: 5000 })).resolves.toMatchObject({ id: 'u1' });
    const seen = budgets.get(token)!;
    expect(seen).toHaveLength(3);
    expect(seen[0]).toBeLessThanOrEqual(5000);
    // At least the 50 ms and 100 ms pauses between the attempts are gone from the budget each retry carries.
    expect(seen[1]).toBeLessThanOrEqual(seen[0]! - 50);
    expect(seen[2]).toBeLessThanOrEqual(seen[1]! - 100);
  });

  it(`reaches the server ${inProcess ? 'without' : 'over'} the network`, async () => {
    peers.length = 0;
    await connect().resolveSession({ token: 'ok' });
    expect(peers).toHaveLength(1);
    if (inProcess) expect(peers[0]).toBe('in-process');
    else expect(peers[0]).toMatch(/127\.0\.0\.1/);
  });

  it('delivers messages as the wire does: defaults filled, fields the type lacks dropped, nothing shared', async () => {
    const ids = ['a', 'b'];
    const request = { ids, extra: 'not in the message' } as unknown as { ids: string[] };
    const { users } = await connect().getUsers(request);
    expect(users).toEqual([
      { id: 'a', email: 'a@example.com', visibleEmail: false },
      { id: 'b', email: 'b@example.com', visibleEmail: false },
    ]);
    const { users: none } = await connect().getUsers({} as { ids: string[] });
    expect(none).toEqual([]);
    expect(ids).toEqual(['a', 'b']);
  });

  it('lets other work of the process run between the calls of a long chain', async () => {
    const c = connect();
    let callsBeforeTimer = -1;
    let calls = 0;
    setTimeout(() => (callsBeforeTimer = calls), 0);
    for (; calls < 200; calls++) await c.getUsers({ ids: ['x'] });
    expect(callsBeforeTimer).toBeGreaterThanOrEqual(0);
    expect(callsBeforeTimer).toBeLessThan(200);
  });

  it('cancels the server side of a call whose deadline passed', async () => {
    await connect()
      .resolveSession({ token: 'slow' }, { deadline: 100 })
      .catch(() => undefined);
    await new Promise((r) => setTimeout(r, 100));
    expect(cancelled).toContain('slow');
    cancelled.length = 0;
  });
});

describe('in-process calls to a server that has shut down', () => {
  it('go over the network like any other call, and fail as a closed port does', async () => {
    const gone = await startGrpcServer({
      name: 'gone',
      logger: createLogger('test', 'silent'),
      register: (s) =>
        s.add(
          identity.IdentityServiceDefinition,
          serviceWith(identity.IdentityServiceDefinition, {
            async getUsers() {
              return { users: [] };
            },
          }),
        ),
    });
    enableInProcessCalls(true);
    const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, gone.address);
    try {
      await expect(client.getUsers({ ids: [] })).resolves.toEqual({ users: [] });
      await gone.shutdown();
      const error = (await client.getUsers({ ids: [] }, { deadline: 2000 }).catch((e: unknown) => e)) as ClientError;
      expect(error).toBeInstanceOf(ClientError);
      expect([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED]).toContain(error.code);
    } finally {
      enableInProcessCalls(false);
      channel.close();
    }
  });
});
