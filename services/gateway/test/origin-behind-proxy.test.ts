// The CSRF Origin check's "own origin" behind a reverse proxy: scheme and host as the client used them. A proxy that
// sends the upstream's name in Host (nginx's default `proxy_set_header Host $proxy_host`, Traefik) names the public
// one in X-Forwarded-Host; the check read X-Forwarded-Proto through TRUST_PROXY but Host as sent, so every signed-in
// write from the app's own pages was refused 403 unless PUBLIC_URL happened to be that very origin.
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ClientError, Status } from 'nice-grpc';
import type { GatewayClients } from '../src/clients';
import type { GatewayAppOptions } from '../src/app';
import { appWithoutServices, closed, listening } from './app-without-services';

// No session is live: a request the Origin check lets through reaches the route and is 401; a refused one is 403.
const clients = {
  identity: {
    resolveSession: async () => {
      throw new ClientError('/identity.v1.IdentityService/ResolveSession', Status.UNAUTHENTICATED, 'no such session');
    },
  },
} as unknown as GatewayClients;

async function serve(overrides: Partial<GatewayAppOptions>): Promise<{ server: Server; port: number }> {
  const server = createServer(appWithoutServices({ clients, accessLogLevel: 'silent', publicUrl: 'https://cards.example.com', ...overrides }));
  await listening(server);
  return { server, port: (server.address() as AddressInfo).port };
}

/** A signed-in write as the proxy forwards it (node:http: fetch would not send Host and Origin as given). */
function createCollection(port: number, headers: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const payload = JSON.stringify({ name: 'reading list', is_public: true });
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, method: 'POST', path: '/api/card_collection', headers: { cookie: 'ai-editor=some-token', 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) as unknown }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const viaProxy = (origin: string) => ({ host: '10.0.0.5:8090', 'x-forwarded-host': 'www.cards.example.com', 'x-forwarded-proto': 'https', origin });

describe('the Origin check behind a reverse proxy', () => {
  it('takes the origin the proxy names in X-Forwarded-Host and X-Forwarded-Proto as the gateway\'s own (TRUST_PROXY set)', async () => {
    const { server, port } = await serve({ trustProxy: 1 });
    try {
      expect(await createCollection(port, viaProxy('https://www.cards.example.com'))).toEqual({ status: 401, body: { message: expect.any(String) } });
      // Written differently, the same origin.
      expect(await createCollection(port, { ...viaProxy('https://www.cards.example.com'), 'x-forwarded-host': 'WWW.Cards.Example.com:443' })).toMatchObject({ status: 401 });
      // Another site is still refused.
      expect(await createCollection(port, viaProxy('https://evil.example'))).toEqual({ status: 403, body: { message: expect.stringMatching(/^Cross-site request refused/) } });
      expect(await createCollection(port, viaProxy('http://www.cards.example.com'))).toMatchObject({ status: 403 });
    } finally {
      await closed(server);
    }
  });

  it('ignores X-Forwarded-Host from a client when no proxy is trusted', async () => {
    const { server, port } = await serve({ trustProxy: false });
    try {
      expect(await createCollection(port, { ...viaProxy('https://www.cards.example.com'), 'x-forwarded-proto': 'http', origin: 'http://www.cards.example.com' })).toMatchObject({ status: 403 });
      expect(await createCollection(port, { host: 'www.cards.example.com', origin: 'http://www.cards.example.com' })).toMatchObject({ status: 401 });
    } finally {
      await closed(server);
    }
  });
});
