import { createServer } from 'node:http';
import type { GatewayClients } from '../src/clients';
import { appWithoutServices, counterInOneWindow, listening } from './app-without-services';

/** An identity that takes every invitation and reset mail asked for. */
const identity = { clients: { identity: { requestPasswordReset: async () => ({}), createInvitation: async () => ({}) } } as unknown as GatewayClients };

/** The value of one series in the Prometheus text of GET /metrics (0 when absent). */
async function scraped(base: string, name: string, labels: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('rate-limit hits in /metrics', () => {
  it('counts each 429 under the limit that gave it (per address, per e-mail, mail), with no address or e-mail in the labels', async () => {
    const app = appWithoutServices({ ...identity, accessLogLevel: 'silent', rateLimits: { perIpPerMinute: 2, perEmailPerMinute: 1, mailPerIp: 1, counter: counterInOneWindow() } });
    const { server, base } = await listening(createServer(app));
    try {
      const count = (limit: string) => scraped(base, 'card_library_rate_limited_total', `limit="${limit}"`);
      const before = { loginIp: await count('login_ip'), loginEmail: await count('login_email'), mail: await count('mail_ip') };
      const post = (path: string, body: unknown) => fetch(`${base}/api${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

      // The second login for one e-mail: its per-e-mail limit (1).
      expect((await post('/auth', { email: 'a@example.com', password: 'x' })).status).not.toBe(429);
      expect((await post('/auth', { email: 'a@example.com', password: 'x' })).status).toBe(429);
      expect(await count('login_email')).toBe(before.loginEmail + 1);
      // The third login from this address: its per-address limit (2).
      expect((await post('/auth', { email: 'b@example.com', password: 'x' })).status).toBe(429);
      expect(await count('login_ip')).toBe(before.loginIp + 1);

      // The second invitation mail from this address: the mail limit (1).
      expect((await post('/invitation', { email: 'c@example.com', referral_tokens: [] })).status).toBe(200);
      expect((await post('/invitation', { email: 'd@example.com', referral_tokens: [] })).status).toBe(429);
      expect(await count('mail_ip')).toBe(before.mail + 1);

      const text = await (await fetch(`${base}/metrics`)).text();
      expect(text).not.toMatch(/card_library_rate_limited_total\{[^}]*(example\.com|127\.0\.0\.1)/);
    } finally {
      server.close();
    }
  });
});
