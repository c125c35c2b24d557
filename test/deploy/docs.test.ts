// docs/deploy.md documents every environment variable of every service: each variable a service's
// config reads must appear in that service's table.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helm';
import { COMPONENTS, platformSource, variablesReadBy } from './service-config';

const docs = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');

/** The text of the `### <component>` section under "## Environment variables". */
function section(component: string): string {
  const env = docs.slice(docs.indexOf('## Environment variables'));
  const start = env.indexOf(`\n### ${component}\n`);
  if (start < 0) return '';
  const end = env.indexOf('\n### ', start + 1);
  return env.slice(start, end < 0 ? undefined : end);
}

describe('docs/deploy.md', () => {
  it.each(COMPONENTS)('lists every variable %s reads in its table', (component) => {
    const text = section(component);
    expect(text).not.toBe('');
    const missing = [...variablesReadBy(component)].filter((name) => !text.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('lists every variable the shared runtime (@cards/platform) reads', () => {
    const text = section('shared runtime (`@cards/platform`)');
    expect(text).not.toBe('');
    // `env.X` covers process.env.X and the env objects services hand in (refuseEmbeddedStores, grpcServerSettingsFrom).
    const reads = new Set([...platformSource().matchAll(/\benv\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!));
    expect(reads.size).toBeGreaterThan(0);
    expect([...reads].filter((name) => !text.includes(`\`${name}\``))).toEqual([]);
  });

});

/** GitHub's anchor of a heading: lower case, punctuation other than "-" and "_" dropped, spaces to "-". */
const anchorOf = (heading: string) => heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');

describe("README.md's environment table", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  it('links each row that points into docs/ to a heading of that doc (an anchor that exists), not to the whole file', () => {
    const rows = readme.split('\n').filter((line) => line.startsWith('| `'));
    expect(rows.length).toBeGreaterThan(20);
    const links = rows.flatMap((row) => [...row.matchAll(/\]\(docs\/([a-z-]+\.md)(#[^)]*)?\)/g)].map((m) => ({ row: row.slice(0, 60), file: m[1]!, anchor: m[2]?.slice(1) })));
    const bad = links.filter(({ file, anchor }) => {
      if (anchor === undefined) return true;
      const headings = readFileSync(join(ROOT, 'docs', file), 'utf8').split('\n').filter((line) => /^#{1,6} /.test(line));
      return !headings.some((heading) => anchorOf(heading.replace(/^#+ /, '')) === anchor);
    });
    // GRPC_IN_PROCESS's entry sits before the first heading of decisions.md: the file is the place.
    expect(bad.filter(({ row }) => !row.includes('`GRPC_IN_PROCESS`'))).toEqual([]);
  });
});
