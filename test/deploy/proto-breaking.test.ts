// scripts/proto-breaking.mjs and scripts/proto-release.mjs. In a throw-away git repository: the check fails
// without a recorded released contract, passes on additive changes, fails on a renumbered or deleted field against
// the released contract (committed or not, however many commits ago: the push of several commits an operator audit
// found unchecked), accepts a deletion that reserves the number and name, and compares with a git ref only when
// asked. proto-release refuses to record a breaking contract unless told. In a copy without .git (shallow clone,
// tarball) of this repository's own proto/: the committed baseline is the current contract, a removed or renumbered
// field fails and an added one passes.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helm';
import { testTempDir } from '../support/cleanup';

const buf = join(ROOT, 'node_modules/.bin/buf');
const describeWithBuf = existsSync(buf) ? describe : describe.skip;
if (!existsSync(buf)) console.warn(`SKIPPED proto-breaking tests: ${buf} is missing (run pnpm install)`);

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };

function protoWith(fields: string): string {
  return `syntax = "proto3";\npackage shop.v1;\n\nmessage Item {\n${fields}\n}\n`;
}

function run(dir: string, script: string, args: string[] = [], against = '') {
  const result = spawnSync(process.execPath, [join(dir, 'scripts', script), ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, PROTO_BREAKING_AGAINST: against } });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** A directory with the two scripts and node_modules (for buf), as a checkout has them. */
