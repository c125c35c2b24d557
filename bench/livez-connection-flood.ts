// GET /livez while the gateway's port is full: holds `held` keep-alive connections to the gateway's HTTP port (each
// counted by HTTP_MAX_CONNECTIONS once its first answer is back), then asks /livez `asks` times, one at a time, on that
// port and on the metrics port (METRICS_PORT), and prints the statuses and the time of each answer (p50, max, ms).
// With `held` at HTTP_MAX_CONNECTIONS the port answers every probe 503 and the metrics port 200: what the chart's
// liveness probe (there) and readiness probe (on the port) see during a connection flood.
//   PORT=4317 METRICS_PORT=4318 HTTP_MAX_CONNECTIONS=50 DATA_DIR=/tmp/livez pnpm start
//   pnpm exec tsx bench/livez-connection-flood.ts 4317 4318 50 100
import { connect, type Socket } from 'node:net';

async function main(): Promise<void> {
  const [port, metricsPort, held = 50, asks = 100] = process.argv.slice(2).map(Number);
  if (!port || !metricsPort) throw new Error('usage: livez-connection-flood.ts <port> <metricsPort> [held=50] [asks=100]');
  const sockets: Socket[] = [];
  for (let i = 0; i < held; i++) {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.write('GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await new Promise((resolve, reject) => {
      socket.once('data', resolve);
      socket.once('error', reject);
    });
  }
  const ask = async (url: string) => {
    const statuses: Record<string, number> = {};
    const times: number[] = [];
    for (let i = 0; i < asks; i++) {
      const started = performance.now();
      const status = await fetch(url).then(
        async (res) => (await res.arrayBuffer(), String(res.status)),
        () => 'no answer',
      );
      times.push(performance.now() - started);
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
    times.sort((a, b) => a - b);
    return { statuses, p50Ms: Number(times[Math.floor(asks / 2)]!.toFixed(1)), maxMs: Number(times[asks - 1]!.toFixed(1)) };
  };
  const onPort = await ask(`http://127.0.0.1:${port}/livez`);
  const onMetricsPort = await ask(`http://127.0.0.1:${metricsPort}/livez`);
  for (const socket of sockets) socket.destroy();
  console.log(JSON.stringify({ held, port: onPort, metricsPort: onMetricsPort }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
