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
