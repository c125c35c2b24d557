// The gateway behind one ingress (TRUST_PROXY=1, as the Helm chart sets it): the ingress appends the address it
// saw to whatever X-Forwarded-For the client sent, so only that last entry identifies the client.
import { randomUUID } from 'node:crypto';
import { ApiClient } from '../support/http';
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
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await loginVia('203.0.113.7', `10.0.${i}.1`)).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const limited = await loginVia('203.0.113.7', '198.51.100.99');
    expect(limited.status).toBe(429);
    expect(limited.json).toEqual({ message: expect.any(String) });
  });

  it('keeps apart the clients the ingress tells apart', async () => {
    for (let i = 0; i < 3; i++) expect((await loginVia('203.0.113.8')).status).toBe(401);
    expect((await loginVia('203.0.113.9')).status).toBe(401);
    expect((await loginVia('203.0.113.8')).status).toBe(429);
  });
});
