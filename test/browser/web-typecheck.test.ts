import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../..');

// The root `pnpm typecheck` covers Node code; the browser code has its own tsconfig (DOM lib, Preact JSX).
it('the web app type-checks (tsc -p web/tsconfig.json)', () => {
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'web/tsconfig.json'), '--noEmit'], { encoding: 'utf8' });
  expect(result.stdout + result.stderr).toBe('');
  expect(result.status).toBe(0);
});
