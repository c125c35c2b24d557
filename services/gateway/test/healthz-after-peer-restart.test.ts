// /healthz and the calls after a peer restarts on its address (kill -9 of a service, restarted by its supervisor).
import { freePort } from '@cards/platform';
import { startGateway } from '../src/main';
import { startFakePeer } from './fake-peer';

const startPeer = (address: string) => startFakePeer(address, 7);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a peer restarted on the same address', () => {
  // Stopped after the test whatever it did: one timing out in a wait below never reaches a finally, and a gateway or a
  // peer left running keeps jest from exiting.
  let gateway: Awaited<ReturnType<typeof startGateway>> | undefined;
  let peer: Awaited<ReturnType<typeof startPeer>> | undefined;
  afterEach(async () => {
    await gateway?.stop();
    peer?.forceShutdown();
    gateway = undefined;
    peer = undefined;
  });

  it('is called again once /healthz answers 200: the probe and the calls use the same channel', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    peer = await startPeer(address);
    const peers = ['IDENTITY', 'CARDS', 'SEARCH', 'FILES', 'NOTIFICATIONS'].map((name) => [`${name}_SERVICE_ADDR`, address]);
    gateway = await startGateway({ ...Object.fromEntries(peers), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ACCESS_LOG_LEVEL: 'silent' });
    const base = `http://127.0.0.1:${gateway.port}`;
    const count = () => fetch(`${base}/api/card/count`).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect(await count()).toEqual({ status: 200, body: { total_count: 7 } });
    peer.forceShutdown();
    // Calls while the peer is away: the calls' channel fails its reconnects and backs off between attempts.
    for (let i = 0; i < 30; i++) {
      expect((await count()).status).toBe(503);
      await pause(200);
    }
    peer = await startPeer(address);
    let healthy = false;
    for (let i = 0; i < 300 && !healthy; i++) {
      healthy = (await fetch(`${base}/healthz`)).status === 200;
      if (!healthy) await pause(100);
    }
    expect(healthy).toBe(true);
    // Ready means ready: the first call after the probe passes reaches the peer (before: 503 until the calls'
    // channel's next attempt, seconds later, while the probe's own channel had already reconnected).
    expect(await count()).toEqual({ status: 200, body: { total_count: 7 } });
  }, 60_000);
});
