/**
 * The e-mail links of an all-in-one started with only PORT point at that port. The services' default PUBLIC_URL names
 * port 8090, so a system on another port mailed dead register and reset links (web app audit).
 */
import { publicUrlOf } from '../../packages/all-in-one/src/main';
import { ApiClient } from '../support/http';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';

let system: RunningSystem;
const mailbox = new Mailbox();

beforeAll(async () => {
  await mailbox.start();
  // No PUBLIC_URL: the system takes process.env, where none is set in the test command.
  system = await startSystem({ env: { SMTP_URL: mailbox.url } });
});
afterAll(async () => {
  await system?.stop();
  await mailbox.stop();
});

describe('e-mail links without PUBLIC_URL', () => {
  it('point at the port the gateway listens on, for sign-up and reset', async () => {
    const port = new URL(system.baseUrl).port;
    const client = new ApiClient(system.baseUrl);
    const email = `links-${Date.now()}@example.com`;
    expect((await client.post('/api/invitation', { email, referral_tokens: [] })).status).toBe(200);
    expect((await mailbox.waitFor(email, /auth\/register\//)).text).toContain(`http://localhost:${port}/auth/register/`);
    expect((await client.get(`/api/password/${encodeURIComponent(email)}`)).status).toBe(204);
  });

  it('keep PUBLIC_URL when it is set, and the default when the port is chosen at bind', () => {
    expect(publicUrlOf({ PUBLIC_URL: 'https://cards.example', PORT: '4141' })).toBe('https://cards.example');
    expect(publicUrlOf({ PORT: '4141' })).toBe('http://localhost:4141');
    expect(publicUrlOf({})).toBe('http://localhost:8090');
    expect(publicUrlOf({ PORT: '0' })).toBeUndefined();
  });
});
