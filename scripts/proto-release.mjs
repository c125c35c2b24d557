// Records the released proto contract: `pnpm proto:release <release>` (e.g. `pnpm proto:release cards-0.3.0`)
// writes proto/released/image.json, a `buf build` image of proto/ (JSON, pretty-printed so a release's diff
// shows what it added; no source info), and proto/released/release.json (the release name, the commit it
// was recorded from, when). Run it when any service is released with the protos of this checkout, and commit
// both files; scripts/proto-breaking.mjs compares every later proto/ with it. The contract only grows, so the
// new baseline must itself be compatible with the one recorded before: a breaking change is refused unless
// `--allow-breaking` is given (a coordinated release that redeploys every service at once). No network.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const buf = join(root, 'node_modules/.bin/buf');
const args = process.argv.slice(2).filter((a) => a !== '--');
const allowBreaking = args.includes('--allow-breaking');
const release = args.find((a) => !a.startsWith('--'));

function fail(message) {
  console.error(`proto release: ${message}`);
  process.exit(1);
}

if (!release) fail('name the release, e.g. `pnpm proto:release cards-0.3.0` (the service(s) and version deployed with these protos)');
if (!/^[\w.+@/-]{1,100}$/.test(release)) fail(`release name "${release}": letters, digits and . _ - + @ / only (at most 100)`);

const image = join(root, 'proto/released/image.json');
if (existsSync(image) && !allowBreaking) {
  const check = spawnSync(process.execPath, [join(root, 'scripts/proto-breaking.mjs')], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, PROTO_BREAKING_AGAINST: '' },
  });
  if (check.status !== 0) {
    fail('not recorded: proto/ breaks the released contract (above). Services already deployed still speak it. Pass --allow-breaking only for a release that redeploys every service together.');
  }
}

const workdir = mkdtempSync(join(tmpdir(), 'proto-release-'));
try {
  const built = join(workdir, 'image.json');
  execFileSync(buf, ['build', '--exclude-source-info', '-o', built], { cwd: join(root, 'proto'), stdio: 'inherit' });
  const json = JSON.parse(readFileSync(built, 'utf8'));
  mkdirSync(join(root, 'proto/released'), { recursive: true });
  writeFileSync(image, `${JSON.stringify(json, null, 1)}\n`);
} finally {
  rmSync(workdir, { recursive: true, force: true });
}

let commit = null;
let protoChangedSinceCommit = null;
try {
  const git = (...a) => execFileSync('git', a, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  commit = git('rev-parse', 'HEAD');
  protoChangedSinceCommit = git('status', '--porcelain', '--', 'proto/', ':!proto/released').length > 0;
} catch {
  // not a git checkout: the release name is the record
}
const info = { release, commit, protoChangedSinceCommit, recordedAt: new Date().toISOString() };
writeFileSync(join(root, 'proto/released/release.json'), `${JSON.stringify(info, null, 2)}\n`);
console.log(`proto release: recorded proto/released/image.json for ${release}${commit ? ` from ${commit.slice(0, 12)}` : ''}${protoChangedSinceCommit ? ' (with uncommitted proto/ changes)' : ''}; commit proto/released/`);
