// The gateway behind one ingress (TRUST_PROXY=1, as the Helm chart sets it): the ingress appends the address it
// saw to whatever X-Forwarded-For the client sent, so only that last entry identifies the client.
import { randomUUID } from 'node:crypto';
import { ApiClient } from '../support/http';
import { freshClientAddress, withinOneWindow } from '../support/rate-window';
import { startSystem, type RunningSystem } from '../support/service';

let system: RunningSystem;

beforeAll(async () => {
  system = await startSystem({ env: { TRUST_PROXY: '1', RATE_LIMIT_AUTH_PER_IP: '3', RATE_LIMIT_AUTH_PER_EMAIL: '1000' } });
});
afterAll(async () => {
  await system?.stop();
});

/** A login attempt as the ingress forwards it: the client's own X-Forwarded-For, then the address the ingress saw. */
const loginVia = (clientAddress: string, claimed?: string) =>
  new ApiClient(system.baseUrl).request('POST', '/api/auth', { email: `${randomUUID()}@example.com`, password: 'not the password' }, { 'x-forwarded-for': claimed ? `${claimed}, ${clientAddress}` : clientAddress });

describe('behind an ingress (TRUST_PROXY=1)', () => {
  it('limits a client by the address the ingress saw, whatever X-Forwarded-For it sends itself', async () => {
    // A client address of its own per run: a run a minute boundary cut in two is done again (withinOneWindow).
    const { statuses, limited } = await withinOneWindow(60_000, async () => {
      const client = freshClientAddress();
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await loginVia(client, `10.0.${i}.1`)).status);
      return { statuses, limited: await loginVia(client, '192.0.2.99') };
    });
    expect(statuses).toEqual([401, 401, 401, 429]);
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ message: expect.any(String) });
  });

  it('keeps apart the clients the ingress tells apart', async () => {
    const statuses = await withinOneWindow(60_000, async () => {
      const [one, another] = [freshClientAddress(), freshClientAddress()];
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await loginVia(one)).status);
      statuses.push((await loginVia(another)).status, (await loginVia(one)).status);
      return statuses;
    });
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
  });
});
