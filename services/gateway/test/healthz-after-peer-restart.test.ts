// /healthz and the calls after a peer restarts on its address (kill -9 of a service, restarted by its supervisor).
import { createServer, type Server } from 'node:net';
import { freePort } from '@cards/platform';
import { startGateway } from '../src/main';
import { until } from './app-without-services';
import { startFakePeer } from './fake-peer';

const startPeer = (address: string) => startFakePeer(address, 7);

/**
 * The address of a killed peer: every connection to it fails at once (reset), and the attempts are counted — the
 * gateway's channel to the peer makes them, backing off between them up to its cap (1 s) by the fifth.
 */
async function refusing(address: string): Promise<{ attempts: () => number; server: Server }> {
  let attempts = 0;
  const server = createServer((socket) => {
    attempts++;
    socket.resetAndDestroy();
  });
  const [host, port] = address.split(':');
  await new Promise<void>((resolve) => server.listen(Number(port), host, resolve));
  return { attempts: () => attempts, server };
}

const closed = (server: Server) => new Promise<void>((resolve) => (server.listening ? server.close(() => resolve()) : resolve()));

describe('a peer restarted on the same address', () => {
  // Stopped after the test whatever it did: one timing out in a wait below never reaches a finally, and a gateway or a
  // peer left running keeps jest from exiting.
  let gateway: Awaited<ReturnType<typeof startGateway>> | undefined;
  let peer: Awaited<ReturnType<typeof startPeer>> | undefined;
  let others: Awaited<ReturnType<typeof startPeer>> | undefined;
  let away: Awaited<ReturnType<typeof refusing>> | undefined;
  afterEach(async () => {
    await gateway?.stop();
    peer?.forceShutdown();
    others?.forceShutdown();
    if (away) await closed(away.server);
    gateway = undefined;
    peer = undefined;
    others = undefined;
    away = undefined;
  });

  it('is called again once /healthz answers 200: the probe and the calls use the same channel', async () => {
    // cards restarts; the other four peers stay up at an address of their own (each has its channel, so the attempts
    // counted below are the cards channel's alone).
    const address = `127.0.0.1:${await freePort()}`;
    const othersAddress = `127.0.0.1:${await freePort()}`;
    peer = await startPeer(address);
    others = await startPeer(othersAddress);
    const peers = ['IDENTITY', 'CARDS', 'SEARCH', 'FILES', 'NOTIFICATIONS'].map((name) => [`${name}_SERVICE_ADDR`, name === 'CARDS' ? address : othersAddress]);
    gateway = await startGateway({ ...Object.fromEntries(peers), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ACCESS_LOG_LEVEL: 'silent' });
    const base = `http://127.0.0.1:${gateway.port}`;
    const count = () => fetch(`${base}/api/card/count`).then(async (r) => ({ status: r.status, body: await r.json() }));
    expect(await count()).toEqual({ status: 200, body: { total_count: 7 } });
    peer.forceShutdown();
    away = await refusing(address);
    // Calls while the peer is away: the calls' channel fails its reconnects and backs off between attempts, up to its
    // cap once it failed five.
    const { attempts } = away;
    await until(async () => {
      expect((await count()).status).toBe(503);
      return attempts() >= 5;
    });
    await closed(away.server);
    peer = await startPeer(address);
    await until(async () => (await fetch(`${base}/healthz`)).status === 200);
    // Ready means ready: the first call after the probe passes reaches the peer (before: 503 until the calls'
    // channel's next attempt, seconds later, while the probe's own channel had already reconnected).
    expect(await count()).toEqual({ status: 200, body: { total_count: 7 } });
  }, 60_000);
});
