import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GatewayClients } from '../src/clients';
import { MemoryAttemptCounter } from '../src/adapters/memory/memory-attempt-counter';
import { clientAddressKey, type RateLimitConfig } from '../src/http/rate-limits';
import type { GatewayAppOptions } from '../src/app';
import { appWithoutServices, counterInOneWindow, listening } from './app-without-services';

/** An identity that records the mails it is asked for (and answers as the real one does). */
function mailingIdentity() {
  const mails: string[] = [];
  const identity = {
    async requestPasswordReset({ email }: { email: string }) {
      mails.push(`reset:${email}`);
      return {};
    },
    async createInvitation({ email }: { email: string }) {
      mails.push(`invitation:${email}`);
      return {};
    },
  };
  return { mails, clients: { identity } as unknown as GatewayClients };
}

const generous: RateLimitConfig = { perIpPerMinute: 100_000, perEmailPerMinute: 100_000, counter: new MemoryAttemptCounter() };

async function serve(overrides: Partial<GatewayAppOptions>): Promise<{ server: Server; port: number }> {
  const server = createServer(appWithoutServices({ accessLogLevel: 'silent', ...overrides }));
  await listening(server);
  return { server, port: (server.address() as AddressInfo).port };
}

/** node:http rather than fetch, which would not let a test send Origin or Sec-Fetch-* as a browser does. */
function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: unknown): Promise<{ status: number; headers: Record<string, unknown>; body: unknown }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      { host: '127.0.0.1', port, method, path, headers: { ...headers, ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : undefined });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('GET /api/password/:email from another site', () => {
  let server: Server;
  let port: number;
  let mails: string[];
  beforeAll(async () => {
    const identity = mailingIdentity();
    mails = identity.mails;
    ({ server, port } = await serve({ clients: identity.clients, rateLimits: generous, corsOrigins: ['https://app.example.com'], publicUrl: 'https://cards.example.com' }));
  });
  afterAll(() => server.close());
  beforeEach(() => mails.splice(0));

  it('is refused 403 {"message"} when the browser says it is cross-site (an <img> on any page), and no mail leaves', async () => {
    const crossSite: Array<Record<string, string>> = [
      { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors', 'sec-fetch-dest': 'image' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { origin: 'https://evil.example', 'sec-fetch-site': 'same-site' },
      { referer: 'https://evil.example/page.html' },
    ];
    for (const headers of crossSite) {
      const res = await send(port, 'GET', '/api/password/victim%40example.com', headers);
      expect({ headers, status: res.status, body: res.body }).toEqual({ headers, status: 403, body: { message: expect.stringMatching(/^Cross-site request refused/) } });
    }
    expect(mails).toEqual([]);
  });

  it('is served from the site itself, from a configured origin, and from clients that are no browser page', async () => {
    const own = `http://127.0.0.1:${port}`;
    const fromThisSite: Array<Record<string, string>> = [
      {},
      { 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'cors' },
      { 'sec-fetch-site': 'none' },
      { origin: own, 'sec-fetch-site': 'same-origin' },
      { origin: 'https://cards.example.com' },
      { origin: 'https://app.example.com', 'sec-fetch-site': 'cross-site' },
      { referer: `${own}/reset` },
    ];
    for (const headers of fromThisSite) {
      const res = await send(port, 'GET', '/api/password/user%40example.com', headers);
      expect({ headers, status: res.status }).toEqual({ headers, status: 204 });
    }
    expect(mails).toHaveLength(7);
  });
});

describe('the per-address limit of the routes that send e-mail', () => {
  it('counts invitations and reset mails together per client address, far below the per-minute auth limits, with Retry-After', async () => {
    const identity = mailingIdentity();
    const { server, port } = await serve({ clients: identity.clients, rateLimits: { ...generous, counter: counterInOneWindow(), mailPerIp: 3, mailWindowMs: 600_000 } });
    try {
      const statuses = [
        (await send(port, 'POST', '/api/invitation', {}, { email: 'a@example.com', referral_tokens: [] })).status,
        (await send(port, 'GET', '/api/password/b%40example.com')).status,
        (await send(port, 'POST', '/api/password', {}, { email: 'c@example.com' })).status,
      ];
      // A reset that performs the reset (no mail) does not count; it fails here on the fake identity, not on the limit.
      const reset = await send(port, 'POST', '/api/password', {}, { password_reset_id: 'not-a-uuid', password: 'x', password_confirmation: 'x' });
      const refused = await send(port, 'POST', '/api/invitation', {}, { email: 'd@example.com', referral_tokens: [] });
      const refusedReset = await send(port, 'GET', '/api/password/e%40example.com');
      expect(statuses).toEqual([200, 204, 204]);
      expect(reset.status).toBe(400);
      expect({ status: refused.status, body: refused.body }).toEqual({ status: 429, body: { message: expect.stringMatching(/Too many e-mails/) } });
      // Windows are aligned to the clock (windowStartOf): Retry-After is the rest of the current 10-minute window, so a
      // client is told when the window ends, not a minute as by the per-minute auth limits (">60" failed in a window's last minute).
      const restOfWindow = Math.ceil((600_000 - (Date.now() % 600_000)) / 1000);
      const apart = Math.abs(((((Number(refused.headers['retry-after']) - restOfWindow + 300) % 600) + 600) % 600) - 300); // a boundary may pass between
      expect(apart).toBeLessThanOrEqual(2);
      expect(refusedReset.status).toBe(429);
      expect(identity.mails).toEqual(['invitation:a@example.com', 'reset:b@example.com', 'reset:c@example.com']);
    } finally {
      server.close();
    }
  });

  it('allows 200 mails per 10 minutes from one address by default', async () => {
    const identity = mailingIdentity();
    const { server, port } = await serve({ clients: identity.clients, rateLimits: { ...generous, counter: counterInOneWindow() } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 201; i++) statuses.push((await send(port, 'POST', '/api/invitation', {}, { email: `s${i}@example.com`, referral_tokens: [] })).status);
      expect(statuses).toEqual([...new Array<number>(200).fill(200), 429]);
    } finally {
      server.close();
    }
  });
});

describe('per-address limits and IPv6 clients', () => {
  it('key IPv6 clients by their /64 and IPv4-mapped addresses as IPv4', () => {
    expect(clientAddressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientAddressKey('::FFFF:cb00:7107')).toBe('203.0.113.7');
    expect(clientAddressKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:DB8:1:2::abcd')).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:0db8:0001:0002:ffff:0:0:1')).toBe('2001:db8:1:2::/64');
    expect(clientAddressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientAddressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(clientAddressKey('::1')).toBe('0:0:0:0::/64');
    expect(clientAddressKey('64:ff9b::203.0.113.7')).toBe('64:ff9b:0:0::/64');
    expect(clientAddressKey('2001:db8:1:3::1')).not.toBe(clientAddressKey('2001:db8:1:2::1'));
    expect(clientAddressKey(undefined)).toBe('unknown');
  });

  it('counts every spelling of one e-mail address as one (identity\'s account key, card-rules\' emailKey)', async () => {
    const identity = mailingIdentity();
    const { server, port } = await serve({ clients: identity.clients, rateLimits: { perIpPerMinute: 100, perEmailPerMinute: 2, counter: counterInOneWindow() } });
    try {
      const login = async (email: string) => (await send(port, 'POST', '/api/auth', {}, { email, password: 'not the password' })).status;
      // Capitals and a composed "ä", then a decomposed "ö", the domain in punycode and a final dot: one address.
      expect(await login(' J\u00d6RG@EX\u00c4MPLE.COM')).not.toBe(429);
      expect(await login('jo\u0308rg@xn--exmple-cua.com.')).not.toBe(429);
      expect(await login('j\u00f6rg@ex\u00e4mple.com')).toBe(429);
      expect(await login('j\u00f6rg@example.com')).not.toBe(429);
    } finally {
      server.close();
    }
  });

  it('a client rotating addresses within its /64 is limited as one (login and mail limits), another /64 is not', async () => {
    const identity = mailingIdentity();
    const limits = { perIpPerMinute: 2, perEmailPerMinute: 100, counter: counterInOneWindow() };
    // One trusted proxy in front: X-Forwarded-For's last entry is the client's address, as behind an ingress.
    const { server, port } = await serve({ clients: identity.clients, rateLimits: limits, trustProxy: 1 });
    const mailOnly = await serve({ clients: identity.clients, rateLimits: { ...generous, counter: counterInOneWindow(), mailPerIp: 2 }, trustProxy: 1 });
    try {
      const login = async (ip: string) => (await send(port, 'POST', '/api/auth', { 'x-forwarded-for': ip }, { email: 1 })).status;
      expect([await login('2001:db8:1:2::1'), await login('2001:db8:1:2::2'), await login('2001:db8:1:2:ffff:ffff:ffff:ffff')]).toEqual([400, 400, 429]);
      expect(await login('2001:db8:1:3::1')).toBe(400);
      expect([await login('198.51.100.1'), await login('::ffff:198.51.100.1')]).toEqual([400, 400]);
      expect(await login('198.51.100.1')).toBe(429);

      const invite = async (ip: string) => send(mailOnly.port, 'POST', '/api/invitation', { 'x-forwarded-for': ip }, { email: 'x@example.com', referral_tokens: [] });
      expect([(await invite('2001:db8:9:9::a')).status, (await invite('2001:db8:9:9::b')).status]).toEqual([200, 200]);
      expect(await invite('2001:db8:9:9:1:2:3:4')).toMatchObject({ status: 429, body: { message: expect.stringMatching(/Too many e-mails/) } });
      expect((await invite('2001:db8:9:a::a')).status).toBe(200);
    } finally {
      server.close();
      mailOnly.server.close();
    }
  });
});
