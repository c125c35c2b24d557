// METRICS_PORT moves the gateway's /metrics off its HTTP port (which an ingress routing `/` would expose) to a
// listener of its own, as the gRPC services serve theirs.
import type { Socket } from 'node:net';
import { freePort } from '@cards/platform';
import { startGateway } from '../src/main';
import { startFakePeer } from './fake-peer';
import { holdAnsweredConnections } from '../../../test/support/held-connections';

const startPeer = (address: string) => startFakePeer(address, 3);

async function startWithPeer(extraEnv: Record<string, string>) {
  const address = `127.0.0.1:${await freePort()}`;
  const peer = await startPeer(address);
  const peers = ['IDENTITY', 'CARDS', 'SEARCH', 'FILES', 'NOTIFICATIONS'].map((name) => [`${name}_SERVICE_ADDR`, address]);
  const gateway = await startGateway({ ...Object.fromEntries(peers), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ACCESS_LOG_LEVEL: 'silent', ...extraEnv }).catch((err: unknown) => {
    peer.forceShutdown();
    throw err;
  });
  const system = {
    base: `http://127.0.0.1:${gateway.port}`,
    async stop() {
      await gateway.stop();
      peer.forceShutdown();
    },
  };
  running.push(system);
  return system;
}

/**
 * The systems started, stopped after each test whatever it did: a test that fails or times out before a finally of its
 * own would leave a gateway and its peer running, which keeps jest from exiting.
 */
const running: { stop(): Promise<void> }[] = [];
/** Connections a test holds open, destroyed before its system stops. */
const held: Socket[] = [];
afterEach(async () => {
  for (const socket of held.splice(0)) socket.destroy();
  for (const system of running.splice(0)) await system.stop();
});

describe('the gateway with METRICS_PORT', () => {
  it('serves /metrics on that port alone, counting the requests of its HTTP port, whose /metrics is a JSON 404', async () => {
    const metricsPort = await freePort();
    const system = await startWithPeer({ METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1' });
    expect((await fetch(`${system.base}/api/card/count`)).status).toBe(200);

    const onHttpPort = await fetch(`${system.base}/metrics`);
    expect({ status: onHttpPort.status, body: await onHttpPort.json() }).toEqual({ status: 404, body: { message: expect.any(String) } });

    const scraped = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(scraped.status).toBe(200);
    const text = await scraped.text();
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*route="\/api\/card\/count"[^}]*\} 1\b/);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
  });

  it('answers GET /livez on that port while every connection HTTP_MAX_CONNECTIONS allows on its HTTP port is held (the chart probes liveness there)', async () => {
    const metricsPort = await freePort();
    const system = await startWithPeer({ METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1', HTTP_MAX_CONNECTIONS: '2' });
    // Each connection is counted once its first answer has come back; keep-alive then holds it open.
    const { port } = new URL(system.base);
    await holdAnsweredConnections(Number(port), 2, held);

    // A kubelet probe on the HTTP port is refused like any other new connection...
    const onHttpPort = await fetch(`${system.base}/livez`);
    expect({ status: onHttpPort.status, body: await onHttpPort.json() }).toEqual({ status: 503, body: { message: expect.stringMatching(/too many open connections/) } });
    // ...while on the metrics port the process still says it is alive, as its HTTP port would.
    const onMetricsPort = await fetch(`http://127.0.0.1:${metricsPort}/livez`);
    expect({ status: onMetricsPort.status, body: await onMetricsPort.json() }).toEqual({ status: 200, body: { status: 'ok' } });
  });

  it('keeps /metrics on its HTTP port without it (the all-in-one, a local run)', async () => {
    const system = await startWithPeer({});
    const res = await fetch(`${system.base}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toMatch(/^process_cpu_seconds_total /m);
  });

  it('refuses to start with a METRICS_PORT that is not a port, naming it', async () => {
    await expect(startWithPeer({ METRICS_PORT: 'ninety' })).rejects.toThrow(/METRICS_PORT/);
  });
});
