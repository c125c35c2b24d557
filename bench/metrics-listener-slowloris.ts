// A slow-loris on a metrics listener (startMetricsServer, what every service's METRICS_PORT runs and where the chart's
// and the images' liveness checks ask /livez): opens `held` connections that each send half a request and never finish
// it, then, while they are held, asks GET /livez `asks` times one at a time, and prints how long the listener took to
// close the held sockets itself (p50, max, s), how many of them got a 408 first, the /livez answers meanwhile
// (statuses, p50/max ms) and when a probe (one every 100 ms after those) was first answered 200 (s from the start). `held` below the listener's cap (METRICS_LISTENER_BOUNDS.maxConnections, 16) shows /livez
// answering beside them; at or above it, that a probe's connection closes the oldest half-sent one and is answered
// (before 2026-11-25's keepForCompleteRequests, probes went unanswered until the headers timeout freed places).
// In one process, on a port the system picks (no service needed):
//   pnpm exec tsx bench/metrics-listener-slowloris.ts 8 50     # then 16 50
import { connect, type Socket } from 'node:net';
import { createLogger, METRICS_LISTENER_BOUNDS, startMetricsServer } from '@cards/platform';

const seconds = (ms: number) => Number((ms / 1000).toFixed(1));

async function main(): Promise<void> {
  const [held = 8, asks = 50] = process.argv.slice(2).map(Number);
  const metrics = await startMetricsServer({ host: '127.0.0.1', port: 0, logger: createLogger('slowloris-bench', 'silent') });
  const started = performance.now();
  const closedAfter: number[] = [];
  let answered408 = 0;
  const sockets: Socket[] = [];
  const allClosed = Promise.all(
    Array.from({ length: held }, async () => {
      const socket = connect(metrics.port, '127.0.0.1');
      sockets.push(socket);
      let data = '';
      socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      await new Promise<void>((resolve) => socket.once('close', () => resolve()));
      closedAfter.push(performance.now() - started);
      if (data.startsWith('HTTP/1.1 408 ')) answered408++;
    }),
  );
  const statuses: Record<string, number> = {};
  const times: number[] = [];
  for (let i = 0; i < asks; i++) {
    const asked = performance.now();
    const status = await fetch(`http://127.0.0.1:${metrics.port}/livez`, { signal: AbortSignal.timeout(10_000) }).then(
      async (res) => (await res.arrayBuffer(), String(res.status)),
      () => 'no answer',
    );
    times.push(performance.now() - asked);
    statuses[status] = (statuses[status] ?? 0) + 1;
  }
  // Then one probe every 100 ms until one is answered 200: how long the slow-loris kept probes out (0 below the cap).
  let firstAnswered: number | undefined;
  while (firstAnswered === undefined) {
    const ok = await fetch(`http://127.0.0.1:${metrics.port}/livez`).then((res) => res.status === 200, () => false);
    if (ok) firstAnswered = performance.now() - started;
    else await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await allClosed;
  await metrics.close();
  times.sort((a, b) => a - b);
  closedAfter.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      bounds: METRICS_LISTENER_BOUNDS,
      held,
      heldClosedByServerS: { p50: seconds(closedAfter[Math.floor(held / 2)] ?? 0), max: seconds(closedAfter.at(-1) ?? 0) },
      heldAnswered408: answered408,
      livezWhileHeld: { statuses, p50Ms: Number(times[Math.floor(asks / 2)]!.toFixed(1)), maxMs: Number(times.at(-1)!.toFixed(1)) },
      firstLivez200AfterS: seconds(firstAnswered),
    }),
  );
  for (const socket of sockets) socket.destroy();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
