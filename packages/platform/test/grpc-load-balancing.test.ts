// Spreading calls over every backend behind one target (a Kubernetes headless Service: one DNS A record per pod), and
// finding backends added later through the servers' maximum connection age.
import { experimental } from '@grpc/grpc-js';
import { createChannel, createClient, ServerError, Status } from 'nice-grpc';
import { files, identity } from '@cards/proto';
import { createGrpcClient } from '../src/grpc-client';
import { grpcServerSettingsFrom, MAX_CONNECTION_AGE_MS, startGrpcServer, type GrpcServerHandle } from '../src/grpc-server';
import { createLogger } from '../src/logger';
import { serviceWith } from './support/service-with';

/** An identity server whose resolveSession answers with its own name, so the caller sees which backend answered. */
function startNamedServer(name: string, options: { maxConnectionAgeMs?: number; maxConnectionAgeGraceMs?: number } = {}): Promise<GrpcServerHandle> {
  return startGrpcServer({
    name,
    logger: createLogger(name, 'silent'),
    ...options,
    register: (s) =>
      s.add(
        identity.IdentityServiceDefinition,
        serviceWith(identity.IdentityServiceDefinition, {
          async resolveSession() {
            return { id: name, email: `${name}@example.com`, visibleEmail: true };
          },
        }),
      ),
  });
}

/**
 * A name resolver over a list of ports that can grow, standing in for DNS over a headless Service: it answers with
 * the list as it is whenever the channel asks (at start, and when a connection ends), never on its own.
 */
const pools = new Map<string, number[]>();
class PoolResolver implements experimental.Resolver {
  constructor(
    private readonly target: { path: string },
    private readonly listener: experimental.ResolverListener,
  ) {}
  updateResolution(): void {
    process.nextTick(() => {
      const ports = pools.get(this.target.path) ?? [];
      this.listener({ ok: true, value: ports.map((port) => ({ addresses: [{ host: '127.0.0.1', port }] })) }, {}, null, '');
    });
  }
  destroy(): void {}
  static getDefaultAuthority(target: { path: string }): string {
    return target.path;
  }
}
experimental.registerResolver('test-pool', PoolResolver as unknown as Parameters<typeof experimental.registerResolver>[1]);

const servers: GrpcServerHandle[] = [];
const channels: { close(): void }[] = [];
afterEach(async () => {
  channels.splice(0).forEach((c) => c.close());
  await Promise.all(servers.splice(0).map((s) => s.shutdown(100)));
});

async function started(name: string, options?: Parameters<typeof startNamedServer>[1]) {
  const server = await startNamedServer(name, options);
  servers.push(server);
  return server;
}

function client(target: string) {
  const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, target);
  channels.push(channel);
  return client;
}

/** Who answered each of `count` calls made one after the other. */
async function answerers(call: () => Promise<{ id: string }>, count: number): Promise<Map<string, number>> {
  const seen = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const { id } = await call();
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  return seen;
}

describe('gRPC client load balancing over a target with several backends', () => {
  it('spreads calls over every backend behind one target, where a channel of the default policy sends all to one', async () => {
    const [a, b] = [await started('a'), await started('b')];
    const target = `ipv4:127.0.0.1:${a.port},127.0.0.1:${b.port}`;

    const spread = client(target);
    // round_robin connects to every address at once; calls go to whichever are connected, in turn.
    await answerers(() => spread.resolveSession({ token: 'warm-up' }), 1);
    const withPolicy = await answerers(() => spread.resolveSession({ token: 'x' }), 40);
    expect([...withPolicy.keys()].sort()).toEqual(['a', 'b']);

    // What every caller did before: pick_first, one connection to the first address, whatever the address list.
    const plainChannel = createChannel(target);
    channels.push(plainChannel);
    const plain = createClient(identity.IdentityServiceDefinition, plainChannel);
    const withoutPolicy = await answerers(() => plain.resolveSession({ token: 'x' }), 40);
    expect([...withoutPolicy.values()]).toEqual([40]);
  });

  it('keeps calling a single address as before, named host:port or as a dns:/// target (as the Helm chart names peers)', async () => {
    const only = await started('only');
    const seen = await answerers(() => client(only.address).resolveSession({ token: 'x' }), 5);
    expect(Object.fromEntries(seen)).toEqual({ only: 5 });
    const byName = client(`dns:///localhost:${only.port}`);
    expect(Object.fromEntries(await answerers(() => byName.resolveSession({ token: 'x' }), 5))).toEqual({ only: 5 });
  });
});

