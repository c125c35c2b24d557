// The whole test suite: generated-code freshness, type-check, then every jest suite.
// Its last line is "N passed, N failed, N skipped", computed from the real results (scripts/run-jest.mjs: also when a
// test file hangs, a jest worker crashes or jest itself ends early).
import { spawnSync } from 'node:child_process';
import { runJest } from './run-jest.mjs';

const checks = [];
function check(name, command, args) {
  const started = Date.now();
  const result = spawnSync(command, args, { stdio: 'inherit' });
  const ok = result.status === 0;
  console.log(`${ok ? 'PASS' : 'FAIL'} check: ${name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  checks.push({ name, ok });
}

check('generated proto code is current', 'node', ['scripts/gen-proto.mjs', '--check']);
check('type-check (tsc)', 'node_modules/.bin/tsc', ['-p', 'tsconfig.json', '--noEmit']);
check('proto changes are wire/JSON compatible (buf breaking)', 'node', ['scripts/proto-breaking.mjs']);
// Every service its own process on Kafka + the MongoDB protocol, search on Elasticsearch
// (test/engines/run-e2e-distributed.ts; ~2.5-3 min; E2E_SEARCH_INDEX=embedded keeps search on its embedded index).
check('e2e suite in the production topology (six processes, Kafka, MongoDB protocol, Elasticsearch)', 'node', ['node_modules/tsx/dist/cli.mjs', 'test/engines/run-e2e-distributed.ts']);
for (const extra of (process.env.EXTRA_CHECKS ?? '').split(',').filter(Boolean)) check(extra, 'node', [extra]);

process.exit(await runJest(process.argv.slice(2), checks));
