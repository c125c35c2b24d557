// Proto compatibility check: `buf breaking` on proto/ (working tree) against
//  1. always: the released contract, proto/released/image.json (a `buf build` image of proto/ as last released,
//     recorded by `pnpm proto:release`, scripts/proto-release.mjs). It is a committed file, so the check needs no
//     git history: a shallow clone, a tarball or a push of many commits is compared with what is deployed.
//     A missing or unreadable baseline fails the check.
//  2. optionally: the protos of a git ref (`node scripts/proto-breaking.mjs <ref>` or PROTO_BREAKING_AGAINST=<ref>,
//     e.g. origin/main in a pull request), read with `git show` (no network). A ref that was asked for and does
//     not exist fails the check (a shallow clone without it is a CI set-up to fix, not a pass).
// The rules are those of proto/buf.yaml (WIRE_JSON). Exit status 1 when either comparison finds a breaking change.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const buf = join(root, 'node_modules/.bin/buf');
const BASELINE = 'proto/released/image.json';
const BASELINE_INFO = 'proto/released/release.json';
const HINT = 'Only add fields, messages and RPCs; never renumber, rename, retype or remove (reserve the number and name instead).';

function say(line) {
  console.log(`proto breaking-change check: ${line}`);
}

function bufBreaking(against) {
  const result = spawnSync(buf, ['breaking', 'proto', '--against', against], { cwd: root, stdio: 'inherit' });
  if (result.error) throw result.error;
  return result.status === 0;
}

/** proto/ against the committed released contract; true when compatible. */
function againstBaseline() {
  const image = join(root, BASELINE);
  if (!existsSync(image)) {
    console.error(`proto breaking-change check: FAIL, no released contract at ${BASELINE}. Record the one deployed with \`pnpm proto:release\` (docs/deploy.md).`);
    return false;
  }
  let info = '';
  try {
    const recorded = JSON.parse(readFileSync(join(root, BASELINE_INFO), 'utf8'));
    info = ` (${[recorded.release, recorded.commit && `from ${String(recorded.commit).slice(0, 12)}`, recorded.recordedAt].filter(Boolean).join(', ')})`;
  } catch {
    // release.json is informational only
  }
  say(`proto/ against the released contract ${BASELINE}${info}`);
  if (!bufBreaking(image)) {
    console.error(`proto breaking-change check: FAIL against the released contract. ${HINT} Services released on their own still run the released protos.`);
    return false;
  }
  say('pass against the released contract (no breaking changes)');
  return true;
}

function git(...args) {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** proto/ against the protos of a git ref; true when compatible. */
function againstRef(ref) {
  let commit;
  try {
    commit = git('rev-parse', '--verify', '--quiet', `${ref}^{commit}`).trim();
  } catch {
    console.error(`proto breaking-change check: FAIL, no commit "${ref}" to compare with (PROTO_BREAKING_AGAINST or the argument; fetch it, or unset it to compare with the released contract only).`);
    return false;
  }
  const oldFiles = git('ls-tree', '-r', '--name-only', commit, '--', 'proto/').split('\n').filter((f) => f.endsWith('.proto') || f.endsWith('buf.yaml'));
  if (!oldFiles.some((f) => f.endsWith('.proto'))) {
    say(`pass against ${ref} (no .proto files there)`);
    return true;
  }
  const changedTracked = git('diff', '--name-only', commit, '--', 'proto/', ':!proto/released').split('\n').filter(Boolean);
  const untracked = git('ls-files', '--others', '--exclude-standard', '--', 'proto/', ':!proto/released').split('\n').filter(Boolean);
  if (changedTracked.length === 0 && untracked.length === 0) {
    say(`pass against ${ref} (proto/ unchanged since ${ref})`);
    return true;
  }
  const workdir = mkdtempSync(join(tmpdir(), 'proto-breaking-'));
  try {
    for (const file of oldFiles) {
      const target = join(workdir, file);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, execFileSync('git', ['show', `${commit}:${file}`], { cwd: root, maxBuffer: 64 * 1024 * 1024 }));
    }
    say(`proto/ against ${ref} (${commit.slice(0, 12)}); changed: ${[...changedTracked, ...untracked].join(', ')}`);
    if (!bufBreaking(join(workdir, 'proto'))) {
      console.error(`proto breaking-change check: FAIL against ${ref}. ${HINT}`);
      return false;
    }
    say(`pass against ${ref} (no breaking changes)`);
    return true;
  } finally {
    rmSync(workdir, { recursive: true, force: true });
  }
}

const ref = process.argv[2] || process.env.PROTO_BREAKING_AGAINST || '';
let ok = againstBaseline();
if (ref) ok = againstRef(ref) && ok;
process.exitCode = ok ? 0 : 1;
