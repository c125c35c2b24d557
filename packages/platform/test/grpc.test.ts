import { ClientError, ServerError, Status } from 'nice-grpc';
import { identity } from '@cards/proto';
import { createGrpcClient } from '../src/grpc-client';
import { startGrpcServer, type GrpcServerHandle } from '../src/grpc-server';
import { createLogger } from '../src/logger';
import { InvalidArgumentError, NotFoundError } from '../src/errors';
import { currentRequestContext, runWithRequestContext } from '../src/request-context';

let server: GrpcServerHandle;
const seenRequestIds: (string | undefined)[] = [];
const attempts = new Map<string, number>();

beforeAll(async () => {
  const unimplemented = async () => {
    throw new Error('not used');
  };
  server = await startGrpcServer({
    name: 'test',
    logger: createLogger('test', 'silent'),
    register: (s) =>
      s.add(identity.IdentityServiceDefinition, {
        createInvitation: unimplemented,
        register: unimplemented,
        login: unimplemented,
        logout: unimplemented,
        requestPasswordReset: unimplemented,
        resetPassword: unimplemented,
        updateUser: unimplemented,
        async resolveSession(req) {
          if (req.token.startsWith('flaky')) {
            attempts.set(req.token, (attempts.get(req.token) ?? 0) + 1);
            if (attempts.get(req.token)! <= 2) throw new ServerError(Status.UNAVAILABLE, 'warming up');
          }
          if (req.token === 'slow') await new Promise((r) => setTimeout(r, 1500));
          seenRequestIds.push(currentRequestContext()?.requestId);
          if (req.token === 'bad') throw new InvalidArgumentError('token: malformed');
          if (req.token === 'missing') throw new NotFoundError('no such session');
          if (req.token === 'boom') throw new Error('database password is hunter2');
          return { id: 'u1', email: 'a@b.co', visibleEmail: true };
        },
        async getUsers() {
          return { users: [] };
        },
        resolveSessions: unimplemented,
      }),
  });
});
afterAll(() => server.shutdown());

describe('gRPC server and client helpers', () => {
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

  it('hides unexpected errors behind INTERNAL with a generic message', async () => {
    const error = await connect()
      .resolveSession({ token: 'boom' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClientError);
    expect((error as ClientError).code).toBe(Status.INTERNAL);
    expect((error as ClientError).details).not.toContain('hunter2');
  });

  it('carries the request id to the server', async () => {
    await runWithRequestContext({ requestId: 'req-42' }, () => connect().resolveSession({ token: 'ok' }));
    expect(seenRequestIds).toContain('req-42');
  });

  it('fails with UNAVAILABLE, not a hang, when the peer is down', async () => {
    const error = (await client.getUsers({ ids: [] }, { deadline: 2000 }).catch((e: unknown) => e)) as ClientError;
    expect(error).toBeInstanceOf(ClientError);
    expect([Status.UNAVAILABLE, Status.DEADLINE_EXCEEDED]).toContain(error.code);
  });

  it('gives up with DEADLINE_EXCEEDED when the peer answers too late', async () => {
    const started = Date.now();
    const error = (await connect()
      .resolveSession({ token: 'slow' }, { deadline: 200 })
      .catch((e: unknown) => e)) as ClientError;
    expect(error).toBeInstanceOf(ClientError);
    expect(error.code).toBe(Status.DEADLINE_EXCEEDED);
    expect(Date.now() - started).toBeLessThan(1200);
  });

  it('retries an idempotent call the peer answers UNAVAILABLE, and not a non-idempotent one', async () => {
    const c = connect();
    await expect(c.resolveSession({ token: 'flaky-a' }, { idempotent: true })).resolves.toMatchObject({ id: 'u1' });
    expect(attempts.get('flaky-a')).toBe(3);
    await expect(c.resolveSession({ token: 'flaky-b' })).rejects.toMatchObject({ code: Status.UNAVAILABLE });
    expect(attempts.get('flaky-b')).toBe(1);
  });
});
