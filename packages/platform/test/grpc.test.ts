import { ClientError, Status } from 'nice-grpc';
import { identity } from '@cards/proto';
import { createGrpcClient } from '../src/grpc-client';
import { startGrpcServer, type GrpcServerHandle } from '../src/grpc-server';
import { createLogger } from '../src/logger';
import { InvalidArgumentError, NotFoundError } from '../src/errors';
import { currentRequestContext, runWithRequestContext } from '../src/request-context';

let server: GrpcServerHandle;
const seenRequestIds: (string | undefined)[] = [];

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
          seenRequestIds.push(currentRequestContext()?.requestId);
          if (req.token === 'bad') throw new InvalidArgumentError('token: malformed');
          if (req.token === 'missing') throw new NotFoundError('no such session');
          if (req.token === 'boom') throw new Error('database password is hunter2');
          return { id: 'u1', email: 'a@b.co', visibleEmail: true };
        },
        async getUsers() {
          return { users: [] };
        },
      }),
  });
});
afterAll(() => server.shutdown());

describe('gRPC server and client helpers', () => {
  const { client } = createGrpcClient(identity.IdentityServiceDefinition, '127.0.0.1:1');
  const connect = () => createGrpcClient(identity.IdentityServiceDefinition, server.address).client;

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
});
