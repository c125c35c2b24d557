import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { appWithoutServices } from './app-without-services';

async function serve(checkPeers: () => Promise<boolean>): Promise<{ server: Server; url: string }> {
  const server = createServer(appWithoutServices({ checkPeers }));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz` };
}

describe('GET /healthz', () => {
  it('answers 200 {"status":"ok"} when the peers answer, and 503 with an error message like every other error when not', async () => {
    for (const [answer, status, body] of [
      [async () => true, 200, { status: 'ok' }],
      [async () => false, 503, { message: expect.stringMatching(/not answering/) }],
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
});
