// METRICS_PORT moves the gateway's /metrics off its HTTP port (which an ingress routing `/` would expose) to a
// listener of its own, as the gRPC services serve theirs.
import { freePort } from '@cards/platform';
import { startGateway } from '../src/main';
import { startFakePeer } from './fake-peer';

const startPeer = (address: string) => startFakePeer(address, 3);

async function startWithPeer(extraEnv: Record<string, string>) {
  const address = `127.0.0.1:${await freePort()}`;
  const peer = await startPeer(address);
  const peers = ['IDENTITY', 'CARDS', 'SEARCH', 'FILES', 'NOTIFICATIONS'].map((name) => [`${name}_SERVICE_ADDR`, address]);
  const gateway = await startGateway({ ...Object.fromEntries(peers), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ACCESS_LOG_LEVEL: 'silent', ...extraEnv }).catch((err: unknown) => {
    peer.forceShutdown();
    throw err;
  });
  return {
    base: `http://127.0.0.1:${gateway.port}`,
    async stop() {
      await gateway.stop();
      peer.forceShutdown();
    },
  };
}

describe('the gateway with METRICS_PORT', () => {
  it('serves /metrics on that port alone, counting the requests of its HTTP port, whose /metrics is a JSON 404', async () => {
    const metricsPort = await freePort();
    const system = await startWithPeer({ METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1' });
    try {
      expect((await fetch(`${system.base}/api/card/count`)).status).toBe(200);

      const onHttpPort = await fetch(`${system.base}/metrics`);
      expect({ status: onHttpPort.status, body: await onHttpPort.json() }).toEqual({ status: 404, body: { message: expect.any(String) } });

      const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(scraped.status).toBe(200);
      const text = await scraped.text();
      expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/api\/card\/count"[^}]*\} 1\b/);
      expect(text).toMatch(/^process_cpu_seconds_total /m);
    } finally {
      await system.stop();
    }
  });

  it('keeps /metrics on its HTTP port without it (the all-in-one, a local run)', async () => {
    const system = await startWithPeer({});
    try {
      const res = await fetch(`${system.base}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/^process_cpu_seconds_total /m);
    } finally {
      await system.stop();
    }
  });

  it('refuses to start with a METRICS_PORT that is not a port, naming it', async () => {
    await expect(startWithPeer({ METRICS_PORT: 'ninety' })).rejects.toThrow(/METRICS_PORT/);
  });
});
