// Event bus throughput and publish-to-handler latency: the embedded SQLite log versus KafkaEventBus on a
// real single-node KRaft broker (started from test/engines, or KAFKA_BROKERS when set).
// Usage: pnpm exec tsx bench/event-bus-bench.ts [events=5000] [batch=100]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger, KafkaEventBus, SqliteEventLog, type EventBus } from '@cards/platform';
import { startKafkaSync } from '../test/engines/kafka';

const total = Number(process.argv[2] ?? 5000);
const batch = Number(process.argv[3] ?? 100);
const logger = createLogger('bench', 'error');

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

async function measure(name: string, bus: EventBus): Promise<void> {
  const topic = `bench.t${Date.now()}.v1`;
  const sentAt = new Map<number, number>();
  const latencies: number[] = [];
  let received = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  // Warm up: topic creation and group join are not part of the figures.
  await bus.publish([{ topic, key: 'warm', payload: new Uint8Array([0]) }]);
  await bus.subscribe({
    group: `bench-${Date.now()}`,
    topics: [topic],
    handler: async (e) => {
      if (e.key === 'warm') return;
      const seq = new DataView(e.payload.buffer, e.payload.byteOffset).getUint32(0);
      latencies.push(performance.now() - sentAt.get(seq)!);
      if (++received === total) done();
    },
  });
  const payload = (seq: number) => {
    const bytes = new Uint8Array(200);
    new DataView(bytes.buffer).setUint32(0, seq);
    return bytes;
  };
  const started = performance.now();
  for (let i = 0; i < total; i += batch) {
    const events = [];
    for (let seq = i; seq < Math.min(total, i + batch); seq++) {
      sentAt.set(seq, performance.now());
      events.push({ topic, key: `card-${seq % 50}`, payload: payload(seq) });
    }
    await bus.publish(events);
  }
  const published = performance.now();
  await finished;
  const consumed = performance.now();
  latencies.sort((a, b) => a - b);
  console.log(
    `${name.padEnd(22)} publish ${Math.round((total / (published - started)) * 1000)} ev/s | publish+consume ${Math.round((total / (consumed - started)) * 1000)} ev/s | ` +
      `latency p50 ${pct(latencies, 50).toFixed(1)} ms p95 ${pct(latencies, 95).toFixed(1)} ms p99 ${pct(latencies, 99).toFixed(1)} ms`,
  );
}

async function main(): Promise<void> {
  console.log(`${total} events of 200 bytes, published in batches of ${batch}, 50 keys, one consumer`);
  const dir = mkdtempSync(join(tmpdir(), 'bench-bus-'));
  const sqlite = new SqliteEventLog({ path: join(dir, 'events.db'), logger });
  await measure('sqlite (embedded)', sqlite);
  await sqlite.close();
  rmSync(dir, { recursive: true, force: true });

  const engine = process.env.KAFKA_BROKERS ? undefined : startKafkaSync();
  const brokers = (process.env.KAFKA_BROKERS ?? engine!.brokers).split(',');
  for (const partitions of [1, 3]) {
    const kafka = new KafkaEventBus({ brokers, logger, partitions });
    await measure(`kafka (${partitions} partition${partitions > 1 ? 's' : ''})`, kafka);
    await kafka.close();
  }
  await engine?.stop();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
