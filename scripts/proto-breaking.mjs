// Proto compatibility check: `buf breaking` on proto/ (working tree) against the protos of a previous
// commit (HEAD~1 by default; `node scripts/proto-breaking.mjs <ref>` or PROTO_BREAKING_AGAINST=<ref>,
// e.g. origin/main, to compare with a branch). The old protos are read with `git show`, so no network
// and no clone is needed. Passes, saying why, when the ref does not exist (first commit, shallow clone)
// or when nothing under proto/ changed since it. The rules are those of proto/buf.yaml (WIRE_JSON).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const against = process.argv[2] || process.env.PROTO_BREAKING_AGAINST || 'HEAD~1';

function git(...args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
}

function pass(reason) {
  console.log(`proto breaking-change check: pass (${reason})`);
  process.exit(0);
}

let commit;
try {
  commit = git('rev-parse', '--verify', '--quiet', `${against}^{commit}`).trim();
} catch {
  pass(`no commit "${against}" to compare with: first commit or shallow clone`);
}

const oldFiles = git('ls-tree', '-r', '--name-only', commit, '--', 'proto/').split('\n').filter(Boolean);
if (!oldFiles.some((f) => f.endsWith('.proto'))) pass(`no .proto files at ${against}`);

const changedTracked = git('diff', '--name-only', commit, '--', 'proto/').split('\n').filter(Boolean);
const untracked = git('ls-files', '--others', '--exclude-standard', '--', 'proto/').split('\n').filter(Boolean);
if (changedTracked.length === 0 && untracked.length === 0) pass(`proto/ unchanged since ${against}`);

const workdir = mkdtempSync(join(tmpdir(), 'proto-breaking-'));
try {
  for (const file of oldFiles) {
    const target = join(workdir, file);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, execFileSync('git', ['show', `${commit}:${file}`], { cwd: root, maxBuffer: 64 * 1024 * 1024 }));
  }
  console.log(`proto breaking-change check: proto/ against ${against} (${commit.slice(0, 12)}); changed: ${[...changedTracked, ...untracked].join(', ')}`);
  const result = spawnSync(join(root, 'node_modules/.bin/buf'), ['breaking', 'proto', '--against', join(workdir, 'proto')], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    console.error('proto breaking-change check: FAIL. Only add fields, messages and RPCs; never renumber, rename, retype or remove (reserve the number instead).');
    process.exitCode = 1;
  } else {
    console.log('proto breaking-change check: pass (no breaking changes)');
  }
} finally {
  rmSync(workdir, { recursive: true, force: true });
}