describe('gRPC server maximum connection age', () => {
  it('sends callers of a target to a backend started after they connected, without a failed call', async () => {
    const first = await started('first', { maxConnectionAgeMs: 300, maxConnectionAgeGraceMs: 10_000 });
    pools.set('later', [first.port]);
    const caller = client('test-pool:///later');
    expect(await caller.resolveSession({ token: 'x' })).toMatchObject({ id: 'first' });

    const later = await started('later', { maxConnectionAgeMs: 300, maxConnectionAgeGraceMs: 10_000 });
    pools.get('later')!.push(later.port);
    // The connection to `first` reaches its age, the channel resolves the name again and connects to both. Calls are
    // not idempotent here (no retry by callPolicyMiddleware): any call lost to a closing connection would throw.
    const seen = new Map<string, number>();
    const giveUpAt = Date.now() + 20_000;
    while (!seen.has('later') && Date.now() < giveUpAt) {
      const { id } = await caller.resolveSession({ token: 'x' });
      seen.set(id, (seen.get(id) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(seen.has('later')).toBe(true);
  });

  it('fails no call, idempotent or not, while connections under load reach their age again and again', async () => {
    const server = await started('aging', { maxConnectionAgeMs: 100, maxConnectionAgeGraceMs: 10_000 });
    const caller = client(server.address);
    // A call sent as the server's GOAWAY crosses it is refused unprocessed; only grpc-js's transparent retry sends
    // it again (with retries off, hundreds of these failed UNAVAILABLE "Stream refused by server").
    const failures: string[] = [];
    let answered = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        for (let i = 0; i < 200; i++) {
          await caller.resolveSession({ token: 'x' }).then(
            () => answered++,
            (error: Error) => failures.push(error.message),
          );
        }
      }),
    );
    expect({ answered, failures: failures.slice(0, 3) }).toEqual({ answered: 2000, failures: [] });
  });

  it('lets calls under way when the age is reached finish: a slow unary call and a stream of chunks', async () => {
    const ageMs = 200;
    const chunks = 8;
    const server = await startGrpcServer({
      name: 'files',
      logger: createLogger('files', 'silent'),
      maxConnectionAgeMs: ageMs,
      maxConnectionAgeGraceMs: 10_000,
      register: (s) => {
        s.add(
          identity.IdentityServiceDefinition,
          serviceWith(identity.IdentityServiceDefinition, {
            async resolveSession() {
              await new Promise((r) => setTimeout(r, ageMs * 5));
              return { id: 'slow', email: 'slow@example.com', visibleEmail: true };
            },
          }),
        );
        s.add(
          files.FileServiceDefinition,
          serviceWith(files.FileServiceDefinition, {
            async *readFile() {
              for (let i = 0; i < chunks; i++) {
                await new Promise((r) => setTimeout(r, ageMs / 2));
                yield { part: { $case: 'chunk' as const, value: Buffer.from([i]) } };
              }
            },
          }),
        );
      },
    });
    servers.push(server);
    const slow = client(server.address).resolveSession({ token: 'x' });
    const { client: filesClient, channel } = createGrpcClient(files.FileServiceDefinition, server.address);
    channels.push(channel);
    const received: number[] = [];
    for await (const message of filesClient.readFile({ fileId: 'f' })) {
      if (message.part?.$case === 'chunk') received.push(message.part.value[0]!);
    }
    expect(received).toEqual([...Array(chunks).keys()]);
    await expect(slow).resolves.toMatchObject({ id: 'slow' });
  });

  it('is read from GRPC_MAX_CONNECTION_AGE_MS and GRPC_MAX_CONNECTION_AGE_GRACE_MS: 5 min and 1 min by default, 0 for never', () => {
    expect(grpcServerSettingsFrom({})).toMatchObject({ maxConnectionAgeMs: 300_000, maxConnectionAgeGraceMs: 60_000 });
    expect(grpcServerSettingsFrom({ GRPC_MAX_CONNECTION_AGE_MS: '0', GRPC_MAX_CONNECTION_AGE_GRACE_MS: '120000' })).toMatchObject({ maxConnectionAgeMs: 0, maxConnectionAgeGraceMs: 120_000 });
    for (const [name, value] of [
      ['GRPC_MAX_CONNECTION_AGE_MS', '10'],
      ['GRPC_MAX_CONNECTION_AGE_MS', 'soon'],
      ['GRPC_MAX_CONNECTION_AGE_GRACE_MS', '-1'],
    ]) {
      expect(() => grpcServerSettingsFrom({ [name!]: value })).toThrow(new RegExp(`${name}:`));
    }
  });

  it("refuses at start an age or a grace longer than Node's timers hold (they would end every connection 1 ms after it opens), naming the longest", () => {
    expect(MAX_CONNECTION_AGE_MS).toBe(1_952_257_860);
    expect(() => grpcServerSettingsFrom({ GRPC_MAX_CONNECTION_AGE_MS: String(30 * 24 * 3_600_000) })).toThrow(/GRPC_MAX_CONNECTION_AGE_MS: must be at most 1952257860/);
    expect(() => grpcServerSettingsFrom({ GRPC_MAX_CONNECTION_AGE_MS: String(2 ** 31 - 1) })).toThrow(/GRPC_MAX_CONNECTION_AGE_MS: must be at most/);
    expect(() => grpcServerSettingsFrom({ GRPC_MAX_CONNECTION_AGE_GRACE_MS: String(2 ** 31) })).toThrow(/GRPC_MAX_CONNECTION_AGE_GRACE_MS: must be at most 2147483647/);
    expect(grpcServerSettingsFrom({ GRPC_MAX_CONNECTION_AGE_MS: '1952257860', GRPC_MAX_CONNECTION_AGE_GRACE_MS: '2147483647' })).toMatchObject({ maxConnectionAgeMs: 1_952_257_860, maxConnectionAgeGraceMs: 2_147_483_647 });
  });

  it('reads a value of only spaces as unset (the defaults), not as 0 (never age, no drain)', () => {
    expect(grpcServerSettingsFrom({ GRPC_MAX_CONNECTION_AGE_MS: ' ', SHUTDOWN_DRAIN_MS: ' ' })).toMatchObject({ maxConnectionAgeMs: 300_000, shutdownDrainMs: 5000 });
  });
});
