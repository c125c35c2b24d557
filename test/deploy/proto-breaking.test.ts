// scripts/proto-breaking.mjs against a throw-away git repository: passes on a first commit and on
// additive changes, fails on a renumbered or deleted field (committed or not), accepts a deletion that
// reserves the number and name.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './helm';

const buf = join(ROOT, 'node_modules/.bin/buf');
const describeWithBuf = existsSync(buf) ? describe : describe.skip;
if (!existsSync(buf)) console.warn(`SKIPPED proto-breaking tests: ${buf} is missing (run pnpm install)`);

const GIT_ENV = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' };

function protoWith(fields: string): string {
  return `syntax = "proto3";\npackage shop.v1;\n\nmessage Item {\n${fields}\n}\n`;
}

describeWithBuf('proto breaking-change check (scripts/proto-breaking.mjs)', () => {
  let repo: string;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, env: GIT_ENV, stdio: 'pipe' });
  const writeProto = (fields: string) => writeFileSync(join(repo, 'proto/shop/v1/shop.proto'), protoWith(fields));
  const commit = (message: string) => {
    git('add', '-A');
    git('commit', '-q', '-m', message);
  };
  const check = () => {
    const result = spawnSync(process.execPath, [join(repo, 'scripts/proto-breaking.mjs')], { cwd: repo, encoding: 'utf8', env: { ...process.env, PROTO_BREAKING_AGAINST: '' } });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  };

  beforeAll(() => {
    repo = mkdtempSync(join(tmpdir(), 'proto-breaking-'));
    mkdirSync(join(repo, 'proto/shop/v1'), { recursive: true });
    mkdirSync(join(repo, 'scripts'));
    copyFileSync(join(ROOT, 'proto/buf.yaml'), join(repo, 'proto/buf.yaml'));
    copyFileSync(join(ROOT, 'scripts/proto-breaking.mjs'), join(repo, 'scripts/proto-breaking.mjs'));
    symlinkSync(join(ROOT, 'node_modules'), join(repo, 'node_modules'));
    writeFileSync(join(repo, '.gitignore'), 'node_modules\n');
    git('init', '-q');
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  it('passes on the first commit, saying there is nothing to compare with', () => {
    writeProto('  string id = 1;\n  string name = 2;\n  int64 price_cents = 3;');
    commit('first');
    const result = check();
    expect(result.status).toBe(0);
    expect(result.output).toMatch(/no commit "HEAD~1"/);
  });

  it('passes when a commit only adds fields', () => {
    writeProto('  string id = 1;\n  string name = 2;\n  int64 price_cents = 3;\n  repeated string tags = 4;');
    commit('add tags');
    const result = check();
    expect(result.status).toBe(0);
    expect(result.output).toContain('pass (no breaking changes)');
  });

  it('fails on an uncommitted renumbering, naming the field', () => {
    writeProto('  string id = 1;\n  string name = 5;\n  int64 price_cents = 3;\n  repeated string tags = 4;');
    const result = check();
    expect(result.status).toBe(1);
    expect(result.output).toMatch(/"name"/);
    expect(result.output).toContain('FAIL');
  });

  it('fails on a committed deletion without reserving the number', () => {
    writeProto('  string id = 1;\n  string name = 2;\n  repeated string tags = 4;');
    commit('drop price');
    const result = check();
    expect(result.status).toBe(1);
    expect(result.output).toMatch(/price_cents/);
  });

  it('passes on a deletion that reserves the number and the name', () => {
    git('reset', '-q', '--hard', 'HEAD~1');
    writeProto('  reserved 3;\n  reserved "price_cents";\n  string id = 1;\n  string name = 2;\n  repeated string tags = 4;');
    commit('drop price, reserved');
    expect(check().status).toBe(0);
  });

  it('passes quickly when nothing under proto/ changed', () => {
    writeFileSync(join(repo, 'README.md'), 'docs only\n');
    commit('docs');
    const result = check();
    expect(result.status).toBe(0);
    expect(result.output).toMatch(/proto\/ unchanged since HEAD~1/);
  });
});
