// GET /api/auth through gateway + identity (all-in-one, two gRPC-connected services) versus a bare
// express handler doing the same cookie check in one process, measured side by side in one run.
// Usage: pnpm exec tsx bench/auth-bench.ts [seconds=10] [connections=50]
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { Mailbox } from '../test/support/mailbox';
import { startSystem } from '../test/support/service';
import { signUp } from '../test/support/accounts';

const duration = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 50);

async function load(url: string, cookie: string) {
  const result = await autocannon({ url, connections, duration, headers: { cookie } });
  const non2xx = result.non2xx + result.errors;
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, errors: non2xx };
}

async function startBaseline(): Promise<{ url: string; cookie: string; stop(): void }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'support/auth-baseline-server.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line: string = await new Promise((resolve) => {
    let buf = '';
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      if (buf.includes('\n')) resolve(buf.split('\n')[0]!);
    });
  });
  const { port, cookie } = JSON.parse(line) as { port: number; cookie: string };
  return { url: `http://127.0.0.1:${port}/api/auth`, cookie, stop: () => child.kill('SIGTERM') };
}

async function main() {
  const mailbox = new Mailbox();
  await mailbox.start();
  const system = await startSystem({ env: { SMTP_URL: mailbox.url, LOG_LEVEL: 'warn' } });
  const user = await signUp(system.baseUrl, mailbox, 'bench');
  const baseline = await startBaseline();
  try {
    // Warm both up, then measure.
    await autocannon({ url: `${system.baseUrl}/api/auth`, connections: 10, duration: 2, headers: { cookie: user.client.cookie! } });
    await autocannon({ url: baseline.url, connections: 10, duration: 2, headers: { cookie: baseline.cookie } });
    const gateway = await load(`${system.baseUrl}/api/auth`, user.client.cookie!);
    const inProcess = await load(baseline.url, baseline.cookie);
    console.log(`GET /api/auth, ${connections} connections, ${duration} s each`);
    console.log(`gateway -> identity (${process.env.SYSTEM_TOPOLOGY === 'distributed' ? 'gRPC between processes' : process.env.GRPC_IN_PROCESS === 'false' ? 'loopback gRPC' : 'in process'}): ${gateway.rps.toFixed(0)} req/s, p50 ${gateway.p50} ms, p99 ${gateway.p99} ms, errors ${gateway.errors}`);
    console.log(`in-process baseline:        ${inProcess.rps.toFixed(0)} req/s, p50 ${inProcess.p50} ms, p99 ${inProcess.p99} ms, errors ${inProcess.errors}`);
    console.log(`throughput ratio gateway/baseline: ${(gateway.rps / inProcess.rps).toFixed(2)} (target >= 0.5)`);
  } finally {
    baseline.stop();
    await system.stop();
    await mailbox.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
