// Regenerates packages/proto/src/gen from proto/ with buf running ts-proto as a local plugin (no network).
// --check: regenerate into a temporary copy and fail when the committed code differs.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const out = join(root, 'packages/proto/src/gen');
const check = process.argv.includes('--check');

function listFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listFiles(path) : [path];
  });
}

function snapshot(dir) {
  const files = new Map();
  try {
    for (const f of listFiles(dir)) files.set(relative(dir, f), readFileSync(f, 'utf8'));
  } catch {
    /* missing directory: empty snapshot */
  }
  return files;
}

const before = check ? snapshot(out) : null;
const backup = check ? mkdtempSync(join(tmpdir(), 'proto-gen-')) : null;
if (backup) cpSync(out, backup, { recursive: true });

rmSync(out, { recursive: true, force: true });
execFileSync(join(root, 'node_modules/.bin/buf'), ['generate'], { cwd: join(root, 'proto'), stdio: 'inherit' });

// A stable barrel so services import from '@cards/proto'.
const index = [
  "export * as identity from './gen/identity/v1/identity';",
  "export * as cards from './gen/cards/v1/cards';",
  "export * as search from './gen/search/v1/search';",
  "export * as files from './gen/files/v1/files';",
  "export * as notifications from './gen/notifications/v1/notifications';",
  "export * as events from './gen/events/v1/events';",
  "export * as health from './gen/grpc/health/v1/health';",
  '',
].join('\n');
writeFileSync(join(root, 'packages/proto/src/index.ts'), index);

if (check) {
  const after = snapshot(out);
  const changed = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k));
  rmSync(out, { recursive: true, force: true });
  cpSync(backup, out, { recursive: true });
  if (changed.length) {
    console.error(`generated code is stale, run "pnpm gen": ${changed.join(', ')}`);
    process.exit(1);
  }
  console.log('generated proto code is current');
}
