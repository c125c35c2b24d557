import { createGrpcClient } from '@cards/platform';
import { identity } from '@cards/proto';
import { freePortsSync } from './engine-support';
import { startMongoSync, type MongoEngine } from './mongo';
import { FAST_READINESS, GRPC_UNAVAILABLE, healthOf, startServiceProcess, waitFor, type ServiceProcess } from './service-process';
import { describeOnEngine, engineForSuite, report } from './suite';

// Issue #8: a service running on MongoDB whose server goes away turns not ready (grpc.health.v1 NOT_SERVING
// for "" and its own name), answers calls UNAVAILABLE at once (503 through the gateway), does not crash,
// and is ready and serving again once a server answers on the same address — without a restart.
const { engine, skipReason } = engineForSuite('mongo-java-server', startMongoSync);

describeOnEngine('engine loss on MongoDB (identity alone, mongo-java-server stopped and restarted)', skipReason, () => {
  const [grpcPort, gatewayPort] = freePortsSync(2) as [number, number];
  const identityAddress = `127.0.0.1:${grpcPort}`;
  const mongoPort = Number(new URL(engine?.url ?? 'mongodb://127.0.0.1:1').port);
  let restarted: MongoEngine | undefined;
  let service: ServiceProcess;
  let gateway: ServiceProcess;
  const probe = healthOf(identityAddress);
  const { client, channel } = createGrpcClient(identity.IdentityServiceDefinition, identityAddress, { deadlineMs: 4000 });
  const api = (path: string, init?: RequestInit) => fetch(`http://127.0.0.1:${gatewayPort}${path}`, { ...init, signal: AbortSignal.timeout(8000) });
  const invite = (email: string) => api('/api/invitation', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, referral_tokens: [] }) });

  beforeAll(async () => {
    service = startServiceProcess('identity', { MONGO_URL: engine!.url, MONGO_DATABASE_PREFIX: 'engineloss', IDENTITY_GRPC_HOST: '127.0.0.1', IDENTITY_GRPC_PORT: String(grpcPort), PASSWORD_HASH_COST: '1024', ...FAST_READINESS });
    // Every peer of the gateway is identity here, so /healthz (which asks every peer) follows identity's readiness.
    const peers = Object.fromEntries(['IDENTITY', 'CARDS', 'SEARCH', 'FILES', 'NOTIFICATIONS'].map((svc) => [`${svc}_SERVICE_ADDR`, identityAddress]));
    gateway = startServiceProcess('gateway', { ...peers, PORT: String(gatewayPort), HOST: '127.0.0.1', GRPC_DEADLINE_MS: '4000', WEB_DIST_DIR: '' });
    await waitFor('identity SERVING', async () => (await probe.status()) === 'SERVING', 60_000, service);
    await waitFor('gateway /healthz 200', async () => (await api('/healthz').catch(() => undefined))?.status === 200, 60_000, gateway);
  }, 120_000);

  afterAll(async () => {
    channel.close();
    probe.channel.close();
    await Promise.all([gateway?.stop(), service?.stop()]);
    await restarted?.stop();
  }, 60_000);

  it('serves, turns NOT_SERVING and refuses calls UNAVAILABLE while MongoDB is gone, then serves again once it is back', async () => {
    expect(await probe.status('')).toBe('SERVING');
    expect(await probe.status('identity.v1.IdentityService')).toBe('SERVING');
    expect(await probe.status('engine:mongodb')).toBe('SERVING');
    expect((await invite('before@example.com')).status).toBe(200);

    await engine!.stop();
    const notReadyMs = await waitFor('identity NOT_SERVING', async () => (await probe.status()) === 'NOT_SERVING', 15_000, service);
    expect(await probe.status('identity.v1.IdentityService')).toBe('NOT_SERVING');
    expect(await probe.status('engine:mongodb')).toBe('NOT_SERVING');
    expect(await probe.status('liveness')).toBe('SERVING');
    report(`[engine loss] MongoDB stopped: identity NOT_SERVING after ${notReadyMs} ms`);

    const started = Date.now();
    const refused = await client.createInvitation({ email: 'during@example.com', referralTokens: [] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Error);
    expect(refused).toMatchObject({ code: GRPC_UNAVAILABLE });
    expect((refused as { details: string }).details).toContain('MongoDB (MONGO_URL) is unreachable');
    report(`[engine loss] a call during the outage answered UNAVAILABLE in ${Date.now() - started} ms`);

    const viaGateway = await invite('during@example.com');
    expect(viaGateway.status).toBe(503);
    expect(await viaGateway.json()).toEqual({ message: expect.stringContaining('unavailable') });
    const healthz = await api('/healthz');
    expect(healthz.status).toBe(503);
    expect(service.child.exitCode).toBeNull();

    restarted = startMongoSync({ port: mongoPort });
    const readyMs = await waitFor('identity SERVING again', async () => (await probe.status()) === 'SERVING', 30_000, service);
    expect(await probe.status('identity.v1.IdentityService')).toBe('SERVING');
    expect(await probe.status('engine:mongodb')).toBe('SERVING');
    report(`[engine loss] MongoDB back on the same port: identity SERVING after ${readyMs} ms`);
    expect((await invite('after@example.com')).status).toBe(200);
    await waitFor('gateway /healthz 200 again', async () => (await api('/healthz')).status === 200, 10_000, gateway);
    expect(service.child.exitCode).toBeNull();
    expect(service.output()).toContain('MongoDB (MONGO_URL) is unreachable: not ready until it answers again');
    expect(service.output()).toContain('MongoDB (MONGO_URL) answers again: ready');
  }, 90_000);
});
