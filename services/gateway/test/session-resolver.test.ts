// The gateway's session resolver against a real gRPC server: requests in flight together share one
// ResolveSessions call, each still gets its own answer, and an identity without that call still works.
import { ServerError, Status } from 'nice-grpc';
import { identity } from '@cards/proto';
import { createGrpcClient, type GrpcServerHandle } from '@cards/platform';
import { batchingSessionResolver } from '../src/http/session';
import { startStubPeers } from './fake-peer';

interface Recorded {
  single: string[];
  batches: string[][];
}

/** An identity where `user-<name>` tokens are live sessions of <name>; anything else is not a session. */
async function startIdentity(options: { batching: boolean; failWith?: Status }): Promise<{ server: GrpcServerHandle; calls: Recorded }> {
  const calls: Recorded = { single: [], batches: [] };
  const userOf = (token: string): identity.User | undefined => (token.startsWith('user-') ? { id: token.slice(5), email: `${token.slice(5)}@example.com`, visibleEmail: false } : undefined);
  const server = await startStubPeers(
    {
      identity: {
        async resolveSession(req) {
          calls.single.push(req.token);
          if (options.failWith !== undefined) throw new ServerError(options.failWith, 'identity store down');
          const user = userOf(req.token);
          if (!user) throw new ServerError(Status.UNAUTHENTICATED, 'Not logged in');
          return user;
        },
        async resolveSessions(req) {
          if (!options.batching) throw new ServerError(Status.UNIMPLEMENTED, 'Method not found');
          calls.batches.push(req.tokens);
          if (options.failWith !== undefined) throw new ServerError(options.failWith, 'identity store down');
          return { resolutions: req.tokens.map((t) => ({ user: userOf(t) })) };
        },
      },
    },
    'identity.v1.IdentityService',
  );
  return { server, calls };
}

describe('batchingSessionResolver', () => {
  const servers: GrpcServerHandle[] = [];
  const channels: { close(): void }[] = [];
  afterAll(async () => {
    channels.forEach((channel) => channel.close());
    await Promise.all(servers.map((s) => s.shutdown()));
  });

  async function resolverFor(options: { batching: boolean; failWith?: Status }) {
    const { server, calls } = await startIdentity(options);
    servers.push(server);
    const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, server.address);
    channels.push(channel);
    return { resolve: batchingSessionResolver(client), calls };
  }

  const tokens = Array.from({ length: 30 }, (_, i) => (i % 3 === 0 ? `garbage-${i}` : `user-u${i}`));
  const expected = tokens.map((t) => (t.startsWith('user-') ? `${t.slice(5)}@example.com` : null));

  it('answers requests in flight together with one ResolveSessions call, each with its own user or null', async () => {
    const { resolve, calls } = await resolverFor({ batching: true });
    const users = await Promise.all(tokens.map((t) => resolve(t)));
    expect(users.map((u) => u?.email ?? null)).toEqual(expected);
    expect(calls.batches).toEqual([tokens]);
    expect(calls.single).toEqual([]);
  });

  it('asks again on every request: nothing is cached', async () => {
    const { resolve, calls } = await resolverFor({ batching: true });
    await resolve('user-a');
    await resolve('user-a');
    expect(calls.single).toEqual(['user-a', 'user-a']);
  });

  it('a lone request uses ResolveSession; a token that is not a session resolves to null', async () => {
    const { resolve, calls } = await resolverFor({ batching: true });
    expect(await resolve('user-solo')).toMatchObject({ id: 'solo' });
    expect(await resolve('nope')).toBeNull();
    expect(calls).toEqual({ single: ['user-solo', 'nope'], batches: [] });
  });

  it('falls back to one ResolveSession per token against an identity one version behind (UNIMPLEMENTED)', async () => {
    const { resolve, calls } = await resolverFor({ batching: false });
    const users = await Promise.all(tokens.map((t) => resolve(t)));
    expect(users.map((u) => u?.email ?? null)).toEqual(expected);
    expect([...calls.single].sort()).toEqual([...tokens].sort());
    // It remembers: the next burst goes straight to single calls.
    await Promise.all(tokens.slice(0, 5).map((t) => resolve(t)));
    expect(calls.single).toHaveLength(35);
  });

  it('fails every request in the batch when identity fails (never treats them as anonymous)', async () => {
    const { resolve } = await resolverFor({ batching: true, failWith: Status.INTERNAL });
    const outcomes = await Promise.allSettled(tokens.slice(0, 4).map((t) => resolve(t)));
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected']);
  });
});
