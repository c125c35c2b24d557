import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '@cards/platform';
import { appWithoutServices, listening } from './app-without-services';

async function serve(checkPeers: () => Promise<readonly string[]>, logLines?: Array<Record<string, unknown>>): Promise<{ server: Server; base: string; url: string }> {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines?.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const server = createServer(appWithoutServices({ checkPeers, logger: createLogger('gateway-test', 'info', sink), accessLogLevel: 'silent' }));
  await listening(server);
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { server, base, url: `${base}/healthz` };
}

describe('GET /healthz', () => {
  it('answers 200 {"status":"ok"} when the peers answer, and 503 with an error message like every other error when not', async () => {
    for (const [answer, status, body] of [
      [async () => [], 200, { status: 'ok' }],
      [async () => ['cards'], 503, { message: expect.stringMatching(/not answering/) }],
      [async () => Promise.reject(new Error('down')), 503, { message: expect.stringMatching(/not answering/) }],
    ] as const) {
      const { server, url } = await serve(answer);
      try {
        const res = await fetch(url);
        expect({ status: res.status, type: res.headers.get('content-type'), body: await res.json() }).toEqual({ status, type: expect.stringMatching(/^application\/json/), body });
      } finally {
        server.close();
      }
    }
  });

  it('names the peers that do not answer, and logs a warning once per change of state, not at every probe', async () => {
    let down: string[] = [];
    const lines: Array<Record<string, unknown>> = [];
    const { server, url } = await serve(async () => down, lines);
    try {
      const probe = async () => {
        const res = await fetch(url);
        return { status: res.status, body: (await res.json()) as { message?: string } };
      };
      expect((await probe()).status).toBe(200);
      down = ['search', 'cards'];
      for (let i = 0; i < 3; i++) {
        const { status, body } = await probe();
        expect(status).toBe(503);
        expect(body.message).toMatch(/not answering: .*search/);
        expect(body.message).toMatch(/not answering: .*cards/);
        expect(body.message).not.toMatch(/identity|files|notifications/);
      }
      down = ['cards', 'search'];
      expect((await probe()).status).toBe(503);
      down = ['search'];
      expect((await probe()).body.message).toMatch(/not answering: search$/);
      down = [];
      expect((await probe()).status).toBe(200);
      expect((await probe()).status).toBe(200);
      const health = lines.filter((l) => /peer/.test(String(l.msg)));
      expect(health.map((l) => [l.level, l.msg])).toEqual([
        [40, 'peers not answering: cards, search'],
        [40, 'peers not answering: search'],
        [30, 'every peer answers again'],
      ]);
      expect(health[0]!.notAnswering).toEqual(['cards', 'search']);
    } finally {
      server.close();
    }
  });
});

describe('GET /livez', () => {
  it('answers 200 from the process alone: peers that do not answer, a check that fails or never ends do not matter', async () => {
    for (const checkPeers of [async () => ['identity', 'cards'], async () => Promise.reject(new Error('down')), () => new Promise<string[]>(() => undefined)]) {
      let asked = 0;
      const { server, base } = await serve(() => {
        asked++;
        return checkPeers();
      });
      try {
        const res = await fetch(`${base}/livez`, { signal: AbortSignal.timeout(2000) });
        expect({ status: res.status, type: res.headers.get('content-type'), body: await res.json() }).toEqual({ status: 200, type: expect.stringMatching(/^application\/json/), body: { status: 'ok' } });
        expect(asked).toBe(0);
        // Other methods: a JSON 405, as on /healthz.
        const post = await fetch(`${base}/livez`, { method: 'POST' });
        expect(post.status).toBe(405);
      } finally {
        server.close();
      }
    }
  });
});
