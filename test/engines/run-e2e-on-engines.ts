// The end-to-end suite on the production adapters: starts one Kafka broker and one MongoDB-protocol
// server from test/engines, then runs jest over test/e2e (or the paths given) with KAFKA_BROKERS and
// MONGO_URL set. Every system the suite starts gets its own Kafka namespace and database prefix
// (test/support/service.ts), so files may run in parallel on the shared engines.
// Usage: pnpm exec tsx test/engines/run-e2e-on-engines.ts [jest args, default: test/e2e]
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { startKafkaSync } from './kafka';
import { startMongoSync } from './mongo';

const root = resolve(__dirname, '../..');

async function main(): Promise<number> {
  const kafka = startKafkaSync();
  const mongo = startMongoSync();
  process.stdout.write(`[engines] e2e on KAFKA_BROKERS=${kafka.brokers} MONGO_URL=${mongo.url}\n`);
  try {
    const args = process.argv.slice(2);
    const jest = spawnSync(join(root, 'node_modules/.bin/jest'), ['--maxWorkers=2', '--forceExit', ...(args.length > 0 ? args : ['test/e2e'])], {
      cwd: root,
      stdio: 'inherit',
      env: { ...process.env, KAFKA_BROKERS: kafka.brokers, MONGO_URL: mongo.url },
    });
    return jest.status ?? 1;
  } finally {
    await kafka.stop();
    await mongo.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
