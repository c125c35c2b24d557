// Regenerates packages/proto/src/gen from proto/ with buf running ts-proto as a local plugin (no network).
// --check: generate into a temporary directory and fail when the committed code differs; the working
// tree is never touched, so a check can run while other processes import the generated code.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const protoDir = join(root, 'proto');
const committed = join(root, 'packages/proto/src/gen');
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

/** buf.gen.yaml with the output directory replaced, passed inline so both modes share one template. */
function templateFor(outDir) {
  const yaml = readFileSync(join(protoDir, 'buf.gen.yaml'), 'utf8');
  const opts = [...yaml.matchAll(/^\s+-\s+(\S+=\S+)\s*$/gm)].map((m) => m[1]);
  return JSON.stringify({
    version: 'v2',
    plugins: [{ local: join(root, 'node_modules/.bin/protoc-gen-ts_proto'), out: outDir, opt: opts }],
  });
}

const outDir = check ? mkdtempSync(join(tmpdir(), 'proto-gen-')) : committed;
if (!check) rmSync(committed, { recursive: true, force: true });
execFileSync(join(root, 'node_modules/.bin/buf'), ['generate', '--template', templateFor(outDir)], { cwd: protoDir, stdio: 'inherit' });

if (!check) {
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
} else {
  const before = snapshot(committed);
  const after = snapshot(outDir);
  rmSync(outDir, { recursive: true, force: true });
  const changed = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k));
  if (changed.length) {
    console.error(`generated code is stale, run "pnpm gen": ${changed.join(', ')}`);
    process.exit(1);
  }
  console.log('generated proto code is current');
}
