import { randomBytes, randomUUID } from 'node:crypto';
import { freshClientAddress, withinOneWindow } from '../support/rate-window';
import { freePortsSync } from './engine-support';
import { startMongoSync } from './mongo';
import { startServiceProcess, waitFor, type ServiceProcess } from './service-process';
import { describeOnEngine, engineForSuite } from './suite';

// The login, invitation and reset limits hold across gateway replicas: two gateway processes given one MONGO_URL
// count in one place, so a client spreading its attempts over both is refused after the combined limit. While
// MongoDB is gone each gateway counts alone again (fail-open to per-process limits), never answering 500.
const { engine, skipReason } = engineForSuite('mongo-java-server', startMongoSync);

describeOnEngine('auth rate limits shared by two gateway processes on MongoDB (mongo-java-server)', skipReason, () => {
  const [identityPort, portA, portB] = freePortsSync(3) as [number, number, number];
  const identityAddress = `127.0.0.1:${identityPort}`;
  let identity: ServiceProcess;
  let gateways: ServiceProcess[] = [];

  /** A login attempt as the ingress forwards it to one gateway pod: the client's address is the last X-Forwarded-For entry. */
  const login = async (port: number, client: string, email = `${randomUUID()}@example.com`) => {
    const res = await fetch(`http://127.0.0.1:${port}/api/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': client },
      body: JSON.stringify({ email, password: 'not the password' }),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, body: (await res.json().catch(() => undefined)) as unknown };
  };
  const statuses = async (attempts: [number, string, string?][]) => {
    const answered: number[] = [];
    for (const [port, client, email] of attempts) answered.push((await login(port, client, email)).status);
    return answered;
  };

  beforeAll(async () => {
    identity = startServiceProcess('identity', { IDENTITY_GRPC_HOST: '127.0.0.1', IDENTITY_GRPC_PORT: String(identityPort), PASSWORD_HASH_COST: '1024' });
    const peers = Object.fromEntries(['IDENTITY', 'CARDS', 'SEARCH', 'FILES', 'NOTIFICATIONS'].map((svc) => [`${svc}_SERVICE_ADDR`, identityAddress]));
    const shared = { ...peers, MONGO_URL: engine!.url, MONGO_DATABASE_PREFIX: `limits${randomBytes(3).toString('hex')}`, HOST: '127.0.0.1', TRUST_PROXY: '1', WEB_DIST_DIR: '' };
    const limits = { RATE_LIMIT_AUTH_PER_IP: '3', RATE_LIMIT_AUTH_PER_EMAIL: '2' };
    gateways = [portA, portB].map((port) => startServiceProcess('gateway', { ...shared, ...limits, PORT: String(port) }));
    for (const [i, port] of [portA, portB].entries()) {
      await waitFor(`gateway ${i} /healthz 200`, async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.status === 200, 60_000, gateways[i]);
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all([...gateways.map((g) => g.stop()), identity?.stop()]);
  }, 60_000);

  // Limits count in windows aligned to the clock: each sequence runs within one (withinOneWindow), on addresses of its
  // own, done again if a minute's :00 passed between its first and last attempt (the count had started again half-way).
  it('refuses a client address after 3 attempts in all, spread over both gateways', async () => {
    const { spread, last, other } = await withinOneWindow(60_000, async () => {
      const [client, another] = [freshClientAddress(), freshClientAddress()];
      const spread = await statuses([[portA, client], [portB, client], [portA, client], [portB, client], [portA, client]]);
      return { spread, last: await login(portB, client), other: await statuses([[portB, another]]) };
    });
    expect(spread).toEqual([401, 401, 401, 429, 429]);
    expect(last).toEqual({ status: 429, body: { message: expect.any(String) } });
    expect(other).toEqual([401]);
    for (const gateway of gateways) expect(gateway.output()).toContain('auth rate limits counted in MongoDB, shared by every gateway replica');
  });

  it('refuses an e-mail address after 2 attempts in all, whichever gateway and client address they came through', async () => {
    const answered = await withinOneWindow(60_000, () => {
      const email = `${randomUUID()}@example.com`;
      const via = () => freshClientAddress();
      return statuses([[portA, via(), email], [portB, via(), email], [portA, via(), email], [portB, via(), email.toUpperCase()]]);
    });
    expect(answered).toEqual([401, 401, 429, 429]);
  });

  it('keeps answering logins while MongoDB is gone, each gateway then limiting on its own count', async () => {
    await engine!.stop();
    const answered = await withinOneWindow(60_000, () => {
      const client = freshClientAddress();
      return statuses([[portA, client], [portA, client], [portA, client], [portA, client], [portB, client]]);
    });
    expect(answered).toEqual([401, 401, 401, 429, 401]);
    for (const gateway of gateways) expect(gateway.child.exitCode).toBeNull();
    expect(gateways[0]!.output()).toContain('the shared counter failed; counting in this process until it answers again');
  }, 60_000);
});
