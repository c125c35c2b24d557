// The production-topology end-to-end run: one Kafka broker and one MongoDB-protocol server from
// test/engines, and every system the e2e suites start is six processes (identity, cards, search,
// files, notifications, gateway; SYSTEM_TOPOLOGY=distributed in test/support/service.ts) talking
// gRPC, with KAFKA_BROKERS and MONGO_URL set; search on an Elasticsearch node from test/engines
// (E2E_SEARCH_INDEX=embedded keeps it on the embedded index). Runs in CI as a named check of scripts/run-tests.mjs (E2E_DISTRIBUTED=off skips it; so
// does ENGINES=off; without Java/Maven it is skipped locally and fails on CI, like the engine suites).
// Usage: node node_modules/tsx/dist/cli.mjs test/engines/run-e2e-distributed.ts [jest paths/args]
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { EngineUnavailableError, enginesDisabledReason } from './engine-support';
import { startKafkaSync, type KafkaEngine } from './kafka';
import { startMongoSync, type MongoEngine } from './mongo';
import { startElasticsearchSync, type ElasticsearchEngine } from './elasticsearch';

const root = resolve(__dirname, '../..');

/**
 * The suites that run: every area the contract covers. Left out because they only fit the embedded
 * default by design: crash/restart/files-restart (they restart one all-in-one process on the same
 * DATA_DIR and read its SQLite/disk state; the Mongo memory engine and Kafka are shared instead),
 * fuzz and openapi (contract-shape checks independent of topology, and the slowest suites).
 */
export const DISTRIBUTED_SUITES = [
  'test/e2e/identity.test.ts',
  'test/e2e/users.test.ts',
  'test/e2e/cards.test.ts',
  'test/e2e/votes.test.ts',
  'test/e2e/collections.test.ts',
  'test/e2e/idempotency.test.ts',
  'test/e2e/search.test.ts',
  // Names written with signs are read by Elasticsearch's own analysis here; the embeddings request of a search whose
  // client left is aborted from the search process of its own.
  'test/e2e/symbol-names-search.test.ts',
  'test/e2e/search-embeddings-client-gone.test.ts',
  'test/e2e/embedding-duplicates.test.ts',
  'test/e2e/files.test.ts',
  'test/e2e/notifications.test.ts',
  'test/e2e/verification.test.ts',
  'test/e2e/authz.test.ts',
  // One service SIGKILLed at a time under a workload (its two moments held by triggers in the embedded event log are
  // plain kills under the workload here; ~140 s on two cores), and the gateway killed with uploads and creations under way.
  'test/e2e/service-kill.test.ts',
  'test/e2e/gateway-kill.test.ts',
];

/**
 * Tests that write straight into the embedded SQLite event log file (DATA_DIR/events/events.db) to
 * replay events: they test the embedded default, and on Kafka nobody reads that file.
 */
const EMBEDDED_ONLY_TESTS = [
  'a created collection notifies its author with the collection id',
  'replaying the same events twice leaves exactly one notification each',
  'a result for a link the card no longer has does not notify, even when search announced it before the edit reached it',
];

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

async function main(): Promise<number> {
  if (['off', '0', 'false', 'no'].includes((process.env.E2E_DISTRIBUTED ?? '').toLowerCase())) {
    process.stdout.write('[distributed e2e] skipped: E2E_DISTRIBUTED=off\n');
    return 0;
  }
  const disabled = enginesDisabledReason();
  const ci = process.env.CI === 'true' || (process.env.ENGINES ?? '').toLowerCase() === 'required';
  let kafka: KafkaEngine | undefined;
  let mongo: MongoEngine | undefined;
  try {
    if (disabled) throw new EngineUnavailableError(disabled);
    kafka = startKafkaSync();
    mongo = startMongoSync();
  } catch (err) {
    await kafka?.stop();
    if (!(err instanceof EngineUnavailableError)) throw err;
    // Like the engine suites: skipped with the reason locally, a failure on CI (unless ENGINES=off/auto).
    const mustRun = ci && !disabled && (process.env.ENGINES ?? '').toLowerCase() !== 'auto';
    process.stdout.write(`[distributed e2e] ${mustRun ? 'FAILED' : 'skipped'}: ${err.message}\n`);
    return mustRun ? 1 : 0;
  }
  // Search on an Elasticsearch node from test/engines by default (the production adapter); E2E_SEARCH_INDEX=embedded
  // keeps it on the embedded SQLite index. When the node cannot start, this fails on CI like the other engines, and
  // elsewhere the embedded index is used with the reason printed.
  let elasticsearch: ElasticsearchEngine | undefined;
  const searchIndex = (process.env.E2E_SEARCH_INDEX ?? 'elasticsearch').toLowerCase();
  if (!['elasticsearch', 'embedded'].includes(searchIndex)) {
    await kafka.stop();
    await mongo.stop();
    process.stdout.write(`[distributed e2e] FAILED: E2E_SEARCH_INDEX must be elasticsearch or embedded, got "${process.env.E2E_SEARCH_INDEX}"\n`);
    return 1;
  }
  if (searchIndex === 'elasticsearch') {
    try {
      elasticsearch = startElasticsearchSync();
    } catch (err) {
      if (!(err instanceof EngineUnavailableError)) throw err;
      const mustRun = ci && (process.env.ENGINES ?? '').toLowerCase() !== 'auto';
      process.stdout.write(`[distributed e2e] ${mustRun ? 'FAILED: ' : 'search on the embedded index: '}Elasticsearch unavailable (${err.message.split('\n')[0]})\n`);
      if (mustRun) {
        await kafka.stop();
        await mongo.stop();
        return 1;
      }
    }
  }
  const searchEnv: Record<string, string> = elasticsearch ? { ELASTICSEARCH_URL: elasticsearch.url } : {};
  const started = Date.now();
  process.stdout.write(`[distributed e2e] six processes per system on KAFKA_BROKERS=${kafka.brokers} MONGO_URL=${mongo.url} search index: ${elasticsearch ? `Elasticsearch ${elasticsearch.url}` : 'embedded'}\n`);
  process.stdout.write(`[distributed e2e] not run here (embedded default only): crash, restart, files-restart suites; fuzz, openapi suites; tests: ${EMBEDDED_ONLY_TESTS.map((t) => `"${t}"`).join(', ')}\n`);
  try {
    const args = process.argv.slice(2);
    const testNamePattern = `^(?!.*(${EMBEDDED_ONLY_TESTS.map(escapeRegExp).join('|')}))`;
    const jest = spawnSync(
      process.execPath,
      [join(root, 'node_modules/jest/bin/jest.js'), '--maxWorkers=2', '--forceExit', '--testNamePattern', testNamePattern, ...(args.length > 0 ? args : DISTRIBUTED_SUITES)],
      {
        cwd: root,
        stdio: 'inherit',
        env: { ...process.env, SYSTEM_TOPOLOGY: 'distributed', KAFKA_BROKERS: kafka.brokers, MONGO_URL: mongo.url, ...searchEnv },
      },
    );
    process.stdout.write(`[distributed e2e] jest exited ${jest.status} after ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
    return jest.status ?? 1;
  } finally {
    await kafka.stop();
    await mongo.stop();
    await elasticsearch?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
