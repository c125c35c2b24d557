// docs/engines.md's table of the cards service's MongoDB collections names every collection its adapters open.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../..');
const MONGO_ADAPTERS = join(ROOT, 'services/cards/src/adapters/mongo');

describe('docs/engines.md, cards service on MongoDB', () => {
  it('lists every collection the MongoDB adapters open, one table row each', () => {
    const opened = new Set<string>();
    for (const file of readdirSync(MONGO_ADAPTERS).filter((f) => f.endsWith('.ts'))) {
      for (const m of readFileSync(join(MONGO_ADAPTERS, file), 'utf8').matchAll(/\.collection(?:<[^>]*>)?\('([a-z_]+)'\)/g)) opened.add(m[1]!);
    }
    expect(opened.size).toBeGreaterThan(5);
    const docs = readFileSync(join(ROOT, 'docs/engines.md'), 'utf8');
    const section = docs.slice(docs.indexOf('## Cards service on MongoDB'), docs.indexOf('\n## ', docs.indexOf('## Cards service on MongoDB') + 1));
    const rows = new Set([...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!));
    expect([...opened].filter((name) => !rows.has(name)).sort()).toEqual([]);
  });
});