function scaffold(prefix: string): string {
  const dir = testTempDir(prefix);
  mkdirSync(join(dir, 'scripts'));
  for (const script of ['proto-breaking.mjs', 'proto-release.mjs']) copyFileSync(join(ROOT, 'scripts', script), join(dir, 'scripts', script));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

describeWithBuf('proto breaking-change check (scripts/proto-breaking.mjs)', () => {
  let repo: string;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, env: GIT_ENV, stdio: 'pipe' });
  const writeProto = (fields: string) => writeFileSync(join(repo, 'proto/shop/v1/shop.proto'), protoWith(fields));
  const commit = (message: string) => {
    git('add', '-A');
    git('commit', '-q', '-m', message);
  };
  const check = (against = '') => run(repo, 'proto-breaking.mjs', [], against);
  const release = (...args: string[]) => run(repo, 'proto-release.mjs', args);

  beforeAll(() => {
    repo = scaffold('proto-breaking-');
    mkdirSync(join(repo, 'proto/shop/v1'), { recursive: true });
    copyFileSync(join(ROOT, 'proto/buf.yaml'), join(repo, 'proto/buf.yaml'));
    writeFileSync(join(repo, '.gitignore'), 'node_modules\n');
    git('init', '-q');
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  it('fails while no released contract is recorded, naming the command that records one', () => {
    writeProto('  string id = 1;\n  string name = 2;\n  int64 price_cents = 3;');
    commit('first');
    const result = check();
    expect(result.status).toBe(1);
    expect(result.output).toMatch(/no released contract at proto\/released\/image\.json/);
    expect(result.output).toContain('pnpm proto:release');
  });

  it('records the released contract (proto-release) and then passes against it', () => {
    expect(release().status).toBe(1); // the release must be named
    const recorded = release('--', 'shop-1.0.0');
    expect(recorded.status).toBe(0);
    const info = JSON.parse(readFileSync(join(repo, 'proto/released/release.json'), 'utf8'));
    expect(info).toMatchObject({ release: 'shop-1.0.0', commit: git('rev-parse', 'HEAD').toString().trim(), protoChangedSinceCommit: false });
    commit('release shop-1.0.0');
    const result = check();
    expect(result.status).toBe(0);
    expect(result.output).toContain('pass against the released contract');
    expect(result.output).toContain('shop-1.0.0');
  });

  it('passes when only fields are added', () => {
    writeProto('  string id = 1;\n  string name = 2;\n  int64 price_cents = 3;\n  repeated string tags = 4;');
    const result = check();
    expect(result.status).toBe(0);
    expect(result.output).toContain('pass against the released contract (no breaking changes)');
    commit('add tags');
  });

  it('fails on an uncommitted renumbering, naming the field', () => {
    writeProto('  string id = 1;\n  string name = 5;\n  int64 price_cents = 3;\n  repeated string tags = 4;');
    const result = check();
    expect(result.status).toBe(1);
    expect(result.output).toMatch(/"name"/);
    expect(result.output).toContain('FAIL against the released contract');
  });

  it('fails on a deletion committed before the last commit of a push (HEAD~1 alone saw no proto change)', () => {
    writeProto('  string id = 1;\n  string name = 2;\n  repeated string tags = 4;');
    commit('drop price');
    writeFileSync(join(repo, 'README.md'), 'docs only\n');
    commit('docs');
    const result = check();
    expect(result.status).toBe(1);
    expect(result.output).toMatch(/price_cents/);
    // the optional git comparison alone would have passed
    expect(check('HEAD~1').output).toContain('pass against HEAD~1 (proto/ unchanged since HEAD~1)');
  });

  it('passes on a deletion that reserves the number and the name', () => {
    writeProto('  reserved 3;\n  reserved "price_cents";\n  string id = 1;\n  string name = 2;\n  repeated string tags = 4;');
    commit('drop price, reserved');
    expect(check().status).toBe(0);
  });

  it('compares with a git ref only when asked: a field never released may change, unless the ref has it', () => {
    writeProto('  reserved 3;\n  reserved "price_cents";\n  string id = 1;\n  string name = 2;\n  repeated string tags = 4;\n  string colour = 5;');
    commit('add colour (unreleased)');
    writeProto('  reserved 3;\n  reserved "price_cents";\n  string id = 1;\n  string name = 2;\n  repeated string tags = 4;\n  int64 colour = 5;');
    expect(check().status).toBe(0);
    const withRef = check('HEAD');
    expect(withRef.status).toBe(1);
    expect(withRef.output).toMatch(/colour/);
    expect(withRef.output).toContain('FAIL against HEAD');
    const missing = check('origin/main');
    expect(missing.status).toBe(1);
    expect(missing.output).toContain('no commit "origin/main"');
    git('checkout', '-q', '--', 'proto/shop/v1/shop.proto');
  });

  it('refuses to record a breaking contract unless --allow-breaking', () => {
    writeProto('  reserved 3;\n  reserved "price_cents";\n  string id = 1;\n  repeated string tags = 4;\n  string colour = 5;');
    const before = readFileSync(join(repo, 'proto/released/image.json'), 'utf8');
    const refused = release('shop-2.0.0');
    expect(refused.status).toBe(1);
    expect(refused.output).toContain('not recorded');
    expect(readFileSync(join(repo, 'proto/released/image.json'), 'utf8')).toBe(before);
    expect(release('shop-2.0.0', '--allow-breaking').status).toBe(0);
    expect(check().status).toBe(0);
    expect(JSON.parse(readFileSync(join(repo, 'proto/released/release.json'), 'utf8'))).toMatchObject({ release: 'shop-2.0.0', protoChangedSinceCommit: true });
  });
});

describeWithBuf('the committed released contract (proto/released) against this repository\'s proto/, without git', () => {
  let copy: string;
  const cardsProto = () => join(copy, 'proto/cards/v1/cards.proto');
  let original: string;

  beforeAll(() => {
    copy = scaffold('proto-released-');
    cpSync(join(ROOT, 'proto'), join(copy, 'proto'), { recursive: true });
    original = readFileSync(cardsProto(), 'utf8');
  });
  afterEach(() => writeFileSync(cardsProto(), original));
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  /** Rewrites the first field declaration of `message name` in cards.proto. */
  function editFirstField(message: string, edit: (line: string) => string): void {
    const lines = original.split('\n');
    const start = lines.findIndex((l) => new RegExp(`^message ${message} \\{`).test(l));
    const at = lines.findIndex((l, i) => i > start && /^\s+\S.*=\s*\d+;/.test(l));
    expect(start).toBeGreaterThanOrEqual(0);
    lines[at] = edit(lines[at]!);
    writeFileSync(cardsProto(), lines.join('\n'));
  }

  const firstMessage = () => /^message (\w+) \{/m.exec(original)![1]!;

  it('passes now: the baseline is the current contract', () => {
    const result = run(copy, 'proto-breaking.mjs');
    expect(result.status).toBe(0);
    expect(result.output).toContain('pass against the released contract');
  });

  it('fails when a field is removed', () => {
    editFirstField(firstMessage(), () => '');
    const result = run(copy, 'proto-breaking.mjs');
    expect(result.status).toBe(1);
    expect(result.output).toContain('FAIL against the released contract');
    expect(result.output).toMatch(new RegExp(`Previously present field "\\d+" with name "\\w+" on message "${firstMessage()}" was deleted`));
  });

  it('fails when a field is renumbered', () => {
    editFirstField(firstMessage(), (line) => line.replace(/=\s*\d+;/, '= 999;'));
    const result = run(copy, 'proto-breaking.mjs');
    expect(result.status).toBe(1);
    expect(result.output).toMatch(new RegExp(`on message "${firstMessage()}"`));
  });

  it('passes when a field is added', () => {
    writeFileSync(cardsProto(), `${original}\nmessage AddedForTheTest {\n  string note = 1;\n}\n`);
    expect(run(copy, 'proto-breaking.mjs').status).toBe(0);
  });
});
