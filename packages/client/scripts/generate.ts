// Regenerates openapi.json and src/schema.ts; with --check, exits 1 when the committed files are stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderClientArtifacts } from './render';

const ROOT = join(__dirname, '..');
const targets = { document: join(ROOT, 'openapi.json'), schema: join(ROOT, 'src/schema.ts') };

async function main() {
  const rendered = await renderClientArtifacts();
  const check = process.argv.includes('--check');
  const stale = (Object.keys(targets) as (keyof typeof targets)[]).filter((key) => {
    let current = '';
    try {
      current = readFileSync(targets[key], 'utf8');
    } catch {
      // missing counts as stale
    }
    return current !== rendered[key];
  });
  if (check) {
    if (stale.length > 0) {
      console.error(`stale: ${stale.map((k) => targets[k]).join(', ')}; run \`pnpm --filter @cards/client gen\``);
      process.exit(1);
    }
    console.log('client artifacts are current');
    return;
  }
  for (const key of stale) writeFileSync(targets[key], rendered[key]);
  console.log(stale.length ? `wrote ${stale.map((k) => targets[k]).join(', ')}` : 'already current');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
