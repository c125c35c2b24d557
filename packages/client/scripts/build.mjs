// pnpm build (and prepack): the package as shipped. dist/esm (ES modules) and dist/cjs (CommonJS), each with its
// .d.ts and a package.json naming its module type, so Node and TypeScript read each half in its own format.
// tsc only; the two runs go side by side, and the CommonJS one skips the type check the ESM one already does.
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(join(ROOT, 'package.json')).resolve('typescript/bin/tsc');

function build(project, out, type, ...flags) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, '-p', join(ROOT, project), ...flags], { cwd: ROOT, stdio: 'inherit' });
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`tsc -p ${project} exited with ${code}`));
      writeFileSync(join(ROOT, out, 'package.json'), `${JSON.stringify({ type }, null, 2)}\n`);
      resolve();
    });
  });
}

rmSync(join(ROOT, 'dist'), { recursive: true, force: true });
Promise.all([
  build('tsconfig.build.json', 'dist/esm', 'module'),
  build('tsconfig.build.cjs.json', 'dist/cjs', 'commonjs', '--noCheck'),
]).catch((err) => {
  console.error(err.message);
  process.exit(1);
});
