import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '../../..');

// The committed openapi.json and src/schema.ts must be what the gateway's schemas produce today, so the
// document, the client and the server cannot drift apart unnoticed. openapi-typescript pulls in ESM-only
// dependencies that jest's module loader cannot require, so the check runs in its own process.
it('the committed openapi.json and src/schema.ts are current (run `pnpm --filter @cards/client gen` if not)', () => {
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/tsx/dist/cli.mjs'), join(ROOT, 'packages/client/scripts/generate.ts'), '--check'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(`${result.stdout}${result.stderr}`).toContain('client artifacts are current');
  expect(result.status).toBe(0);
});
