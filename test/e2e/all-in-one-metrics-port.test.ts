import { freePort } from '@cards/platform';
import { Mailbox } from '../support/mailbox';
import { startSystem, type RunningSystem } from '../support/service';
import { signUp, type TestUser } from '../support/accounts';
import { eventually } from './openapi-support';

// The all-in-one's /metrics holds every service's counters, and some tell more than the API does: a reset mail goes
// only to an address with an account, so card_library_mails_total{kind="password_reset"} moving after
// GET /api/password/:email says the address has one, while the answer (204 either way) does not. METRICS_PORT moves
// /metrics off the public PORT, as it does for the gateway on its own.

let system: RunningSystem;
let mailbox: Mailbox;
let user: TestUser;
let metricsPort: number;

beforeAll(async () => {
  mailbox = new Mailbox();
  await mailbox.start();
  metricsPort = await freePort();
  system = await startSystem({ env: { SMTP_URL: mailbox.url, METRICS_PORT: String(metricsPort) } });
  user = await signUp(system.baseUrl, mailbox, 'metrics-port');
}, 120_000);

afterAll(async () => {
  await system?.stop();
  await mailbox?.stop();
});

const resetMailsSent = async () => {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return Number(/^card_library_mails_total\{kind="password_reset",outcome="sent"\} (\S+)$/m.exec(text)?.[1] ?? NaN);
};

describe('the all-in-one with METRICS_PORT', () => {
  it('serves /metrics, every service included, on that port only: on PORT it is a JSON 404', async () => {
    const onPort = await fetch(`${system.baseUrl}/metrics`);
    expect({ status: onPort.status, body: await onPort.json() }).toEqual({ status: 404, body: { message: expect.any(String) } });
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(text).toMatch(/^http_request_duration_seconds_count\{/m);
    expect(text).toMatch(/^grpc_server_handled_total\{[^}]*grpc_service="identity\.v1\.IdentityService"/m);
    expect(text).toMatch(/^card_library_mails_total\{kind="invitation",outcome="sent"\} [1-9]/m);
  });

  it('keeps the reset mail counter, which tells an address with an account from one without, off the public port', async () => {
    const before = await resetMailsSent();
    expect((await fetch(`${system.baseUrl}/api/password/${encodeURIComponent('nobody-here@example.com')}`)).status).toBe(204);
    expect((await fetch(`${system.baseUrl}/api/password/${encodeURIComponent(user.email)}`)).status).toBe(204);
    // Only the account's request sent a mail: the counter is an oracle, so it must not be where anyone can read it.
    await eventually('the reset mail counted', async () => (await resetMailsSent()) === before + 1);
    expect((await fetch(`${system.baseUrl}/metrics`)).status).toBe(404);
  });
});
